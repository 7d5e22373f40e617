"""Proof that the overlap figure is right: any number of ranks >= 2, a known answer.

overlapped: one long GEMM is queued, eight all-gathers are issued asynchronously, then nine more GEMMs;
NCCL's stream waits for the work queued before each collective (the first GEMM), so the all-gathers (64 MiB
gathered each at any world size: about 2-3 ms in all on NVLink at two ranks) run under the other nine GEMMs
(about 13 ms), and the overlap ratio must be near 1. Issued before any GEMM, they began while the host was
still issuing the rest and ran alone for a quarter of their time on 2x H100 (ratio 0.75-0.78).
serialized: the same all-gathers run synchronously (the compute stream waits for each) before the same
GEMMs, so nothing hides: the ratio must be near 0.

Both ratios come from torch.profiler device kernel timestamps through aorta.fsdp.trace_analysis, the path
every FSDP scenario's figures take. CPU runs skip: gloo on CPU gives no kernel timestamps.
"""

import pytest
import torch
import torch.distributed as dist

from aorta.fsdp import trace_analysis as ta
from aorta.fsdp.config import ProfilingConfig
from aorta.fsdp.figures import slowest_per_round
from aorta.record import BenchRecord
from aorta.record.metric import Metric
from aorta.stats import median
from aorta.timing import TimingPlan, time_rounds

# a known answer, not a sample: a gate's lean repeat runs leave it out
pytestmark = [pytest.mark.fsdp, pytest.mark.gpu, pytest.mark.check_run_only]

GEMM_N = 8192  # bf16 8192^3: ~1.4-1.6 ms each on H100/H200 (docs/reference_floors.md)
GEMMS = 10
ALL_GATHERS = 8
GATHERED_NUMEL = 32 * 1024 * 1024  # bf16: 64 MiB gathered at every world size


def shard_numel(world_size: int) -> int:
    """Elements of one rank's shard: the gathered buffer stays 64 MiB as ranks are added, so the
    all-gathers (ring: (n-1)/n of it crosses each link) stay well under the GEMMs' time at 2, 4 or 8 ranks."""
    if world_size < 2:
        raise ValueError(f"the known-answer test needs at least two ranks, got {world_size}")
    return GATHERED_NUMEL // world_size


OVERLAPPED_MIN_RATIO = 0.8
SERIALIZED_MAX_RATIO = 0.2


class KnownAnswer:
    def __init__(self, device, world_size: int):
        dev = device.torch_device
        gen = torch.Generator(device=dev)
        gen.manual_seed(0)
        self.a = torch.randn(GEMM_N, GEMM_N, generator=gen, device=dev).to(torch.bfloat16)  # (N, N)
        self.b = (torch.randn(GEMM_N, GEMM_N, generator=gen, device=dev) * GEMM_N**-0.5).to(torch.bfloat16)
        self.c = torch.empty_like(self.a)
        n = shard_numel(world_size)
        self.shard = torch.randn(n, generator=gen, device=dev).to(torch.bfloat16)  # (S,)
        self.gathered = [self.shard.new_empty(world_size * n) for _ in range(ALL_GATHERS)]  # (W*S,)

    def gemms(self) -> None:
        for _ in range(GEMMS):
            torch.mm(self.a, self.b, out=self.c)

    def overlapped(self, _rec=None) -> None:
        torch.mm(self.a, self.b, out=self.c)  # the collectives below wait for it: the GEMMs are queued first
        works = [dist.all_gather_into_tensor(out, self.shard, async_op=True) for out in self.gathered]
        for _ in range(GEMMS - 1):  # run on the compute stream while NCCL's stream moves the data
            torch.mm(self.a, self.b, out=self.c)
        for w in works:
            w.wait()  # the compute stream waits for the collectives before the step ends

    def serialized(self, _rec=None) -> None:
        for out in self.gathered:
            dist.all_gather_into_tensor(out, self.shard)  # synchronous: the compute stream waits for each
        self.gemms()


def _measure(device, step, name: str, env, profiler) -> dict:
    run = time_rounds(
        device,
        [],
        step,
        TimingPlan(warmup_rounds=2, rounds=5, iterations_per_round=1),
        record_intervals=False,
    )
    env.exchange(f"known_answer/{name}/ready", True)  # both ranks enter the profiled window together
    window = profiler(step, f"known_answer_{name}", ProfilingConfig(wait=0, warmup=1, active=3))
    if not window.available:
        pytest.fail(f"{name}: {window.reason}", pytrace=False)
    s = ta.analyze(window.kernels, steps=window.steps, n_ranks=env.world_size)
    return {
        "step_ms": run.device_ms,
        "overlap_ratio": s.overlap_ratio,
        "comm_busy_ms": s.comm_busy_ms_per_step,
        "compute_busy_ms": s.compute_busy_ms_per_step,
        "exposed_comm_ms": s.exposed_comm_ms_per_step,
        "all_gather_busbw_gbps": s.busbw_gbps["all_gather"],
        "kernels": s.kernel_count_by_kind,
        "trace_file": window.trace_file,
    }


def test_overlap_known_answer(dist_env, fsdp_record, fsdp_profiler):
    env = dist_env
    if not env.device.is_gpu:
        pytest.skip("CPU backend (gloo): no device kernel timestamps, so no overlap to check")
    if env.world_size < 2:
        pytest.skip(f"needs two or more ranks (torchrun --nproc_per_node N, N >= 2), got {env.world_size}")
    work = KnownAnswer(env.device, env.world_size)
    mine = {
        "rank": env.rank,
        "overlapped": _measure(env.device, work.overlapped, "overlapped", env, fsdp_profiler),
        "serialized": _measure(env.device, work.serialized, "serialized", env, fsdp_profiler),
    }
    everyone = env.exchange("known_answer/result", mine)
    ratios = {mode: mine[mode]["overlap_ratio"] for mode in ("overlapped", "serialized")}
    metrics = [
        Metric(f"{mode}_overlap_ratio", r, "ratio", mode == "overlapped")
        for mode, r in ratios.items()
        if r is not None
    ]
    unavailable = {
        f"{mode}_overlap_ratio": "no communication kernels in the profiled window"
        for mode, r in ratios.items()
        if r is None
    }
    # Contention (docs/reference_floors.md): overlap is not free; kernels beside each other run longer than alone.
    for kind in ("comm", "compute"):
        alone = mine["serialized"][f"{kind}_busy_ms"]
        if alone > 0:
            metrics.append(
                Metric(
                    f"{kind}_contention_slowdown_ratio",
                    mine["overlapped"][f"{kind}_busy_ms"] / alone,
                    "ratio",
                    False,
                )
            )
    step_ms = slowest_per_round(
        [r["overlapped"]["step_ms"] for r in everyone]
    )  # slowest rank, round by round
    metrics.append(Metric("step_ms", median(step_ms), "ms", False, tuple(step_ms)))
    backend = env.device.backend
    record = BenchRecord(
        workload="fsdp_known_answer",
        backend=backend,
        timing_method="events",
        clock="device_events",
        device_ms_per_iteration=step_ms,
        headline_metric="overlapped_overlap_ratio",
        unavailable=unavailable,
        details={"category": "training", "world_size": env.world_size, "per_rank": everyone},
    )
    fsdp_record(step_ms, record.add(*metrics), group="fsdp_known_answer")
    assert ratios["overlapped"] is not None and ratios["overlapped"] >= OVERLAPPED_MIN_RATIO, (
        f"all-gathers issued before the GEMMs should hide behind them: ratio {ratios['overlapped']}"
    )
    assert ratios["serialized"] is not None and ratios["serialized"] <= SERIALIZED_MAX_RATIO, (
        f"synchronous all-gathers before the GEMMs cannot hide: ratio {ratios['serialized']}"
    )
