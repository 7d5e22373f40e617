"""One scenario's training set-up and step: the model wrapped with FSDP2 (``fully_shard`` on each block
and the root) or DDP, an AdamW optimizer with linear LR warm-up, and the seeded on-device batches.

``Trainer.step`` enqueues one optimizer step (several micro-batches in ``grad_accum``) and keeps loss,
grad norm and LR as device tensors / floats; nothing in it synchronizes with the host except what the
scenario itself asks for (the device->host copy of ``comm_stress``).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from aorta.fsdp import ballast
from aorta.fsdp.config import FsdpSuiteConfig
from aorta.fsdp.distributed import DistEnv
from aorta.fsdp.model import RankingTransformer, build_model, loss_fn, make_batches
from aorta.fsdp.scenarios import Scenario

if TYPE_CHECKING:
    from torch.distributed.fsdp import FSDPModule

TORCH_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


class ScenarioUnavailable(RuntimeError):
    """The scenario cannot run here (the reason is the message); the test skips with it."""


class CheckFailed(AssertionError):
    """The wrapped model disagrees with the unsharded reference: nothing is timed or saved."""


def compile_skip_reason(cfg: FsdpSuiteConfig, env: DistEnv) -> str | None:
    if not cfg.compile.enabled:
        return "compile.enabled is false in the configuration"
    try:
        import torch._dynamo as dynamo
    except ImportError as exc:  # pragma: no cover
        return f"torch._dynamo cannot be imported: {exc}"
    if not dynamo.is_dynamo_supported():
        return "torch.compile is not supported on this Python / torch build"
    if not env.device.is_gpu:
        if not cfg.compile.allow_cpu:
            return (
                "torch.compile on CPU needs a C++ toolchain and minutes of compilation; "
                "set --aorta-override compile.allow_cpu=true to run it"
            )
        return None
    from torch.utils._triton import has_triton

    if not has_triton():
        return "torch.compile needs Triton for GPU kernels and Triton is not installed"
    return None


@dataclass
class StepLog:
    step: int
    loss: torch.Tensor  # () on the device; read after timing
    grad_norm: torch.Tensor
    lr: float
    micro_batches: int


class Trainer:
    def __init__(self, scenario: Scenario, cfg: FsdpSuiteConfig, env: DistEnv):
        self.scenario = scenario
        self.cfg = cfg
        self.env = env
        self.dev = env.device.torch_device
        self.compute_dtype = torch.float32 if scenario.fp32 else TORCH_DTYPES[cfg.fsdp.param_dtype]
        self.micro_batches = cfg.training.grad_accum_steps if scenario.grad_accum else 1
        self.log: list[StepLog] = []
        self.ballast_info: dict | None = (
            None  # --aorta-test-comm-ballast: what was added (aorta/fsdp/ballast.py)
        )
        self._step = 0
        self._micro = 0

    # ----------------------------------------------------------------- set-up
    def setup(self) -> None:
        if self.scenario.compile:
            reason = compile_skip_reason(self.cfg, self.env)
            if reason:
                raise ScenarioUnavailable(reason)
        m, d, t = self.cfg.model, self.cfg.dataset, self.cfg.training
        model = build_model(m, d.seq_len, d.seed, self.dev)
        self.batches = make_batches(m, d, self.env.rank, self.dev)
        if self.scenario.compile:
            self._compile_blocks(model)
        self.model = self._wrap(model)
        if self.scenario.comm_stress:
            self._install_stress(model)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=t.lr, weight_decay=t.weight_decay)
        warm = t.lr_warmup_steps
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: min(1.0, (s + 1) / warm) if warm else 1.0
        )

    def _compile_blocks(self, model: RankingTransformer) -> None:
        """Each block becomes ``torch.compile(block)``; FSDP2 then shards the compiled wrapper, so its hooks
        run eagerly around the compiled region (the torchtitan order: compile, then fully_shard)."""
        c = self.cfg.compile
        for i, block in enumerate(model.blocks):
            # torch.compile of a module returns an OptimizedModule (an nn.Module); its stub says a callable.
            model.blocks[i] = torch.compile(block, mode=c.mode, fullgraph=c.fullgraph)  # type: ignore[assignment]

    def _wrap(self, model: RankingTransformer) -> nn.Module:
        s = self.scenario
        ratio = self.cfg.fsdp.test_comm_ballast
        if s.wrapper == "ddp":
            if ratio > 0:
                self.ballast_info = {"unavailable": ballast.DDP_REASON}
            ids = [self.env.device.index] if self.env.device.is_gpu else None
            return DDP(model, device_ids=ids, bucket_cap_mb=self.cfg.fsdp.ddp_bucket_cap_mb)
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        if s.fp32:
            mp = MixedPrecisionPolicy()
        else:
            mp = MixedPrecisionPolicy(
                param_dtype=TORCH_DTYPES[self.cfg.fsdp.param_dtype],
                reduce_dtype=TORCH_DTYPES[self.cfg.fsdp.reduce_dtype],
            )
        added = None
        if ratio > 0:  # before sharding: FSDP then shards and all-gathers it with each block's parameters
            added = ballast.add_ballast(model.blocks, ratio)
        for block in model.blocks:
            fully_shard(block, mp_policy=mp, reshard_after_forward=s.reshard_after_forward)
        fully_shard(model, mp_policy=mp, reshard_after_forward=s.reshard_after_forward)
        if added is not None:
            self.ballast_info = {**added, "all_gathered": ballast.ballast_is_sharded(model.blocks)}
        if s.explicit_prefetch:
            blocks = [cast("FSDPModule", b) for b in model.blocks]  # sharded in place above
            k = self.cfg.fsdp.prefetch_blocks
            for i, sharded in enumerate(blocks):
                sharded.set_modules_to_forward_prefetch(blocks[i + 1 : i + 1 + k])
                sharded.set_modules_to_backward_prefetch(list(reversed(blocks[max(0, i - k) : i])))
        return model

    def _install_stress(self, inner: RankingTransformer) -> None:
        """Per block, one blocking all-reduce after its forward; per step, a device->host copy: the
        metric-logging pattern that makes the compute stream wait for communication and the host.
        ``inner`` is the model inside the wrapper (DDP's ``.module``; FSDP2 shards it in place)."""
        fs = self.cfg.fsdp
        self._stress_buf = torch.ones(fs.stress_all_reduce_numel, device=self.dev)
        self._stress_src = torch.ones(fs.stress_copy_numel, device=self.dev)
        self._stress_host = torch.empty(fs.stress_copy_numel)  # pageable: the copy blocks the host

        def hook(_module, _inputs, _output):
            dist.all_reduce(self._stress_buf)  # synchronous: the current stream waits for it

        for block in inner.blocks:
            block.register_forward_hook(hook)

    # ----------------------------------------------------------------- check
    def check_first_step(self) -> dict:
        """Run the first training step and check its loss against an unsharded fp32 replica (same seed, same
        micro-batches): the wrapped model must compute the same loss before anything is timed."""
        m, d = self.cfg.model, self.cfg.dataset
        replica = build_model(m, d.seq_len, d.seed, self.dev)
        with torch.no_grad():
            ref = sum(
                loss_fn(replica(b.sparse_ids, b.dense), b.labels)
                for b in (self.batches[i % len(self.batches)] for i in range(self.micro_batches))
            )
            ref_v = float(ref) / self.micro_batches  # host read: the check's reference value
        del replica
        self.step()
        got_v, norm_v = float(self.log[0].loss), float(self.log[0].grad_norm)  # host read: the check's values
        rtol = self.cfg.training.check_rtol if self.compute_dtype != torch.float32 else 1e-3
        if not math.isfinite(got_v) or abs(got_v - ref_v) > rtol * abs(ref_v) + 1e-6:
            raise CheckFailed(
                f"{self.scenario.id}: first-step loss {got_v:.6g} differs from the unsharded fp32 "
                f"reference {ref_v:.6g} (rtol {rtol}) on rank {self.env.rank}"
            )
        if not math.isfinite(norm_v):
            raise CheckFailed(
                f"{self.scenario.id}: first-step gradient norm is {norm_v} on rank {self.env.rank}"
            )
        return {"loss": got_v, "reference_loss": ref_v, "rtol": rtol, "grad_norm": norm_v}

    def _autocast(self):
        """DDP keeps fp32 parameters: compute in the scenario's dtype through autocast (FSDP2 casts itself)."""
        if self.scenario.wrapper == "ddp" and self.compute_dtype != torch.float32:
            return torch.autocast(self.dev.type, dtype=self.compute_dtype)
        return contextlib.nullcontext()

    # ----------------------------------------------------------------- step
    def _no_sync(self, last: bool):
        if self.micro_batches == 1:
            return contextlib.nullcontext()
        if self.scenario.wrapper == "ddp":
            return contextlib.nullcontext() if last else cast(DDP, self.model).no_sync()
        cast("FSDPModule", self.model).set_requires_gradient_sync(
            last
        )  # FSDP2: reduce-scatter only on the last micro-batch
        return contextlib.nullcontext()

    def step(self, _rec=None) -> None:
        total = torch.zeros((), device=self.dev)
        for i in range(self.micro_batches):
            b = self.batches[self._micro % len(self.batches)]
            self._micro += 1
            with self._no_sync(i == self.micro_batches - 1):
                with self._autocast():
                    logits = self.model(b.sparse_ids, b.dense)
                loss = loss_fn(logits, b.labels) / self.micro_batches
                loss.backward()
            total += loss.detach()
        clip = self.cfg.training.grad_clip or float("inf")
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip)
        if hasattr(norm, "full_tensor"):  # FSDP2 grads are DTensors: the norm is too
            norm = norm.full_tensor()
        lr = float(self.scheduler.get_last_lr()[0])
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.scenario.comm_stress:
            self._stress_host.copy_(self._stress_src)  # device->host, blocking: the pattern under test
        self.log.append(StepLog(self._step, total, norm.detach(), lr, self.micro_batches))
        self._step += 1

    # ----------------------------------------------------------------- compute-only reference
    def reference_step_fn(self):
        """An unsharded replica in the scenario's compute dtype: forward + backward with no communication,
        the compute-only reference of the slowdown figure. Returns (step, release)."""
        m, d = self.cfg.model, self.cfg.dataset
        replica = build_model(m, d.seq_len, d.seed, self.dev).to(self.compute_dtype)
        state = {"i": 0}

        def step(_rec=None):
            for _ in range(self.micro_batches):
                b = self.batches[state["i"] % len(self.batches)]
                state["i"] += 1
                loss_fn(replica(b.sparse_ids, b.dense.to(self.compute_dtype)), b.labels).backward()
            replica.zero_grad(set_to_none=True)

        def release():
            nonlocal replica
            replica = None

        return step, release

    def samples_per_step(self) -> int:
        """This rank's samples per optimizer step."""
        return self.cfg.dataset.batch_size * self.micro_batches
