"""Every rank's measurements -> the benchmark's metrics and extra_info (pure: no torch).

Step time is the slowest rank's, round by round (a data-parallel step ends when its last rank does);
every rank's own times are kept in the record's ``per_rank``. Kernel-timestamp figures come from
``aorta.fsdp.rank_figures``: one sample per profiled step, the worst rank's, named ``*_worst_rank``; where a
figure cannot be measured it is listed in the record's ``unavailable`` with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aorta import stats
from aorta.fsdp.rank_figures import kernel_figures
from aorta.fsdp.rank_result import RankResult
from aorta.fsdp.rank_telemetry import worst_rank_telemetry
from aorta.fsdp.straggler_evidence import rank_evidence
from aorta.record import BenchRecord
from aorta.record.bench import HOST_CLOCK
from aorta.record.metric import Metric
from aorta.record.rank_breakdown import worst_per_step
from aorta.timeline.overlap import idle_ms

RANK0 = "rank 0, over its whole profiled window (how to read the figures): reported, not judged"
# When to say how a step's overlap figures should be read (reading_notes). Measured on 2xH200 at the old
# default batch of 8: the host took 70.4 ms to enqueue a 70.0 ms step, the GPU idled 65% of the profiled
# window, and the profiled steps took 100.7 ms against 70.0 ms timed; at batch 32: 72 of 92 ms, 6%, 105 vs 92.
HOST_BOUND_ENQUEUE_SHARE = 0.9
IDLE_SHARE_NOTE = 0.3
PROFILER_SLOWDOWN_NOTE = 0.25


def slowest_per_round(per_rank_ms: Sequence[Sequence[float]]) -> list[float]:
    """Round i's time = the slowest rank's round i. Every rank must have timed the same rounds."""
    counts = {len(r) for r in per_rank_ms}
    if len(counts) != 1:
        raise ValueError(f"ranks timed different numbers of rounds: {sorted(counts)}")
    return worst_per_step(per_rank_ms, higher_is_better=False)


def _metric(name: str, samples: Sequence[float], unit: str, higher: bool) -> Metric:
    return Metric(name, stats.median(samples), unit, higher, tuple(samples))


def build_result(
    scenario: Mapping,
    ranks: Sequence[RankResult],
    *,
    world_size: int,
    seq_len: int,
    backend: str,
    comm_library: str,
    config: Mapping,
) -> tuple[list[float], BenchRecord]:
    """(slowest rank's ms per round, the benchmark's record) from every rank's result (measure.run_rank)."""
    ranks = sorted(ranks, key=lambda r: r.rank)
    step_ms = slowest_per_round([r.step_ms for r in ranks])
    samples_per_step = sum(r.samples_per_step for r in ranks)  # global batch per optimizer step
    sps = [samples_per_step / (ms / 1e3) for ms in step_ms]
    metrics = [
        _metric("step_ms", step_ms, "ms", False),
        _metric("samples_per_s", sps, "samples/s", True),
        _metric("tokens_per_s", [s * seq_len for s in sps], "tokens/s", True),
    ]
    unavailable: dict[str, str] = {}
    peaks = [r.peak_memory_bytes for r in ranks if r.peak_memory_bytes is not None]
    if peaks:
        metrics.append(
            Metric(
                "peak_memory_bytes",
                float(max(peaks)),
                "bytes",
                False,
                source="highest rank, one value per run: judged as the run's figure against the between-run noise",
            )
        )
    else:
        unavailable["peak_memory_bytes"] = "CPU backend: no device memory statistics"

    lead = ranks[0]
    kernel_metrics, kernel_unavailable, kernel_details = kernel_figures(ranks)
    metrics += kernel_metrics
    unavailable.update(kernel_unavailable)
    ov = lead.overlap
    if ov is not None and ov["window_ms"] > 0:  # rank 0's whole window: how to read the figures (notes)
        idle = ov.get("idle_ms")  # copies and memsets are device work, not idle (issue 37)
        if idle is None:
            idle = idle_ms(ov["window_ms"], ov["compute_busy_ms"], ov["comm_busy_ms"], ov["overlapped_ms"])
        metrics += [
            Metric(
                "gpu_idle_share_rank0", idle / ov["window_ms"], "ratio", False, source=RANK0, judged=False
            ),
            Metric(
                "profiled_step_ms_rank0",
                ov["window_ms"] / ov["steps"],
                "ms",
                False,
                source=RANK0,
                judged=False,
            ),
        ]
    slowdowns = [r.compute_slowdown_ratio for r in ranks]
    if all(v is not None for v in slowdowns):
        metrics.append(
            Metric(
                "compute_slowdown_ratio_worst_rank",
                max(float(v) for v in slowdowns if v is not None),
                "ratio",
                False,
                source="one value per run (a compute-only reference): judged as the run's figure against the between-run noise",
            )
        )
    else:
        unavailable["compute_slowdown_ratio_worst_rank"] = (
            lead.slowdown_reason or "no compute-only reference on every rank"
        )

    details_extra = _ballast_details(lead.comm_ballast, unavailable)
    if lead.lean_run:  # a gate's lean repeat run (aorta.gate.baselines.baseline.is_lean reads the key)
        details_extra["lean_run"] = lead.lean_run
    # rank 0's host seconds per phase (aorta/record/host_phases.py); every rank's are in per_rank
    if lead.host_phase_s:
        details_extra["host_phase_s"] = dict(lead.host_phase_s)
    telemetry, no_telemetry = worst_rank_telemetry(ranks)
    if telemetry is not None:
        details_extra["telemetry"] = telemetry
    else:
        unavailable["telemetry"] = str(no_telemetry)
    record = BenchRecord(
        workload=f"fsdp_{scenario['id']}",
        backend=backend,
        timing_method="events",
        clock="device_events" if backend != "cpu" else HOST_CLOCK,
        device_ms_per_iteration=step_ms,
        headline_metric="step_ms",
        unavailable=unavailable,
        # On the CPU backend every op runs as it is issued: "host-bound" would be true and say nothing.
        reading_notes=(
            reading_notes({m.name.removesuffix("_rank0"): m.value for m in metrics}, lead.host_enqueue_ms)
            if backend != "cpu"
            else []
        ),
        details={
            "category": "training",
            "scenario": dict(scenario),
            "comm_library": comm_library,
            "world_size": world_size,
            "step_ms_is": "slowest rank per round",
            "samples_per_step": samples_per_step,
            "tokens_per_step": samples_per_step * seq_len,
            **details_extra,
            **kernel_details,
            "rank_evidence": rank_evidence(kernel_details.get("per_rank_steps") or {}, ranks),
            "stream_busy_ms": lead.stream_busy_ms,  # rank 0, per device stream, over the profiled window
            "streams_with_work": len(lead.stream_busy_ms) if lead.stream_busy_ms else None,
            "kernel_summary": lead.kernel_summary,  # rank 0's kernels per step (aorta/timeline/kernel_summary.py)
            "per_rank": [r.record_dict() for r in ranks],
            "config": dict(config),
        },
    ).add(*metrics)
    return step_ms, record


def reading_notes(values: Mapping[str, float | None], host_enqueue_ms: Sequence[float]) -> list[str]:
    """How to read a scenario's overlap figures, from its own measurements: a GPU that idles for much of
    the profiled window (host-bound when the host also took the whole step to enqueue it; a step that
    blocks on a device-to-host copy also enqueues for the whole step, but its GPU is busy), or a profiler
    that slowed the steps it recorded."""
    notes = []
    step = values.get("step_ms")
    enqueue = stats.median(host_enqueue_ms) if host_enqueue_ms else None
    idle_share = values.get("gpu_idle_share")
    if idle_share is not None and idle_share >= IDLE_SHARE_NOTE:
        if step and enqueue is not None and enqueue >= HOST_BOUND_ENQUEUE_SHARE * step:
            notes.append(
                f"host-bound: rank 0 took {enqueue:.1f} ms to enqueue a {step:.1f} ms step and the GPU "
                f"ran no kernel for {idle_share:.0%} of the profiled window; a larger batch or model "
                "(--aorta-override) moves the bound to the GPU"
            )
        else:
            notes.append(f"the GPU ran no kernel for {idle_share:.0%} of the profiled window")
        notes[-1] += (
            ": communication there had the GPU to itself, so the overlap ratio says little about "
            "how well it is hidden"
        )
    profiled = values.get("profiled_step_ms")
    if step and profiled and profiled / step - 1.0 >= PROFILER_SLOWDOWN_NOTE:
        notes.append(
            f"profiled steps took {profiled:.1f} ms against {step:.1f} ms timed "
            f"({profiled / step - 1.0:+.0%}): the profiler's host cost slowed them, and the "
            "kernel-timestamp figures describe the slower steps"
        )
    return notes


def _ballast_details(info: Mapping | None, unavailable: dict) -> dict:
    """A run with communication ballast (``--aorta-test-comm-ballast``) is marked as a deliberate slowdown,
    as ``--aorta-test-slowdown`` marks its own, so the gate says so and no baseline takes it; where the
    scenario cannot carry it (DDP), the record says why and nothing is marked."""
    if not info:
        return {}
    if "unavailable" in info:
        unavailable["test_comm_ballast"] = info["unavailable"]
        return {}
    return {"test_slowdown": info["ratio"], "test_slowdown_info": dict(info)}
