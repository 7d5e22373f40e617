"""``--aorta-mode``: how a round reaches the GPU.

- ``eager``: launches are issued as the round runs, so the host's launch path is part of what is measured.
- ``gpu`` (the default): the whole round is on the GPU before it starts, so the figures describe the
  hardware queues. In order of preference:

  1. ``graph_replay``: the round captured once as a CUDA/HIP graph and replayed (one launch per iteration).
     Taken for every workload whose step has no host synchronization; a capture that fails falls back
     to (2) and the record says why.
  2. ``launch_hold``: every launch of the round queued behind an untimed hold kernel on the origin stream,
     sized before each round from the host's enqueue time of the round before (so it also covers the
     slower launches under the profiler). A workload with its own hold (hetero_kernels, sized once at set-up)
     keeps it and gets the sized hold on top: its own alone let the launches under the profiler start late.
  3. neither (CPU backend, or a workload that measures the host on purpose): eager, and why.

In a graph replay the profiler's ranges are not replayed, so the kernels carry no stream index or stage
label: busy share, concurrency and per-stream busy come from the replay's own kernel timestamps (by the
device streams the graph ran on), and a workload's stage figures from a second, labelled pass of the same
round queued behind a hold (``labelled_pass``), named as such in the record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from aorta.hw_queue.parts.spin import cycles_for_ms
from aorta.hw_queue.workload import Workload
from aorta.timing import StepFn, TimingPlan

MODES = ("eager", "gpu")
HOLD_MARGIN = 1.5  # hold = 1.5 x the host's enqueue time of one iteration (round before), plus HOLD_FIXED_MS
HOLD_FIXED_MS = 0.2
NOT_ON_CPU = "CPU backend: every op runs when it is issued, so no queue can be filled before the round starts"


@dataclass
class RoundMode:
    """What the timing loop runs: the step, on which streams, with which plan, and what the record says."""

    step: StepFn
    streams: list  # [] for a graph replay: the graph holds its own forks and joins
    plan: TimingPlan
    info: dict[str, Any] = field(default_factory=lambda: {"mode": "eager"})
    unavailable: str | None = None  # why the asked-for gpu mode could not be had
    labelled_pass: bool = False  # stage figures need a labelled pass beside the timed step's kernel pass


def reads_stage_figures(workload: Workload) -> bool:
    """Whether the workload reads figures from labelled blocks (its ``extra_metrics``)."""
    return type(workload).extra_metrics is not Workload.extra_metrics


def hold_plan(device, plan: TimingPlan) -> TimingPlan:
    """``plan`` with a hold kernel sized before each round from the host's enqueue time of the round before."""
    per_ms = cycles_for_ms(device, 1.0)
    return replace(
        plan, hold_cycles=int(per_ms * HOLD_FIXED_MS), hold_cycles_per_enqueue_ms=HOLD_MARGIN * per_ms
    )


def choose(
    device,
    workload: Workload,
    streams: list,
    plan: TimingPlan,
    mode: str,
    capture: Callable[[], StepFn],
) -> RoundMode:
    """The round for ``mode``. ``capture()`` captures and checks one multi-stream iteration as a graph and
    returns its replay step (raising if the round cannot be captured)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if workload.launch_hold_cycles():
        plan = replace(plan, hold_cycles=workload.launch_hold_cycles())
    if workload.round_barrier() is not None:  # ranks meet in collectives: their rounds start together
        plan = replace(plan, round_barrier=workload.round_barrier())
    graph_plan = replace(plan, graph=True)
    if workload.uses_graph():  # a graph variant replays in either mode
        info = {"mode": mode, "gpu_mode": "graph_replay"} if mode == "gpu" else {"mode": "eager"}
        return RoundMode(capture(), [], graph_plan, info)
    eager = RoundMode(workload.step, streams, plan)
    if mode == "eager":
        return eager
    if workload.launch_hold_cycles() and device.is_gpu:  # its own hold and the one that follows the host
        held = replace(hold_plan(device, plan), hold_cycles=plan.hold_cycles)
        return RoundMode(workload.step, streams, held, {"mode": "gpu", "gpu_mode": "launch_hold"})
    reason = workload.gpu_mode_unavailable_reason() or (None if device.is_gpu else NOT_ON_CPU)
    if reason is not None:
        return replace(eager, unavailable=reason)
    why_not_graph = workload.graph_unavailable_reason()
    if why_not_graph is None:
        try:
            replay = capture()
        except Exception as exc:  # noqa: BLE001 - any capture failure falls back to the hold, and says why
            first_line = (str(exc).strip().splitlines() or [""])[0]
            why_not_graph = f"graph capture failed: {type(exc).__name__}: {first_line[:200]}"
        else:
            info = {"mode": "gpu", "gpu_mode": "graph_replay"}
            return RoundMode(replay, [], graph_plan, info, labelled_pass=reads_stage_figures(workload))
    info = {"mode": "gpu", "gpu_mode": "launch_hold", "graph_replay_unavailable": why_not_graph}
    return RoundMode(workload.step, streams, hold_plan(device, plan), info)
