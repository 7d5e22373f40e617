"""Run one workload: set up, check against one stream, time, derive figures.

The sequence is fixed: ``setup`` -> one-stream reference -> poisoned outputs -> multi-stream run ->
compare (a mismatch raises ``WorkloadCheckError`` and nothing is timed) -> optional graph capture and
its own check -> the one timing loop -> metrics and stream figures for extra_info.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from aorta import results, slowdown, stats
from aorta.timing import RoundRecorder, TimedRun, TimingPlan, run_forked, time_rounds
from aorta.workloads.base import Metric, Workload, clone_result, compare_results


@dataclass
class BenchResult:
    run: TimedRun  # the timed rounds: device time, no per-stream events
    metrics: list[Metric]
    extra_info: dict[str, Any] = field(default_factory=dict)
    traced: TimedRun | None = None  # the interval pass (per-stream events on), where the workload records them

    @property
    def intervals_run(self) -> TimedRun:
        """The run whose rounds hold the per-stream intervals (the timed run when there is no interval pass)."""
        return self.traced or self.run


def poison(value: Any) -> None:
    """Overwrite outputs in place so an output the next run fails to write cannot pass the check."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() or value.is_complex():
            value.fill_(float("nan"))
        elif value.dtype == torch.bool:
            value.logical_not_()
        else:
            value.fill_(torch.iinfo(value.dtype).min)
    elif isinstance(value, dict):
        for v in value.values():
            poison(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            poison(v)


def check_against_one_stream(device, workload: Workload, streams) -> Any:
    """Run the step on the origin stream alone, then on ``streams``; raise if the results differ."""
    origin = device.current_stream()
    one = RoundRecorder(device, [origin] * len(streams), record_intervals=False)
    workload.step(one)
    device.synchronize()  # the reference must be complete before it is copied
    reference = clone_result(workload.result())
    poison(workload.result())
    many = RoundRecorder(device, streams, record_intervals=False)
    run_forked(device, streams, lambda: workload.step(many))
    device.synchronize()  # read the multi-stream result only after every stream finished
    compare_results(workload.result(), reference, *workload.tolerance())
    return reference


def _graph_step(device, workload: Workload, streams, reference):
    """Capture one multi-stream iteration as a graph, check one replay, return the replay step."""
    rec = RoundRecorder(device, streams, record_intervals=False)
    replay = device.capture_graph(lambda: run_forked(device, streams, lambda: workload.step(rec)))
    poison(workload.result())
    replay()
    device.synchronize()  # the replayed result is read next
    compare_results(workload.result(), reference, *workload.tolerance(), where="graph replay result")
    return lambda _rec: replay()


def run_workload(device, workload: Workload, streams, plan: TimingPlan, *,
                 review: Callable[[TimedRun], tuple[TimedRun, dict]] | None = None,
                 test_slowdown: float = 0.0) -> BenchResult:
    """``review`` (optional) sees the timed rounds before any figure is derived: it may drop rounds
    (e.g. those taken while the GPU was throttled) and returns extra_info entries to add.
    ``test_slowdown`` > 0 adds real, calibrated device work to every iteration (aorta/slowdown.py):
    for testing the regression gate only, and recorded as such in extra_info."""
    workload.setup()
    reference = check_against_one_stream(device, workload, streams)
    if workload.launch_hold_cycles():
        plan = replace(plan, hold_cycles=workload.launch_hold_cycles())
    no_intervals = workload.interval_unavailable_reason()
    if workload.uses_graph():
        step, timed_streams = _graph_step(device, workload, streams, reference), []
        plan = replace(plan, graph=True)
        no_intervals = "graph replay: no per-stream events inside a graph"
    else:
        step, timed_streams = workload.step, streams
    slowdown_info = None
    if test_slowdown > 0:
        units, slowdown_info = slowdown.calibrate(device, step, timed_streams, test_slowdown, plan)
        step = slowdown.padded_step(device, step, timed_streams, units)
    # Device time comes from rounds with no per-stream events: an event costs host time at every launch
    # point it marks (host-bound steps run that much longer) and an end event waits in a hardware queue
    # that other streams share (on an H100 at 16-64 streams, rounds with interval events ran 0.75x-1.41x
    # the time of rounds without, scripts/gpu/interval_probe.py). The intervals come from a second pass.
    run = time_rounds(device, timed_streams, step, plan, record_intervals=False)
    reviewed: dict[str, Any] = {}
    if review is not None:
        run, reviewed = review(run)
    per_iter = run.per_iteration_ms
    metrics = workload.metrics(per_iter)
    traced = None
    if no_intervals is None:
        traced = time_rounds(device, timed_streams, step, plan, record_intervals=True)
    more, unavailable = workload.extra_metrics(traced or run)
    metrics = metrics + more

    extra: dict[str, Any] = {
        "aorta_schema": results.SCHEMA_VERSION,
        "workload": workload.spec.name,
        "category": workload.spec.category,
        "priority": workload.spec.priority,
        "backend": device.backend,
        "size": workload.size,
        "dtype": workload.dtype_name,
        "streams_requested": workload.n_streams,
        "distinct_streams": device.distinct_stream_count(streams),
        "issue_order": workload.issue_order,
        "sync_mode": run.sync_mode,
        "timing_method": run.method,
        "iterations_per_round": run.iterations_per_round,
        "launch_hold_cycles": plan.hold_cycles,
        "clock": run.clock,
        "device_ms_per_iteration": per_iter,
        "host_wall": _host_figures(run),
        "metrics": {m.name: m.as_dict() for m in metrics},
        "headline_metric": workload.spec.metric,
        "min_effect": workload.min_effects(),
        "unavailable": dict(unavailable),
        "workload_info": workload.info(),
    }
    for key, value in reviewed.items():
        if key == "unavailable":
            extra["unavailable"].update(value)
        else:
            extra[key] = value
    if slowdown_info is not None:
        extra["test_slowdown"] = test_slowdown
        extra["test_slowdown_info"] = slowdown_info
    if device.distinct_stream_count(streams) is None:
        extra["unavailable"]["distinct_streams"] = "CPU backend: no hardware streams"
    if traced is not None:
        extra["interval_pass"] = _interval_pass_figures(traced, per_iter)
        extra.update(results.stream_figures([r.stream_intervals_ms for r in traced.rounds], traced.device_ms,
                                            workload.n_streams))
        if not device.is_gpu:
            # Host-clock events mark when an op was issued, and CPU ops run one after another: stream
            # intervals opened together all span the round and would read as concurrency that never was.
            no_intervals = "CPU backend: streams are no-ops and run one after another; no device timestamps"
    if no_intervals:
        extra["unavailable"]["per_stream_busy_ms"] = no_intervals
        extra["unavailable"]["effective_concurrency"] = no_intervals
        extra.update(effective_concurrency=None, per_stream_busy_ms=None, effective_concurrency_samples=[])
    return BenchResult(run, metrics, extra, traced)


def _interval_pass_figures(traced: TimedRun, timed_per_iteration_ms) -> dict:
    """What the second pass (per-stream interval events on) measured beside the timed rounds (events off)."""
    traced_ms = stats.median(traced.per_iteration_ms)
    timed_ms = stats.median(timed_per_iteration_ms)
    return {"rounds": len(traced.rounds), "iterations_per_round": traced.iterations_per_round,
            "device_ms_per_iteration_median": traced_ms,
            "ratio_to_timed": traced_ms / timed_ms if timed_ms > 0 else None,
            "note": "per-stream busy time, effective concurrency and interval-derived metrics come from this "
                    "pass; device time and the headline metric from rounds without interval events"}


def _host_figures(run: TimedRun) -> dict:
    enqueue = [r.host_enqueue_ms for r in run.rounds]
    out = {"enqueue_ms_median": stats.median(enqueue), "total_ms": run.host_total_ms}
    walls = [r.host_wall_ms for r in run.rounds if r.host_wall_ms is not None]
    if walls:
        out["wall_ms_median"] = stats.median(walls)
    return out
