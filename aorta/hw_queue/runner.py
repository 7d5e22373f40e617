"""Run one workload: ``run_workload`` as named steps, each marking the host seconds of its phases.

1. ``_prepare``: the workload's ``setup``.
2. ``_check``: one-stream reference -> poisoned outputs -> multi-stream run -> compare (a mismatch raises
   ``WorkloadCheckError`` and nothing is timed).
3. ``_choose_mode``: the round to time (aorta/hw_queue/run_mode.py), with an optional graph capture and
   its own check.
4. ``_time``: the one timing loop, the review of its rounds, the workload's figures from them.
5. ``_kernel_pass``: on a GPU, the round again under the profiler for kernel timestamps (and the labelled
   pass beside a graph replay).
6. ``_figures``: stage and reference figures, why each missing one is missing, the details for extra_info.
7. ``_check_stream_work``: each stream's work against the workload's declaration (``StreamWorkError``:
   nothing is recorded).
8. ``_record``: the ``BenchRecord``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from aorta import stats
from aorta.hw_queue import run_mode, stream_work
from aorta.hw_queue.kernel_pass import KERNEL_PASS_ROUNDS, LABELLED_PASS_ROUNDS
from aorta.hw_queue.launch_log import LaunchLog
from aorta.hw_queue.workload import Metric, StreamWorkError, Workload, clone_result, compare_results
from aorta.hw_queue.write_log import WriteLog, written_views
from aorta.record import BenchRecord
from aorta.timeline import kernel_summary, kernel_timeline
from aorta.timing import RoundRecorder, StepFn, TimedRun, TimingPlan, run_forked, slowdown, time_rounds

# Why a gate's repeat run has no kernel-pass figures, and where its output check is.
LEAN_RUN = (
    "a gate's repeat run: its output was checked against the one-stream run, and its kernel and labelled passes "
    "ran, in the gate's full run(s) of this command; this run times the rounds only"
)
# A lean run of a workload with figures from the kernel timeline keeps its kernel (and labelled) pass: those
# figures are judged run by run like device time, so each run must measure them.
LEAN_RUN_KERNEL_PASS = (
    "a gate's repeat run: its output was checked against the one-stream run, and each stream's work from the "
    "kernel pass, in the gate's full run(s) of this command; this run times the rounds and keeps the kernel "
    "pass for the figures read from kernel timestamps"
)


@dataclass
class BenchResult:
    run: TimedRun  # the timed rounds: device time, no per-stream events
    record: BenchRecord  # what goes into pytest-benchmark's JSON
    traced: TimedRun | None = None  # the kernel-timestamp pass (under the profiler), where there is one

    @property
    def metrics(self) -> list[Metric]:
        return list(self.record.metrics.values())

    @property
    def extra_info(self) -> dict[str, Any]:
        """The record as written into pytest-benchmark's ``extra_info``."""
        return self.record.to_extra_info()

    @property
    def intervals_run(self) -> TimedRun:
        """The run whose rounds hold the per-stream intervals (the timed run when there is no interval pass)."""
        return self.traced or self.run


def poison(value: Any) -> None:
    """Overwrite outputs in place so an output the next run fails to write cannot pass the check.

    Integers get -1: never a valid count or id, and an index read before it was written picks the last row
    (a wrong value the check catches) where indexing wraps, instead of running off the end of a buffer."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() or value.is_complex():
            value.fill_(float("nan"))
        elif value.dtype == torch.bool:
            value.logical_not_()
        else:
            value.fill_(-1)
    elif isinstance(value, dict):
        for v in value.values():
            poison(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            poison(v)


def _poison_written(workload: Workload, written: list) -> None:
    """Poison the result and every buffer region the reference step wrote (each region once: a bool is
    poisoned by negation, so twice would restore it)."""
    seen = set()
    for t in [*_tensors(workload.result()), *written]:
        key = (t.untyped_storage().data_ptr(), t.dtype, tuple(t.shape), tuple(t.stride()), t.storage_offset())
        if key not in seen:
            seen.add(key)
            poison(t)


def _tensors(value: Any) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def check_against_one_stream(device, workload: Workload, streams) -> tuple[Any, list]:
    """Run the step on the origin stream alone, then on ``streams``; raise if the results differ. Returns the
    reference result and the views of the buffers the step writes.

    Before the multi-stream run every buffer region the reference step wrote is poisoned, not only the
    result: a stream whose work did not run leaves poison that its readers carry into the result."""
    origin = device.current_stream()
    one = RoundRecorder(device, [origin] * len(streams), record_intervals=False)
    log = WriteLog()
    with log:  # untimed: notes which of the workload's buffers the step writes
        workload.step(one)
    device.synchronize()  # the reference must be complete before it is copied
    reference = clone_result(workload.result())
    written = written_views(workload, log)
    _poison_written(workload, written)
    many = RoundRecorder(device, streams, record_intervals=False)
    run_forked(device, streams, lambda: workload.step(many))
    device.synchronize()  # read the multi-stream result only after every stream finished
    compare_results(workload.result(), reference, *workload.tolerance())
    return reference, written


def _graph_step(device, workload: Workload, streams, reference, written: list):
    """Capture one multi-stream iteration as a graph, check one replay, return the replay step."""
    rec = RoundRecorder(device, streams, record_intervals=False)
    replay = device.capture_graph(lambda: run_forked(device, streams, lambda: workload.step(rec)))
    _poison_written(workload, written)
    replay()
    device.synchronize()  # the replayed result is read next
    if reference is not None:  # a lean repeat run checked its output in the gate's full run
        compare_results(workload.result(), reference, *workload.tolerance(), where="graph replay result")
    return lambda _rec: replay()


def run_workload(
    device,
    workload: Workload,
    streams,
    plan: TimingPlan,
    *,
    review: Callable[[TimedRun, Callable[[int], TimedRun]], tuple[TimedRun, dict]] | None = None,
    test_slowdown: float = 0.0,
    mode: str = "eager",
    reference_run: BenchResult | None = None,
    lean: bool = False,
    slowdown_store=None,
    kernel_pass_rounds: int | None = None,
    timed_rounds: int | None = None,
) -> BenchResult:
    """``review`` (optional) sees the timed rounds before any figure is derived: it may drop rounds (those
    taken while the GPU was throttled, by cause: aorta/telemetry/round_policy.py), replace them through its
    second argument (``more(n)`` times ``n`` more rounds), and returns extra_info entries to add.
    ``test_slowdown`` > 0 adds real, calibrated device work to every iteration (aorta/timing/slowdown.py):
    for testing the regression gate only, and recorded as such in extra_info; ``slowdown_store``: the file a
    gate's runs share their calibration in (``slowdown.calibrated_units``).
    ``mode``: ``eager`` (launches issued as the round runs) or ``gpu`` (the whole round on the GPU before it
    starts: ``run_mode.choose``); where ``gpu`` cannot be had the run is eager and ``unavailable["mode_gpu"]`` says why.
    ``reference_run``: a reference run of the same workload (the one-stream run, the tiny kernels alone) whose
    figures this one is read against (``Workload.reference_metrics``).
    ``lean``: a gate's repeat run (``LEAN_RUN``): the one-stream check and the per-stream work check ran in the
    gate's full run(s) of this same command and are not repeated; the kernel and labelled passes are repeated
    only for a workload with figures from the kernel timeline (``LEAN_RUN_KERNEL_PASS``); the timed rounds and
    the workload's figures from them are as in a full run.
    ``kernel_pass_rounds``: the profiled rounds of the kernel pass (default ``KERNEL_PASS_ROUNDS``; a gate's
    runs take ``GATE_KERNEL_PASS_ROUNDS``: aorta/hw_queue/kernel_pass.py).
    ``timed_rounds``: time this many rounds instead of the plan's (a reference run whose timed rounds nothing
    reads: ``REFERENCE_TIMED_ROUNDS``); the kernel pass still profiles the plan's count.

    The steps are those of the module docstring, in order; ``phases`` gives ``host_phase_s``."""
    if mode not in run_mode.MODES:
        raise ValueError(f"mode must be one of {run_mode.MODES}, got {mode!r}")
    phases = _Phases()
    _prepare(workload, phases)
    reference, written = (
        _warm(device, workload, streams, phases) if lean else _check(device, workload, streams, phases)
    )
    chosen, no_intervals = _choose_mode(device, workload, streams, plan, mode, reference, written, phases)
    timed = _time(device, workload, chosen, review, test_slowdown, phases, slowdown_store, timed_rounds)
    kernel_pass = not lean or workload.has_kernel_figures()
    if kernel_pass:
        passes = _kernel_pass(
            device,
            workload,
            streams,
            chosen,
            timed,
            no_intervals,
            phases,
            kernel_pass_rounds or KERNEL_PASS_ROUNDS,
        )
    else:
        passes = _Passes(None, None, LEAN_RUN)
    figures = _figures(device, workload, streams, chosen, timed, passes, reference_run, test_slowdown, phases)
    if lean:  # each stream's work was checked from the kernel pass of the gate's full run
        why = LEAN_RUN_KERNEL_PASS if kernel_pass else LEAN_RUN
        figures.details["stream_work"] = {"unavailable": why}
        figures.details["lean_run"] = why
    else:
        figures.details["stream_work"] = _check_stream_work(device, workload, streams, passes, phases)
    return _record(device, workload, timed, passes, figures, phases)


@dataclass
class _Timed:
    """What the time step hands on: the reviewed timed rounds, the step and plan they ran (the kernel pass
    runs the same), and the workload's figures from them."""

    run: TimedRun
    step: StepFn  # the chosen round's step, padded where ``test_slowdown`` > 0
    streams: list  # the chosen round's streams (none for a graph replay)
    plan: TimingPlan  # the chosen round's plan
    reviewed: dict[str, Any]  # the review's extra_info entries
    slowdown_info: dict | None
    per_iter: list[float]
    metrics: list[Metric]


@dataclass
class _Passes:
    """The kernel-timestamp pass and the labelled pass beside a graph replay, where each ran, and why the
    interval figures cannot be had (None when they can)."""

    traced: TimedRun | None
    labelled: TimedRun | None
    no_intervals: str | None


@dataclass
class _Figures:
    metrics: list[Metric]
    unavailable: dict[str, Any]
    details: dict[str, Any]
    kernel: dict[str, Any]  # the kernel pass's figures, merged into details last
    notes: list[str]


def _prepare(workload: Workload, phases: _Phases) -> None:
    """Prepare: the workload's buffers and inputs."""
    workload.setup()
    phases.done("setup")


def _check(device, workload: Workload, streams, phases: _Phases) -> tuple[Any, list]:
    """Check: the multi-stream step against the one-stream reference (``WorkloadCheckError``: nothing is
    timed). Returns the reference result and the views of the buffers the step writes."""
    reference, written = check_against_one_stream(device, workload, streams)
    phases.done("check")
    return reference, written


def _warm(device, workload: Workload, streams, phases: _Phases) -> tuple[None, list]:
    """A lean run's stand-in for the check: one untimed multi-stream iteration (libraries loaded, workspaces
    allocated, as the check leaves them before a graph capture), its output not compared."""
    run_forked(device, streams, lambda: workload.step(RoundRecorder(device, streams, record_intervals=False)))
    device.synchronize()
    phases.done("warm")
    return None, []


def _choose_mode(
    device,
    workload: Workload,
    streams,
    plan: TimingPlan,
    mode: str,
    reference,
    written: list,
    phases: _Phases,
) -> tuple[run_mode.RoundMode, str | None]:
    """Choose mode: the round to time (eager, a launch hold, or a graph replay captured and checked here), and
    why the workload gives no interval figures whatever the device (None when it may)."""
    chosen = run_mode.choose(
        device,
        workload,
        streams,
        plan,
        mode,
        lambda: _graph_step(device, workload, streams, reference, written),
    )
    no_intervals = workload.interval_unavailable_reason()
    phases.done("mode")
    return chosen, no_intervals


def _time(
    device,
    workload: Workload,
    chosen: run_mode.RoundMode,
    review: Callable[[TimedRun, Callable[[int], TimedRun]], tuple[TimedRun, dict]] | None,
    test_slowdown: float,
    phases: _Phases,
    slowdown_store=None,
    timed_rounds: int | None = None,
) -> _Timed:
    """Time: the timed rounds through the one timing loop, reviewed, and the workload's figures from them.
    ``timed_rounds`` (optional) replaces the plan's rounds for this step alone (the kernel pass reads the plan)."""
    step, timed_streams, plan = chosen.step, chosen.streams, chosen.plan
    timed_plan = plan if timed_rounds is None else replace(plan, rounds=timed_rounds)
    slowdown_info = None
    if test_slowdown > 0:
        units, slowdown_info = slowdown.calibrated_units(
            device,
            step,
            timed_streams,
            test_slowdown,
            plan,
            store=slowdown_store,
            key=slowdown.store_key(repr(workload.identity()), chosen.info.get("mode"), plan),
        )
        step = slowdown.padded_step(device, step, timed_streams, units)
    # Device time comes from rounds with no per-stream events: an event costs host time at every launch
    # point it marks (host-bound steps run that much longer) and an end event waits in a hardware queue
    # that other streams share (on an H100 at 16-64 streams, rounds with interval events ran 0.75x-1.41x
    # the time of rounds without, scripts/gpu/interval_probe.py). Busy time, concurrency and stage figures
    # come from a second pass under the profiler: the GPU's own kernel timestamps (aorta/timeline/kernel_timeline.py).
    workload.measure_reference(plan)
    run = time_rounds(device, timed_streams, step, timed_plan, record_intervals=False)
    workload.measure_reference(plan)
    phases.done("timed_rounds")
    reviewed: dict[str, Any] = {}
    if review is not None:
        run, reviewed = review(run, _more_rounds(device, timed_streams, step, timed_plan, run))
        phases.done("review")
    # The workload's figures are read here, before the kernel pass: their host time lands in its phase.
    per_iter = run.per_iteration_ms
    metrics = workload.metrics(per_iter)
    if "throttle_handling" in reviewed:  # the figures the policy covers: those of the timed rounds
        reviewed["throttle_handling"]["figures_timed_rounds"] = ["device_ms", *(m.name for m in metrics)]
    return _Timed(run, step, timed_streams, plan, reviewed, slowdown_info, per_iter, metrics)


def _kernel_pass(
    device,
    workload: Workload,
    streams,
    chosen: run_mode.RoundMode,
    timed: _Timed,
    no_intervals: str | None,
    phases: _Phases,
    rounds: int = 0,
) -> _Passes:
    """Kernel pass (GPU only): the timed round again under the profiler for the GPU's kernel timestamps, and
    beside a graph replay of a workload with stage figures, the labelled pass (eager, on ``streams``)."""
    traced = labelled = None
    if no_intervals is None:
        if device.is_gpu:
            traced = time_rounds(
                device,
                timed.streams,
                timed.step,
                kernel_pass_plan(timed.plan, timed.run, rounds or KERNEL_PASS_ROUNDS),
                record_intervals=True,
            )
            no_intervals = traced.kernel_reason
            phases.done("kernel_pass")
            if chosen.labelled_pass and no_intervals is None:
                labelled = time_rounds(
                    device,
                    streams,
                    workload.step,
                    labelled_pass_plan(device, timed.plan, timed.run),
                    record_intervals=True,
                )
                phases.done("labelled_pass")
        else:
            no_intervals = kernel_timeline.NO_KERNELS_ON_CPU
    return _Passes(traced, labelled, no_intervals)


def _figures(
    device,
    workload: Workload,
    streams,
    chosen: run_mode.RoundMode,
    timed: _Timed,
    passes: _Passes,
    reference_run: BenchResult | None,
    test_slowdown: float,
    phases: _Phases,
) -> _Figures:
    """Figures: every figure with its source, each one missing with its reason, the run's details."""
    metrics, unavailable = _metrics_and_reasons(workload, timed, passes, reference_run)
    details = _details(device, workload, streams, chosen, timed, test_slowdown, unavailable)
    kernel, notes = _kernel_details(timed, passes, unavailable)
    paced = _host_paced_note(device, timed)
    if paced and not any(n.startswith("host-bound") for n in notes):  # the kernel pass's says it already
        notes.insert(0, paced)
    phases.done("figures")
    return _Figures(metrics, unavailable, details, kernel, notes)


def _metrics_and_reasons(
    workload: Workload, timed: _Timed, passes: _Passes, reference_run: BenchResult | None
) -> tuple[list[Metric], dict[str, Any]]:
    """The timed rounds' figures, the stage figures from the kernel timeline, those read against the
    reference run, and why each missing one is missing."""
    metrics, no_intervals = timed.metrics, passes.no_intervals
    if no_intervals is None and passes.traced is not None:
        more, unavailable = _stage_figures(
            workload, passes.labelled or passes.traced, passes.labelled is not None
        )
    else:  # figures from the kernel timeline cannot be had: none are invented from host clocks or events
        more, unavailable = [], {"interval_metrics": no_intervals}
        if workload.spec.metric not in {m.name for m in metrics}:  # a headline read from kernel timestamps
            unavailable[workload.spec.metric] = no_intervals
    metrics = metrics + more
    unavailable = {**unavailable, **workload.unavailable()}  # structural reasons hold on any device
    relative, why_not = workload.reference_metrics(
        {m.name: m for m in metrics}, reference_run.record.metrics if reference_run else None
    )
    if unavailable.get(
        "interval_metrics"
    ):  # a reference figure missing for want of kernel timestamps says why
        why_not = {name: f"{why} ({unavailable['interval_metrics']})" for name, why in why_not.items()}
    metrics, unavailable = metrics + relative, {**unavailable, **why_not}
    # A headline read against the reference run (stream_dependency's) is measured, whatever the kernel pass gave.
    for m in relative:
        unavailable.pop(m.name, None)
    return metrics, unavailable


def _details(
    device,
    workload: Workload,
    streams,
    chosen: run_mode.RoundMode,
    timed: _Timed,
    test_slowdown: float,
    unavailable: dict[str, Any],
) -> dict[str, Any]:
    """The run's details for extra_info: the workload, the round as timed, the host's figures, the review's
    entries and the test slowdown. Adds the mode's and the review's reasons to ``unavailable``."""
    run, plan = timed.run, timed.plan
    details: dict[str, Any] = {
        "category": workload.spec.category,
        "priority": workload.spec.priority,
        "size": workload.size,
        "dtype": workload.dtype_name,
        "streams_requested": workload.n_streams,
        "stream_handles": device.distinct_stream_count(streams),
        "issue_order": workload.issue_order,
        "sync_mode": run.sync_mode,
        "iterations_per_round": run.iterations_per_round,
        "warmup_rounds": plan.warmup_rounds,  # 1 in a gate's lean run, 3 in a full GPU run (aorta/plugin.py)
        "launch_hold_cycles": plan.hold_cycles,
        "launch_hold_cycles_per_iteration": plan.hold_cycles_per_iteration,
        "launch_hold_cycles_per_enqueue_ms": plan.hold_cycles_per_enqueue_ms,
        **chosen.info,
        "host_wall": _host_figures(run),
        "host_enqueue_ms_per_iteration": stats.median(
            [r.host_enqueue_ms / run.iterations_per_round for r in run.rounds]
        ),
        "workload_info": workload.info(),
    }
    if chosen.unavailable is not None:
        unavailable["mode_gpu"] = chosen.unavailable
    for key, value in timed.reviewed.items():
        if key == "unavailable":
            unavailable.update(value)
        elif key != "reading_notes":  # those join the kernel pass's notes
            details[key] = value
    if timed.slowdown_info is not None:
        details["test_slowdown"] = test_slowdown
        details["test_slowdown_info"] = timed.slowdown_info
    return details


def _host_paced_note(device, timed: _Timed) -> str | None:
    """Host-bound, from the timed rounds: on a GPU, rounds launched as they ran (no hold, no graph replay)
    whose enqueue took about their whole device time. On the CPU backend every op runs as it is issued, so
    the note would be true of every run and say nothing."""
    plan, run = timed.plan, timed.run
    held = plan.hold_cycles or plan.hold_cycles_per_iteration or plan.hold_cycles_per_enqueue_ms
    if not device.is_gpu or held or run.method == "graph_replay":
        return None
    k = run.iterations_per_round
    enqueue = stats.median([r.host_enqueue_ms / k for r in run.rounds]) if run.rounds else None
    return kernel_timeline.host_paced_note(enqueue, stats.median(timed.per_iter) if timed.per_iter else None)


def _kernel_details(timed: _Timed, passes: _Passes, unavailable: dict[str, Any]) -> tuple[dict, list[str]]:
    """The kernel pass's figures (why each is missing goes into ``unavailable``), which kernels ran, the
    labelled pass, and the reading notes."""
    traced, labelled = passes.traced, passes.labelled
    kernel = _kernel_figures(traced, timed.per_iter, passes.no_intervals, unavailable)
    if (
        traced is not None and passes.no_intervals is None
    ):  # which kernels ran: the gate's kernel diff reads it
        kernel["kernel_summary"] = kernel_summary.summarize(traced.kernel_rounds, traced.iterations_per_round)
    if labelled is not None:
        kernel["labelled_pass"] = _labelled_pass_info(labelled)
    notes = kernel.pop("reading_notes")
    notes.extend(timed.reviewed.get("reading_notes", ()))  # the review's: power-limited rounds
    return kernel, notes


def _check_stream_work(device, workload: Workload, streams, passes: _Passes, phases: _Phases) -> dict:
    """Check each stream's work against the workload's declaration (``StreamWorkError``: nothing is recorded)."""
    checked = check_stream_work(device, workload, streams, passes.traced, passes.labelled)
    phases.done("stream_work_check")
    return checked


def _record(
    device, workload: Workload, timed: _Timed, passes: _Passes, figures: _Figures, phases: _Phases
) -> BenchResult:
    """Record: what goes into pytest-benchmark's JSON, with the host seconds of every phase, of the timed
    rounds alone (``timed_s``: warm-up apart) and of the phases a gate's lean run of it would skip
    (``lean_skips_s``: what a gate plans its first lean run from, aorta/gate/runs/run_wall.py)."""
    figures.details["host_phase_s"] = phases.seconds
    figures.details["timed_s"] = round(timed.run.host_total_ms / 1e3, 4)
    skipped: tuple[str, ...] = ("check", "stream_work_check")
    if not workload.has_kernel_figures():  # no pass in a lean run, and no figures read from one
        skipped += ("kernel_pass", "labelled_pass", "figures")
    figures.details["lean_skips_s"] = round(sum(phases.seconds.get(k, 0.0) for k in skipped), 4)
    record = BenchRecord(
        workload=workload.spec.name,
        backend=device.backend,
        timing_method=timed.run.method,
        clock=timed.run.clock,
        device_ms_per_iteration=list(timed.per_iter),
        headline_metric=workload.spec.metric,
        unavailable=figures.unavailable,
        reading_notes=figures.notes,
        details={**figures.details, **figures.kernel},
    )
    record.add(*figures.metrics)
    return BenchResult(timed.run, record, passes.traced)


LAUNCH_LOG_SOURCE = (
    "launch log of one untimed iteration (aten ops dispatched, spins enqueued, per stream block)"
)


def check_stream_work(
    device, workload: Workload, streams, traced: TimedRun | None, labelled: TimedRun | None
):
    """After the timed rounds: each stream's declared work (``Workload.expected_work``) against what ran, from
    the kernel timestamps where the kernel pass has them, else from the launch log of one untimed iteration
    (aorta/hw_queue/stream_work.py). Raises ``StreamWorkError`` when a stream's work is missing; returns what was
    checked, for extra_info."""
    spec = workload.expected_work()
    if spec is None:
        return {"unavailable": "the workload declares no expected work per stream"}
    verdicts = []
    if traced is not None and traced.kernel_rounds:
        verdicts.append(_timeline_verdict(spec, traced, "kernel timestamps of the kernel pass"))
        if labelled is not None and labelled.kernel_rounds:
            verdicts.append(_timeline_verdict(spec, labelled, "kernel timestamps of the labelled pass"))
    else:
        verdicts.append(_launch_log_verdict(device, workload, streams, spec))
    for verdict in verdicts:
        if not verdict.ok:
            raise StreamWorkError(stream_work.failure_message(workload.spec.name, verdict))
    return {"declared": spec.to_info(), "checks": [v.to_info() for v in verdicts]}


def _timeline_verdict(spec: stream_work.WorkSpec, run: TimedRun, source: str) -> stream_work.Verdict:
    rounds = run.kernel_rounds
    by_stream = any(r.blocks for r in rounds)  # a graph replay's rounds carry no blocks: totals only
    counts = [stream_work.kernel_round_counts(r.blocks, r.ops) for r in rounds]
    if not by_stream:
        source += " (graph replay: no stream index, totals over the round)"
    return stream_work.judge(spec, counts, run.iterations_per_round, source, by_stream=by_stream)


def _launch_log_verdict(
    device, workload: Workload, streams, spec: stream_work.WorkSpec
) -> stream_work.Verdict:
    log = LaunchLog()
    rec = RoundRecorder(device, streams, record_intervals=False, launch_log=log)
    device.launch_log = log  # Device.spin notes its kernels in the log
    try:
        with log:
            run_forked(device, streams, lambda: workload.step(rec))
    finally:
        device.launch_log = None
    device.synchronize()  # the logged iteration ends before anything else is enqueued
    counts = [(log.per_stream(), log.total())]
    return stream_work.judge(spec, counts, 1, LAUNCH_LOG_SOURCE, by_stream=True)


def labelled_pass_plan(device, plan: TimingPlan, timed: TimedRun) -> TimingPlan:
    """The labelled pass beside a graph replay: the same K, the round's launches queued behind a hold sized
    from the host's enqueue time under the profiler, ``LABELLED_PASS_ROUNDS`` rounds."""
    plan = replace(
        kernel_pass_plan(plan, timed),
        rounds=min(plan.rounds, LABELLED_PASS_ROUNDS),
        warmup_rounds=0,  # the step ran eager in the check and the capture; the profiler's first round warms
        graph=False,
    )
    return run_mode.hold_plan(device, plan)


def _stage_figures(workload: Workload, run: TimedRun, from_labelled_pass: bool) -> tuple[list[Metric], dict]:
    """The workload's stage figures from the labelled rounds. From a labelled pass beside a graph replay,
    only when that pass kept the GPU busy: rounds the host trickled onto the GPU would describe the host's
    launch pace, not the replayed round, so the figures are then unavailable with the reason."""
    more, unavailable = workload.extra_metrics(run)
    more = [replace(m, from_pass=True) for m in more]  # the pass's rounds: the run's figure is their median
    if not from_labelled_pass:
        return more, unavailable
    share = kernel_timeline.summarize(run.kernel_rounds, run.iterations_per_round).get("gpu_busy_share")
    if share is None or share < kernel_timeline.HOST_BOUND_SHARE:
        why = (
            f"the labelled pass (launches behind a hold, beside the graph replay) kept the GPU busy only "
            f"{share if share is None else round(share, 2)} of its span: the host could not queue the round "
            "ahead of the GPU, so its stage figures would describe the host's launch pace"
        )
        return [], {**unavailable, **{m.name: why for m in more}}
    return [replace(m, source=m.source or LABELLED_SOURCE) for m in more], unavailable


LABELLED_SOURCE = (
    "kernel timestamps of the labelled pass beside the graph replay: one round, one value per run "
    "(judged as the run's figure against the between-run noise)"
)


def _labelled_pass_info(run: TimedRun) -> dict:
    figs = kernel_timeline.summarize(run.kernel_rounds, run.iterations_per_round)
    return {
        "rounds": len(run.rounds),
        "profiler_cost": run.profiler_cost,
        "gpu_busy_share": figs.get("gpu_busy_share"),
        "effective_concurrency": figs.get("effective_concurrency"),
        "device_ms_per_iteration_median": stats.median(run.per_iteration_ms),
        "note": "stage figures (labelled blocks) come from this pass: the round's launches queued behind a "
        "hold with each block in a labelled range, since a graph replay carries no labels; busy share, "
        "concurrency and per-stream busy come from the graph replay's own kernels",
    }


class _Phases:
    """Host wall seconds of each phase of one benchmark (where a slow run spends its time; host clock)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def done(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(now - self._last, 4)
        self._last = now


def _more_rounds(device, streams, step, plan: TimingPlan, timed: TimedRun) -> Callable[[int], TimedRun]:
    """``more(n)``: ``n`` more timed rounds like ``timed``'s (its K; one warm-up round, which also sizes a
    GPU-mode hold from the host's enqueue time), to replace rounds the review dropped."""

    def more(n: int) -> TimedRun:
        again = replace(
            plan,
            rounds=n,
            warmup_rounds=min(plan.warmup_rounds, 1),
            iterations_per_round=timed.iterations_per_round,
        )
        return time_rounds(device, streams, step, again, record_intervals=False)

    return more


def kernel_pass_plan(plan: TimingPlan, timed: TimedRun, rounds: int = KERNEL_PASS_ROUNDS) -> TimingPlan:
    """The kernel-timestamp pass: the timed run's K (no second probe), one warm-up round, and at most
    ``rounds`` rounds (``KERNEL_PASS_ROUNDS`` unless the caller says). A profiled round costs far more host
    time than a timed one (the profiler
    records every launch; its trace is exported and parsed), and its figures are ratios and per-round
    medians that settle within a few rounds."""
    return replace(
        plan,
        rounds=min(plan.rounds, rounds),
        warmup_rounds=min(plan.warmup_rounds, 1),
        iterations_per_round=timed.iterations_per_round,
    )


_KERNEL_FIGURES = (
    "per_stream_busy_ms",
    "effective_concurrency",
    "gpu_busy_share",
    "distinct_streams",
    "streams_with_work",
)


def _kernel_figures(
    traced: TimedRun | None, timed_per_iteration_ms, reason: str | None, unavailable: dict
) -> dict:
    """Per-stream busy, concurrency, GPU busy share and distinct streams from the kernel-timestamp pass
    (per iteration where K > 1), the reading note when the GPU idled, or why none of them can be had."""
    out: dict[str, Any] = {"effective_concurrency_samples": [], "reading_notes": []}
    if traced is None or reason is not None:
        for name in _KERNEL_FIGURES:
            out[name] = None
            unavailable[name] = reason
        return out
    figs = kernel_timeline.summarize(traced.kernel_rounds, traced.iterations_per_round)
    out.update(
        per_stream_busy_ms=figs["per_stream_busy_ms"],
        effective_concurrency=figs["effective_concurrency"],
        effective_concurrency_samples=figs["effective_concurrency_samples"],
        gpu_busy_share=figs["gpu_busy_share"],
        gpu_busy_share_samples=figs["gpu_busy_share_samples"],
        distinct_streams=figs["streams_with_work"],  # native streams that received device work
        streams_with_work=figs["streams_with_work"],
    )
    if (
        traced.method == "graph_replay"
    ):  # the graph ran on device streams the driver chose, not the workload's
        out["distinct_streams"] = None
        unavailable["distinct_streams"] = (
            "a graph replay runs on device streams of the driver's choosing (streams_with_work counts them); "
            "run --aorta-mode eager for the native streams that received work"
        )
    note = kernel_timeline.host_bound_note(
        figs["gpu_busy_share"], graph_replay=traced.method == "graph_replay"
    )
    if note:
        out["reading_notes"].append(note)
    traced_ms = stats.median(traced.per_iteration_ms)
    timed_ms = stats.median(timed_per_iteration_ms)
    out["kernel_pass"] = {
        "rounds": len(traced.rounds),
        "rounds_with_kernels": figs["rounds_with_kernels"],
        "profiler_cost": traced.profiler_cost,
        "iterations_per_round": traced.iterations_per_round,
        "device_ms_per_iteration_median": traced_ms,
        "ratio_to_timed": traced_ms / timed_ms if timed_ms > 0 else None,
        "kernel_span_ms_per_iteration": figs["kernel_span_ms_per_iteration"],
        "gpu_busy_ms_per_iteration": figs["gpu_busy_ms_per_iteration"],
        "note": "per-stream busy, effective concurrency, GPU busy share, distinct streams and stage figures come "
        "from this pass's kernel timestamps (torch.profiler), each round's span from its first kernel's "
        "start to its last kernel's end; device time and the headline metric from the timed rounds",
    }
    return out


def _host_figures(run: TimedRun) -> dict:
    enqueue = [r.host_enqueue_ms for r in run.rounds]
    out = {"enqueue_ms_median": stats.median(enqueue), "total_ms": run.host_total_ms}
    walls = [r.host_wall_ms for r in run.rounds if r.host_wall_ms is not None]
    if walls:
        out["wall_ms_median"] = stats.median(walls)
    return out
