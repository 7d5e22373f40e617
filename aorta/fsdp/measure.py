"""One scenario on this rank: set up -> check against the unsharded model -> time steps through the one
timing loop -> profile a window of steps -> compute-only reference -> this rank's result and JSONL lines.

Each step's host seconds go into the result's ``host_phase_s`` (aorta/record/host_phases.py names their kinds).
In a gate's lean repeat run (``lean``) the first step is not checked against the unsharded model (the gate's check
run did that, ``LEAN_RUN``): it runs as the first warm-up step all the same, so every later step, timed, profiled
or reference, is the same step as in a full run. On CPU a lean run profiles no steps: they would give no figure
(``NO_KERNELS_ON_CPU``)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

from aorta.fsdp import trace_analysis as ta
from aorta.fsdp.config import FsdpSuiteConfig
from aorta.fsdp.distributed import DistEnv
from aorta.fsdp.profiled_steps import step_figures
from aorta.fsdp.profiling import NO_KERNELS_ON_CPU, profile_steps, trace_enabled
from aorta.fsdp.rank_host import rank_host
from aorta.fsdp.rank_result import RankResult
from aorta.fsdp.scenarios import Scenario
from aorta.fsdp.training import Trainer
from aorta.record.host_phases import HostPhases
from aorta.timeline import kernel_summary
from aorta.timing import TimedRun, TimingPlan, time_rounds

# Why a lean run's scenario has no first-step check (the record's ``lean_run``; aorta.gate.baselines reads it).
LEAN_RUN = (
    "a gate's repeat run: the first step was checked against the unsharded model in the gate's full run of this "
    "command; this run's first step is an unchecked warm-up step, and the timed, profiled and reference steps "
    "are as in a full run"
)


def run_rank(
    scenario: Scenario,
    cfg: FsdpSuiteConfig,
    env: DistEnv,
    artifacts_dir: Path,
    observe: Callable[[TimedRun], dict] | None = None,
    *,
    lean: bool = False,
) -> tuple[RankResult, list[dict]]:
    """``observe`` (optional): called with the timed steps, returns this rank's telemetry summary; ``lean``: a
    gate's repeat run (``LEAN_RUN``)."""
    trainer = Trainer(scenario, cfg, env)
    try:
        return _run(trainer, scenario, cfg, env, artifacts_dir, observe, lean)
    finally:
        # FSDP's hooks keep model, optimizer and buffers in reference cycles: free them before the next
        # scenario allocates its own.
        del trainer
        gc.collect()
        env.device.free_memory()


def _run(
    trainer: Trainer,
    scenario: Scenario,
    cfg: FsdpSuiteConfig,
    env: DistEnv,
    artifacts_dir: Path,
    observe: Callable[[TimedRun], dict] | None,
    lean: bool,
) -> tuple[RankResult, list[dict]]:
    device = env.device
    phases = HostPhases()
    trainer.setup()  # ScenarioUnavailable propagates: the test skips with its reason
    phases.done("setup")
    check: dict | None
    if lean:
        trainer.step()
        check = None
        phases.done("first_step")
    else:
        check = trainer.check_first_step()  # CheckFailed propagates: nothing is timed
        phases.done("check")

    t = cfg.training
    # The checked first step is the first warm-up step.
    warmup = max(0, t.warmup_steps - 1)
    plan = TimingPlan(warmup_rounds=warmup, rounds=t.steps, sync_mode="per_round", iterations_per_round=1)
    device.synchronize()  # the check's work must not be counted in the first timed step
    device.reset_peak_memory()
    run = time_rounds(device, [], trainer.step, plan, record_intervals=False)
    step_ms = run.device_ms
    peak = device.peak_memory_bytes()
    phases.done("timed_steps")
    telemetry = observe(run) if observe is not None else None  # the GPU while the timed steps ran
    phases.done("telemetry")

    overlap_figs, overlap_reason, window = None, None, None
    per_step: list[dict] | None = None
    per_step_reason: str | None = None
    per_step_note: str | None = None  # kernels or steps the per-step figures leave out, and how many
    timeline: dict | None = None
    slowdown, slowdown_reason = None, None
    segments: dict = {}
    kernels: dict | None = None
    if not cfg.profiling.enabled:
        overlap_reason = "profiling.enabled is false"
    elif lean and not device.is_gpu:  # its profiled steps would give no figure: no device kernels on CPU
        overlap_reason = slowdown_reason = NO_KERNELS_ON_CPU
    else:
        on, note = trace_enabled(cfg.profiling, device.backend)
        trace_path = artifacts_dir / "torch_profiler" / f"rank{env.rank}" / f"{scenario.id}.pt.trace.json"
        window = profile_steps(
            trainer.step, device, cfg.profiling, trace_path=trace_path if on else None, trace_note=note
        )
        phases.done("profiled_steps")
        if window.available:
            summary = ta.analyze(window.kernels, steps=window.steps, n_ranks=env.world_size)
            overlap_figs = summary.as_dict()
            per_step, timeline, per_step_reason, per_step_note = step_figures(
                window.kernels,
                window.step_ranges,
                window.steps,
                env.world_size,
                missing_launches_us=window.missing_launches_us,
                gpu_ranges=window.gpu_step_ranges,
            )
            segments = ta.timeline_segments(window.kernels)
            # kernels only, as before copies and memsets were read (issue 37): saved kernel summaries stay comparable
            only_kernels = [k for k in window.kernels if k.category == "kernel"]
            segments["stream_busy_ms"] = ta.stream_busy_ms(only_kernels)
            kernels = kernel_summary.summarize_launches(  # which kernels ran: the gate's kernel diff reads it
                only_kernels, max(window.steps, 1)
            )
        else:
            overlap_reason = window.reason
        phases.done("trace_analysis")
        ref_path = trace_path.with_name(f"{scenario.id}_compute_reference.pt.trace.json") if on else None
        slowdown, slowdown_reason = _reference_slowdown(trainer, cfg, device, window, ref_path)
        phases.done("reference_pass")

    records = _step_records(trainer, scenario, env, 1 + warmup, step_ms, checked=check is not None)
    records.append(
        {
            "kind": "overlap",
            "scenario": scenario.id,
            "rank": env.rank,
            "steps": window.steps if window else 0,
            "available": overlap_figs is not None,
            "reason": overlap_reason,
            "trace_file": window.trace_file if window else None,
            "figures": overlap_figs,
            "per_step": per_step,
            "per_step_note": per_step_note,
            **{k: v for k, v in segments.items()},
        }
    )
    result = RankResult(
        rank=env.rank,
        device_index=device.index,
        step_ms=step_ms,
        peak_memory_bytes=peak,
        samples_per_step=trainer.samples_per_step(),
        check=check,
        overlap=overlap_figs,
        overlap_reason=overlap_reason,
        per_step=per_step,
        per_step_reason=per_step_reason,
        per_step_note=per_step_note,
        timeline=timeline,
        compute_slowdown_ratio=slowdown,
        slowdown_reason=slowdown_reason,
        stream_busy_ms=segments.get("stream_busy_ms"),
        kernel_summary=kernels,
        trace_file=window.trace_file if window else None,
        trace_note=window.trace_note if window else None,
        host_enqueue_ms=[r.host_enqueue_ms for r in run.rounds],
        comm_ballast=trainer.ballast_info,
        host=rank_host(device.pci_bus_id()),
        warnings=list(env.warnings),
        telemetry=telemetry,
        lean_run=LEAN_RUN if lean else None,
    )
    records.append(
        {
            "kind": "scenario",
            "scenario": scenario.id,
            "rank": env.rank,
            "world_size": env.world_size,
            "outcome": "measured",
            "step_ms": step_ms,
            "peak_memory_bytes": peak,
            "scenario_fields": asdict(scenario),
        }
    )
    phases.done("records")
    return replace(result, host_phase_s=phases.seconds), records


def _reference_slowdown(
    trainer: Trainer, cfg: FsdpSuiteConfig, device, window, trace_path: Path | None
) -> tuple[float | None, str | None]:
    if not device.is_gpu:
        return None, NO_KERNELS_ON_CPU
    if not cfg.profiling.reference:
        return None, "profiling.reference is false"
    if trainer.scenario.compile:
        return None, (
            "compile: an eager reference has other kernel names and a compiled one would need its own "
            "compilation; not measured"
        )
    if window is None or not window.available:
        return None, "no kernels from the scenario's profiled window"
    step, release = trainer.reference_step_fn()
    try:
        ref = profile_steps(step, device, cfg.profiling, trace_path=trace_path)
    finally:
        release()
        device.free_memory()
    if not ref.available:
        return None, f"compute-only reference: {ref.reason}"
    return ta.compute_slowdown(window.kernels, ref.kernels)


def _step_records(
    trainer: Trainer, scenario: Scenario, env: DistEnv, warmup: int, step_ms: list[float], *, checked: bool
) -> list[dict]:
    seq = trainer.cfg.dataset.seq_len
    out = []
    for entry in trainer.log:  # read after the timed loop: these .item() calls synchronize nothing new
        i = entry.step
        if i == 0 and checked:
            phase, ms = "check", None  # the first step, checked against the unsharded replica
        elif i < warmup:
            phase, ms = "warmup", None
        elif i < warmup + len(step_ms):
            phase, ms = "timed", step_ms[i - warmup]
        else:
            phase, ms = "profiled", None
        samples = trainer.cfg.dataset.batch_size * entry.micro_batches
        out.append(
            {
                "kind": "step",
                "scenario": scenario.id,
                "rank": env.rank,
                "step": i,
                "phase": phase,
                "loss": float(entry.loss.item()),
                "lr": entry.lr,
                "grad_norm": float(entry.grad_norm.item()),
                "step_ms": ms,
                "micro_batches": entry.micro_batches,
                "samples": samples,
                "tokens": samples * seq,
            }
        )
    return out
