"""Split a profiled window's kernels into its steps (pure: no torch).

``torch.profiler`` marks each step it records with a host range ``ProfilerStep#N`` (from one
``prof.step()`` to the next; aorta/timeline/profiler_steps.py reads them). A kernel belongs to the step
whose range holds its **launch**: the host runtime call with the kernel's correlation id, else the one
Kineto's flow events point at (``DeviceOp.launch_us`` and ``.link``: aorta/timeline/launch_links.py), as
Holistic Trace Analysis assigns kernels to iterations. Its device start says
nothing about its step when the GPU runs behind the host: on an MI300X trace (TraceLens
``resnet_act_checkpoint``, rank 0 of 8) the GPU ran about two steps behind, and by device start 1493 of
2995 kernels fell in no step and one step read overlap 0.000 instead of 0.249.

A kernel with no launch in the trace whose correlation id is below the first recorded launch's was
launched before the profiled window (Kineto keeps neither its runtime call nor the collective's args; the
ids rise in launch order): it belongs to no profiled step. Any other kernel without a launch (a launch API
the profiler did not record), and every kernel of a trace with no launch at all (hand-written, or recorded
without runtime events), goes by its device start, which is right where every step ends with a device
synchronize (aorta's own profiled steps). A step in
which no kernel was launched measured nothing: it is left out, not counted as zeros. Kernels and steps
left out are counted, and ``StepSplit.note`` says how many. Per step it also says which ops were linked by
flow events or placed by device start, and how many kernel launches no device event answers (records the
profiler lost); where ops placed by device start meet evidence that the GPU ran behind the host, the
per-step figures are refused (``lag_evidence``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from aorta.fsdp import trace_analysis as ta
from aorta.fsdp.collective_match import comm_kernels
from aorta.timeline import overlap
from aorta.timeline.device_op import DeviceOp
from aorta.timeline.op_table import LINKS, OpRows, OpTable, column

DEVICE_START = "device start"


@dataclass(frozen=True)
class StepSplit:
    """Kernels of each step range, and what belongs to none."""

    by_step: list[
        Sequence[DeviceOp]
    ]  # each step's ops: rows of the trace's table (aorta/timeline/op_table.py)
    by: str  # "launch" or "device start": the time held against the step ranges
    before_window: int  # kernels launched before the window (no launch, correlation id below the first)
    outside: int  # kernels whose launch (or device start) is in no step's range
    by_device_start: int = 0  # kernels without a recorded launch in a trace with launches, placed by start
    # per step: how its ops were placed ("correlation", "flow", "device start") -> how many
    links: tuple[dict[str, int], ...] = ()
    # per step: launch calls in its range that no device op answers (the profiler lost their kernels)
    missing: tuple[int, ...] = ()
    # what each step is called in notes: N of ProfilerStep#N where known (aorta trace figures), else its place
    numbers: tuple[int, ...] = ()

    def number(self, i: int) -> int:
        return self.numbers[i] if i < len(self.numbers) else i

    @property
    def total(self) -> int:
        return sum(len(ks) for ks in self.by_step) + self.before_window + self.outside

    @property
    def what(self) -> str:
        """ "kernels", or "device ops" where copies or memsets are among them."""
        kernels = all(bool((column(ks, "category") == 0).all()) for ks in self.by_step if len(ks))
        return "kernels" if kernels else "device ops"

    @property
    def left_out(self) -> int:
        return self.before_window + self.outside

    @property
    def empty_steps(self) -> list[int]:
        return [self.number(i) for i, ks in enumerate(self.by_step) if not ks]

    def step_notes(self) -> list[str]:
        """Per step, what is not plain: ops linked by flow events or placed by device start, launches that
        no device op answers."""
        out = []
        for i, links in enumerate(self.links):
            said = []
            if links.get("flow"):
                said.append(f"{links['flow']} ops linked to their launch by flow events (no correlation id)")
            if links.get(DEVICE_START):
                said.append(f"{links[DEVICE_START]} ops with no launch in the trace, placed by device start")
            if i < len(self.missing) and self.missing[i]:
                said.append(
                    f"{self.missing[i]} kernel launches with no kernel in the trace (the profiler lost their "
                    "records: the step's figures miss that work)"
                )
            if said:
                out.append(f"step {self.number(i)}: " + ", ".join(said))
        return out

    def note(self) -> str | None:
        """What the per-step figures leave out, and how kernels were placed, in a sentence; None when all
        went by their launch's correlation id and every step launched some."""
        left = []
        if self.before_window:
            left.append(
                f"{self.before_window} of {self.total} {self.what} launched before the profiled window (no launch "
                "in the trace)"
            )
        if self.outside:
            left.append(f"{self.outside} of {self.total} {self.what} whose {self.by} is in no step range")
        empty = self.empty_steps
        if empty:
            left.append(
                f"{len(empty)} of {len(self.by_step)} profiled steps, which launched no kernel (step {empty}), "
                "rather than zeros"
            )
        said = ["left out of the per-step figures: " + "; ".join(left)] if left else []
        if self.by_device_start:
            said.append(
                f"{self.by_device_start} of {self.total} {self.what} have no recorded launch: placed by their "
                "device start"
            )
        said += self.step_notes()
        if not said:
            return None
        return "; ".join(said) + f" (a kernel goes to the step holding its {self.by})"


def _step_of(ranges: Sequence[tuple[float, float]], times: np.ndarray) -> np.ndarray:
    """The step whose range holds each time (-1: none): the latest range starting at or before it, if the time
    is before its end."""
    order = np.array(sorted(range(len(ranges)), key=lambda i: ranges[i][0]), dtype=np.int64)
    starts = np.array([ranges[i][0] for i in order], dtype=np.float64)
    ends = np.array([ranges[i][1] for i in order], dtype=np.float64)
    j = np.searchsorted(starts, times, side="right") - 1
    inside = (j >= 0) & (times < ends[np.maximum(j, 0)]) if len(order) else np.zeros(len(times), dtype=bool)
    return np.where(inside, order[np.maximum(j, 0)] if len(order) else -1, -1)


_HOW = (
    "correlation",
    "flow",
    DEVICE_START,
)  # how an op was placed: its link (None: correlation), or its start


def split_by_step(
    kernels: Sequence[DeviceOp],
    ranges: Sequence[tuple[float, float]],
    missing_launches_us: Sequence[float] = (),
) -> StepSplit:
    """Each kernel into the step whose range holds its launch; a kernel launched before the window into
    none; one whose launch the trace does not hold by its device start (see the module docstring).
    ``missing_launches_us``: host times of launch calls no device op answers, counted per step. Read as
    columns (aorta/timeline/op_table.py): each step's ops are its rows of the table."""
    ops = OpTable.of(kernels)
    c = ops.columns
    launched = ~np.isnan(c["launch_us"])
    with_corr = launched & c["has_correlation"]
    first = c["correlation"][with_corr].min() if with_corr.any() else None
    before = (
        ~launched & c["has_correlation"] & (c["correlation"] < first)
        if first is not None
        else ~launched & False
    )
    by_start = ~launched & ~before
    times = np.where(launched, c["launch_us"], c["start_us"])
    how = np.where(launched, np.where(c["link"] == LINKS.index("flow"), 1, 0), 2)
    step = np.where(before, -1, _step_of(ranges, times))
    placed = ~before
    outside = int((placed & (step < 0)).sum())
    rows = np.flatnonzero(step >= 0)
    rows = rows[np.argsort(step[rows], kind="stable")]  # by step, each step's ops in their order
    bounds = np.searchsorted(step[rows], np.arange(len(ranges) + 1))
    steps: list[Sequence[DeviceOp]] = []
    links: list[dict[str, int]] = []
    for i in range(len(ranges)):
        mine = rows[bounds[i] : bounds[i + 1]]
        steps.append(OpRows(ops, mine))
        codes, firsts, counts = np.unique(how[mine], return_index=True, return_counts=True)
        links.append({_HOW[codes[j]]: int(counts[j]) for j in np.argsort(firsts)})  # in order of first use
    missing = np.bincount(
        (m := _step_of(ranges, np.asarray(missing_launches_us, dtype=np.float64)))[m >= 0],
        minlength=len(ranges),
    )
    return StepSplit(
        steps,
        "launch" if launched.any() else DEVICE_START,
        int(before.sum()),
        outside,
        int(by_start.sum()) if launched.any() else 0,
        tuple(links),
        tuple(int(x) for x in missing[: len(ranges)]),
    )


def gpu_lag_ms(
    ranges: Sequence[tuple[float, float]], gpu_ranges: Sequence[tuple[float, float] | None]
) -> float | None:
    """How far (ms) the profiler's GPU-side copy of a step ends after the host's step at most; None where no
    copy ends after its host step."""
    lags = [g[1] - h[1] for h, g in zip(ranges, gpu_ranges) if g is not None and g[1] > h[1]]
    return max(lags) / 1e3 if lags else None


def lag_evidence(
    split: StepSplit,
    ranges: Sequence[tuple[float, float]],
    gpu_ranges: Sequence[tuple[float, float] | None] = (),
) -> str | None:
    """Why placing ops by their device start gives wrong steps here, or None: some ops were placed that way
    and the GPU runs behind the host (ops start outside every step; the profiler's GPU-side copy of a step
    ends after the host's step)."""
    if not any(links.get(DEVICE_START) for links in split.links):
        return None
    said = []
    if split.by == DEVICE_START and split.outside:
        said.append(f"{split.outside} of {split.total} ops start outside every step")
    late = [
        split.number(i) for i, (h, g) in enumerate(zip(ranges, gpu_ranges)) if g is not None and g[1] > h[1]
    ]
    lag_ms = gpu_lag_ms(ranges, gpu_ranges)
    if lag_ms is not None:
        said.append(f"the GPU's copy of step {late} ends up to {lag_ms:.3f} ms after the host's")
    if not said:
        return None
    return (
        "ops with no launch in the trace can only be placed by device start, but the GPU runs behind the host ("
        + "; ".join(said)
        + "): per-step figures would give work to the wrong step"
    )


def span_us(kernels: Sequence[DeviceOp]) -> tuple[float, float]:
    """First start to last end of a step's kernels (its window on the device); (0, 0) for none."""
    if not kernels:
        return (0.0, 0.0)
    return (min(k.start_us for k in kernels), max(k.end_us for k in kernels))


def step_figures(
    kernels: Sequence[DeviceOp],
    ranges: Sequence[tuple[float, float]],
    steps: int,
    world_size: int,
    *,
    missing_launches_us: Sequence[float] = (),
    gpu_ranges: Sequence[tuple[float, float] | None] = (),
    step_numbers: Sequence[int] = (),
    with_timeline: bool = True,
) -> tuple[list[dict] | None, dict | None, str | None, str | None]:
    """One rank's profiled window, step by step: (``trace_analysis.analyze`` of each step's kernels, the
    comm kernels / compute intervals / windows that rank 0 matches across ranks, the reason for none, and
    what was left out: ``StepSplit.note``). The active steps are the last ``steps`` ranges the profiler
    marked; a step that launched no kernel is left out of both lists. Refused where ops placed by device
    start meet evidence that the GPU ran behind the host (``lag_evidence``; ``gpu_ranges``: the profiler's
    GPU-side copies of the same steps). ``with_timeline``: False where no figure across ranks is read (one
    trace): the timeline is None, and no step's ops are held past its own figures."""
    mine = list(ranges)[-steps:]
    if len(mine) != steps:
        return (
            None,
            None,
            (
                f"the profiler marked {len(mine)} step ranges (ProfilerStep#N) for {steps} profiled steps: "
                "kernels cannot be given to steps"
            ),
            None,
        )
    split = split_by_step(kernels, mine, missing_launches_us)
    if len(step_numbers) >= steps:  # notes name a step by its ProfilerStep#N, as the rows do
        split = replace(split, numbers=tuple(step_numbers[-steps:]))
    gpu_mine = list(gpu_ranges)[-steps:] if gpu_ranges else []
    lag = lag_evidence(split, mine, gpu_mine)
    if lag is not None:
        return None, None, lag, split.note()
    note = split.note()
    behind = gpu_lag_ms(mine, gpu_mine)
    if behind is not None:  # said, though harmless here: every op went by its launch
        said = f"the GPU ran behind the host (its copy of a step ends up to {behind:.3f} ms after the host's)"
        note = f"{note}; {said}" if note else said
    kept = [i for i, ks in enumerate(split.by_step) if ks]
    by_step = [split.by_step[i] for i in kept]
    if not by_step:
        return None, None, f"no kernel was launched in any of the {steps} profiled steps", note
    per_step = []
    for i, ks in zip(kept, by_step):
        figs = ta.analyze(ks, steps=1, n_ranks=world_size).as_dict()
        figs["step"] = i  # the step's place among the profiled steps (an empty one keeps its number)
        figs["linked_by"] = dict(split.links[i])
        figs["launches_without_kernel"] = split.missing[i]
        per_step.append(figs)
    if not with_timeline:
        return per_step, None, None, note
    timeline = {
        "comm": comm_kernels(by_step),
        "compute_us": [
            overlap.union((k.start_us, k.end_us) for k in ks if k.kind == ta.COMPUTE) for ks in by_step
        ],
        "copy_us": [
            overlap.union((k.start_us, k.end_us) for k in ks if k.kind == ta.MEMORY) for ks in by_step
        ],
        "window_us": [span_us(ks) for ks in by_step],
    }
    return per_step, timeline, None, note
