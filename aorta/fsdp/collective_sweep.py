"""The built-in collective sweep: this machine's busbw ceiling per collective and message size.

Each (kind, size) runs alone and back to back through the one timing loop (``aorta.timing``): K synchronous
collectives per round between the loop's device events (the collective is issued on the process group's
stream and the caller's stream waits for it, so the round's end event follows the transfer, not the launch:
docs/hw_queue_figures.md, "Device time"). The first collective of a round absorbs the ranks' launch skew; K per round amortizes it. Every
rank's per-operation times go to every rank; the figure is the slowest rank per round (``link_ceiling.sweep_
point``). Sizes are the full buffer (gathered output, reduce-scatter input, all-reduce buffer), as nccl-tests
and the scenarios' profiler message sizes count them.

On CPU (gloo) the same code runs at tiny sizes with the host clock: host/gloo figures, never a GPU link.

The gate judges one point of the sweep (the benchmark's device time: the largest all-reduce, ``judged_point``, the
sweep's last); the others make the ceiling, reported, not judged. A gate's lean repeat run times the judged point
only (``points(..., lean=True)``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.distributed as dist

from aorta.fsdp.distributed import DistEnv
from aorta.fsdp.link_ceiling import SWEEP_KINDS, sweep_point
from aorta.timing import TimingPlan, time_rounds

# 64 KiB .. 256 MiB: the small all-reduces of comm_stress and DDP's buckets up to the FSDP blocks' all-gathers
# and reduce-scatters at full size (config/default.yaml; the profiler's message sizes in each record).
GPU_SIZES_BYTES = (1 << 16, 1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28)
CPU_SIZES_BYTES = (1 << 12, 1 << 16)
SMALL_BYTES = 1 << 20  # at or below: more collectives per round, so a round is well above the event floor


def iterations_for(message_bytes: int) -> int:
    return 20 if message_bytes <= SMALL_BYTES else 5


def _collective(kind: str):
    if kind == "all_gather":
        return getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    if kind == "reduce_scatter":
        return getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    if kind == "all_reduce":
        return lambda out, inp: dist.all_reduce(out)
    raise ValueError(f"collective kind {kind!r} is not swept; swept kinds: {SWEEP_KINDS}")


def _buffers(env: DistEnv, kind: str, message_bytes: int, dtype: torch.dtype):
    """(out, in) tensors whose full buffer is ``message_bytes`` (rounded down to a multiple of the ranks)."""
    elem = torch.finfo(dtype).bits // 8
    n = env.world_size
    full = max(n, (message_bytes // elem) // n * n)
    dev = env.device.torch_device
    big = torch.ones(full, dtype=dtype, device=dev)  # (S,)
    small = torch.ones(full // n, dtype=dtype, device=dev)  # (S/n,)
    if kind == "all_gather":
        return big, small
    if kind == "reduce_scatter":
        return small, big
    return big, big


def measure_point(env: DistEnv, kind: str, message_bytes: int, *, warmup: int, rounds: int) -> dict:
    """One (kind, size) on every rank; every rank returns the same ``sweep_point``."""
    dtype = torch.bfloat16 if env.device.is_gpu else torch.float32
    out, inp = _buffers(env, kind, message_bytes, dtype)
    op = _collective(kind)

    def step(_rec) -> None:
        op(out, inp)  # synchronous: the caller's stream waits for the transfer on the group's stream

    plan = TimingPlan(warmup_rounds=warmup, rounds=rounds, iterations_per_round=iterations_for(message_bytes))
    env.exchange(f"sweep/{kind}/{message_bytes}/ready", True)  # every rank starts this size together
    run = time_rounds(env.device, [], step, plan, record_intervals=False)
    mine = run.per_iteration_ms
    everyone = env.exchange(f"sweep/{kind}/{message_bytes}/ms", mine)
    actual = (
        out.numel() * out.element_size() if kind != "reduce_scatter" else inp.numel() * inp.element_size()
    )
    return sweep_point(kind, actual, everyone)


JUDGED_KIND = "all_reduce"


def judged_point(sizes_bytes: Sequence[int]) -> tuple[str, int]:
    """The (kind, size) whose time per operation is the benchmark's device time, the figure the gate judges."""
    return JUDGED_KIND, max(sizes_bytes)


def points(sizes_bytes: Sequence[int], *, kinds=SWEEP_KINDS, lean: bool = False) -> list[tuple[str, int]]:
    """The (kind, size) pairs to time, in order: every kind at every size, the judged point last; ``lean``: the
    judged point alone."""
    if JUDGED_KIND not in kinds:
        raise ValueError(
            f"the sweep's kinds must include {JUDGED_KIND!r} (its judged point), got {tuple(kinds)}"
        )
    judged = judged_point(sizes_bytes)
    if lean:
        return [judged]
    return [(k, s) for k in kinds for s in sorted(sizes_bytes) if (k, s) != judged] + [judged]


def run_sweep(
    env: DistEnv, pairs: Sequence[tuple[str, int]], *, warmup: int = 2, rounds: int = 5
) -> list[dict]:
    """Each (kind, size) of ``pairs`` (``points``) on every rank, in order."""
    if env.world_size < 2:
        raise ValueError("the collective sweep needs two or more ranks (a one-rank group moves no data)")
    out = [measure_point(env, k, s, warmup=warmup, rounds=rounds) for k, s in pairs]
    env.device.free_memory()
    return out
