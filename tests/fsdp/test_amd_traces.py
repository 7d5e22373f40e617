"""aorta's trace readers on real traces recorded on AMD GPUs (pure: no torch).

The five traces live in ``../shared/amd_traces/`` beside the checkout (or where ``AORTA_AMD_TRACES`` points),
with their sources in its README; they are not copied into the project, and every test here skips, saying
so, where the folder is absent. Each expected value is computed in the test itself from the trace's own
events (json and plain Python: kernels, their launches linked by ``args.correlation``, the profiler's step
ranges), never with aorta's code. Holistic Trace Analysis assigns kernels to iterations the same way (by
the step range holding the kernel's launch), but rounds timestamps to whole µs.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from decimal import Decimal
from pathlib import Path

import amd_traces
import pytest

from aorta.fsdp import collective_match as cm
from aorta.fsdp import trace_analysis as ta
from aorta.fsdp.profiled_steps import split_by_step, step_figures
from aorta.fsdp.rank_figures import kernel_figures
from aorta.fsdp.rank_result import RankResult
from aorta.timeline.profiler_steps import step_ranges
from aorta.timeline.trace_events import load_trace

AMD_TRACES = amd_traces.folder()
MI250 = "hta_mi250_minitoy_train_ROCm6_2_kineto.json.gz"
MI350X = "rocm_aorta_smci350-zts-gtu-c6-25_200691.1758927066581847260.pt.trace.json"
MI300X_RCCL = "tracelens_mi300_resnet_act_checkpoint.json.gz"
MI300X_ONE_GPU = "tracelens_mi300_ddp_resnet18_no_pool_train_resnet18.json.gz"
MI210 = "tracelens_mi210_gpu_only_trace.json.gz"
# file: (kernels, ProfilerStep ranges), as the folder's README lists them
TRACES = {MI250: (14, 2), MI350X: (20, 2), MI300X_RCCL: (2995, 3), MI300X_ONE_GPU: (2360, 0), MI210: (562, 0)}
# aorta works in ms from absolute µs timestamps (~4e12 µs here): float64 keeps each to about 0.5 ns, so a
# union of a few kernels agrees to within 10 ns.
TOL_MS = 1e-5
DTYPE_BYTES = {"BFloat16": 2, "Long": 8}  # the dtypes the MI300X trace's RCCL kernels carry


class Trace:
    """One trace read twice: raw events (json, for the expected values) and through aorta's readers."""

    def __init__(self, path: Path):
        if not path.is_file():
            pytest.skip(amd_traces.absent(path))
        raw = path.read_bytes()
        self.events = json.loads(gzip.decompress(raw) if path.name.endswith(".gz") else raw)["traceEvents"]
        self.doc = load_trace(path)
        self.ops = ta.parse_chrome_trace(self.doc)  # kernels, copies and memsets
        self.kernels = [k for k in self.ops if k.category == "kernel"]
        self.ranges = step_ranges(self.doc)

    def raw_kernels(self) -> list[dict]:
        return [e for e in self.events if e.get("ph") == "X" and e.get("cat") == "kernel"]

    def launches(self) -> dict[int, list[dict]]:
        """correlation id -> the host runtime calls carrying it."""
        out: dict[int, list[dict]] = {}
        for e in self.events:
            if e.get("ph") == "X" and e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {}):
                out.setdefault(e["args"]["correlation"], []).append(e)
        return out

    def step_ranges(self) -> list[tuple[float, float]]:
        steps = [
            (int(e["name"].split("#")[1]), e["ts"], e["ts"] + e["dur"])
            for e in self.events
            if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
        ]
        return [(s, e) for _, s, e in sorted(steps)]


_cache: dict[Path, Trace] = {}


def trace(path: Path) -> Trace:
    """The trace at ``path`` (a real trace, or its copy without host ops: tests/amd_traces.py), read once per
    process."""
    if path not in _cache:
        _cache[path] = Trace(path)
    return _cache[path]


@pytest.fixture(scope="module", params=amd_traces.EVENTS)
def mi300x(request, amd_trace) -> Trace:
    """The MI300X RCCL trace without its host ops in the fast tier, as written in the slow tier."""
    return trace(amd_trace(MI300X_RCCL, request.param))


def union_us(intervals) -> list[list[float]]:
    out: list[list[float]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length_us(intervals) -> float:
    return sum(e - s for s, e in union_us(intervals))


def overlap_us(a, b) -> float:
    """|A ∩ B|: every pair of pieces of the two unions, clipped."""
    return sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in union_us(a) for s2, e2 in union_us(b))


def span(e: dict) -> tuple[float, float]:
    return (e["ts"], e["ts"] + e["dur"])


def is_rccl(e: dict) -> bool:
    return "nccl" in e["name"].lower()


def launched_by_step(t: Trace) -> tuple[list[list[dict]], int]:
    """(raw kernels of each step range, by the range holding their launch; kernels with no launch)."""
    launches, ranges = t.launches(), t.step_ranges()
    by_step: list[list[dict]] = [[] for _ in ranges]
    before = 0
    for e in t.raw_kernels():
        calls = launches.get(e["args"]["correlation"])
        if not calls:
            before += 1
            continue
        at = calls[0]["ts"]
        (i,) = [i for i, (s, end) in enumerate(ranges) if s <= at < end]  # every launch is in one step here
        by_step[i].append(e)
    return by_step, before


# ---------------------------------------------------------------------- all five traces
@pytest.mark.parametrize(("name", "events"), [p for name in TRACES for p in amd_traces.tiers(name)])
def test_every_amd_trace_is_read_with_every_kernel_and_step_range(name, events, amd_trace):
    t = trace(amd_trace(name, events))
    kernels, steps = TRACES[name]
    assert len(t.raw_kernels()) == kernels and len(t.kernels) == kernels
    assert len(t.ranges) == steps and t.ranges == t.step_ranges()
    # every kernel whose correlation id has a runtime call carries that call's time as its launch
    launches = t.launches()
    linked = sum(1 for e in t.raw_kernels() if e["args"].get("correlation") in launches)
    assert sum(1 for k in t.kernels if k.launch_us is not None) == linked
    assert sorted(k.launch_us for k in t.kernels if k.launch_us is not None) == pytest.approx(
        sorted(
            min(c["ts"] for c in launches[e["args"]["correlation"]])
            for e in t.raw_kernels()
            if e["args"].get("correlation") in launches
        )
    )


@pytest.mark.parametrize(("name", "events"), [*amd_traces.tiers(MI300X_ONE_GPU), *amd_traces.tiers(MI210)])
def test_traces_without_steps_or_collectives_give_compute_figures_and_say_why_not_more(
    name, events, amd_trace
):
    path = amd_trace(name, events)
    t = trace(path)
    s = ta.analyze(t.kernels, steps=1, n_ranks=1)
    # the times as the text wrote them (Decimal): the MI210 trace's ts, 6.9e12 µs, are past a float's ns, and
    # summing 562 kernels read as floats is off by 5e-5 ms
    exact = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)["traceEvents"]
    kernels = [span(e) for e in exact if e.get("ph") == "X" and e.get("cat") == "kernel"]
    assert s.compute_busy_ms == pytest.approx(float(length_us(kernels) / 1000), abs=TOL_MS)
    assert s.comm_busy_ms == 0.0 and s.overlap_ratio is None and "overlap_ratio" in s.unavailable
    per_step, timeline, reason, _ = step_figures(t.kernels, t.ranges, 1, 1)
    assert per_step is None and timeline is None and "marked 0 step ranges" in reason


# ---------------------------------------------------------------------- 1. the GPU runs behind the host
def test_a_gpu_running_two_steps_behind_gets_its_kernels_by_their_launch(mi300x):
    """By device start 1493 of the 2995 kernels fell in no step and step 1 read overlap 0.000; by launch
    (HTA's way) the three steps read 0.251 / 0.249 / 0.258 and 757 kernels, launched before the window (no
    runtime call in the trace), are counted as left out."""
    by_step, before = launched_by_step(mi300x)
    expected = []
    for ks in by_step:
        comm = [span(e) for e in ks if is_rccl(e)]
        compute = [span(e) for e in ks if not is_rccl(e)]
        expected.append(overlap_us(compute, comm) / length_us(comm))
    assert before == 757 and [len(ks) for ks in by_step] == [746, 746, 746]
    assert expected == pytest.approx([0.2509, 0.2485, 0.2582], abs=5e-5)

    per_step, timeline, reason, note = step_figures(mi300x.kernels, mi300x.ranges, 3, 8)
    assert reason is None
    assert [s["overlap_ratio"] for s in per_step] == pytest.approx(expected, rel=1e-5)
    assert [sum(s["kernel_count_by_kind"].values()) for s in per_step] == [746, 746, 746]
    assert note.startswith("left out of the per-step figures: 757 of 2995 kernels launched before the")
    split = split_by_step(mi300x.kernels, mi300x.ranges)
    assert (split.by, split.before_window, split.outside, split.by_device_start) == ("launch", 757, 0, 0)


# ---------------------------------------------------------------------- 2. RCCL kernels: kind only in args
def test_rccl_generic_kernels_take_their_collective_from_args_and_unnamed_ones_are_counted(mi300x):
    rccl = [e for e in mi300x.raw_kernels() if is_rccl(e)]
    named = [e for e in rccl if "Collective name" in e["args"]]
    assert {e["name"].split("(")[0] for e in rccl} == {"ncclDevKernel_Generic"}  # the name says nothing
    assert (len(rccl), len(named)) == (17, 12)
    by_arg = {n: [e for e in named if e["args"]["Collective name"] == n] for n in ("allreduce", "broadcast")}
    assert [len(v) for v in by_arg.values()] == [6, 6]

    s = ta.analyze(mi300x.kernels, steps=3, n_ranks=8)
    assert {k: v for k, v in s.kernel_count_by_kind.items() if v and k != "compute"} == {
        "all_reduce": 6,
        "broadcast": 6,
        "other_comm": 5,
    }

    def algbw_gbps(es):  # Σ bytes / Σ kernel time (nccl-tests' algbw, GB = 1e9 B)
        size = sum(e["args"]["In msg nelems"] * DTYPE_BYTES[e["args"]["dtype"]] for e in es)
        return size / (sum(e["dur"] for e in es) * 1e-6) / 1e9

    # nccl-tests' bus factors, n = 8 (the args' "Group size"): all-reduce 2(n-1)/n, broadcast 1
    assert {e["args"]["Group size"] for e in named} == {8}
    assert s.busbw_gbps["all_reduce"] == pytest.approx(algbw_gbps(by_arg["allreduce"]) * 2 * 7 / 8)
    assert s.busbw_gbps["broadcast"] == pytest.approx(algbw_gbps(by_arg["broadcast"]))
    assert s.unavailable["busbw_gbps.other_comm"].startswith(
        "5 of 17 communication kernels name no collective"
    )


# ---------------------------------------------------------------------- 3. one stream, one sequence
def test_a_rank_with_other_args_coverage_still_matches_every_collective_on_the_stream(mi300x):
    """Rank 0's 17 RCCL kernels all run on one stream; 12 name process group "0", 5 (launched before the
    window) name none. Rank 1 here is the same kernels as a rank whose profiler gave no args at all, on
    another stream id and with its clock 2500 µs ahead: every collective must still match, one sequence."""
    rccl = sorted((e for e in mi300x.raw_kernels() if is_rccl(e)), key=lambda e: e["ts"])
    assert {e["args"]["stream"] for e in rccl} == {4}
    assert {e["args"].get("Process Group Name") for e in rccl} == {"0", None}
    rank0 = [mi300x.kernels]
    rank1 = [[ta.kernel_from_args(k.name, k.start_us + 2500.0, k.dur_us, 9, None) for k in mi300x.kernels]]
    m = cm.match({0: cm.comm_kernels(rank0), 1: cm.comm_kernels(rank1)})
    assert m.problems == []
    assert len(m.collectives) == len(rccl) == 17
    assert {c.group for c in m.collectives} == {"stream#0 (pg:0)"}
    assert m.offset_us == {0: 0.0, 1: pytest.approx(2500.0)} and m.alignment_error_us == pytest.approx(
        0, abs=1e-6
    )
    assert [c.dur_us[0] for c in m.collectives] == pytest.approx([e["dur"] for e in rccl], abs=1e-3)


def test_the_wait_transfer_split_survives_a_rank_whose_profiler_named_no_collective(mi300x):
    """The same, through every rank's per-step figures: rank 1 (rank 0's kernels, launches and steps, its clock
    2500 µs ahead, no args) must match rank 0's 12 in-step collectives, so the step is split into wait and
    transfer: no wait (the ranks are the same), and exposed transfer = |comm \\ compute| of each step."""
    by_step, _ = launched_by_step(mi300x)
    expected_ms = []
    for ks in by_step:
        comm = [span(e) for e in ks if is_rccl(e)]
        compute = [span(e) for e in ks if not is_rccl(e)]
        expected_ms.append((length_us(comm) - overlap_us(compute, comm)) / 1e3)
    ranks = two_ranks(mi300x)
    metrics, _, details = kernel_figures(ranks)
    assert "wait_vs_transfer" not in details  # split, not "all communication counted as transfer"
    align = details["clock_alignment"]
    assert align["problems"] == [] and align["matched_collectives"] == sum(
        1 for ks in by_step for e in ks if is_rccl(e)
    )
    by_name = {m.name: m for m in metrics}
    assert by_name["exposed_wait_ms_worst_rank"].samples == pytest.approx((0.0, 0.0, 0.0), abs=TOL_MS)
    assert by_name["exposed_transfer_ms_worst_rank"].samples == pytest.approx(tuple(expected_ms), abs=TOL_MS)


# ---------------------------------------------------------------------- 4. an empty last step
def test_an_empty_last_step_is_left_out_of_the_medians_not_counted_as_zero():
    """The MI250 trace's second ProfilerStep range launched nothing: the step's compute busy is the first
    step's alone, not the median of it and a zero (half of it)."""
    t = trace(AMD_TRACES / MI250)
    launches, ranges = t.launches(), t.step_ranges()
    in_step = [
        [e for e in t.raw_kernels() if s <= launches[e["args"]["correlation"]][0]["ts"] < end]
        for s, end in ranges
    ]
    assert [len(ks) for ks in in_step] == [14, 0]
    expected_ms = length_us(span(e) for e in in_step[0]) / 1e3

    per_step, timeline, reason, note = step_figures(t.kernels, t.ranges, 2, 1)
    assert reason is None and len(per_step) == 1 and len(timeline["window_us"]) == 1
    assert note == (
        "left out of the per-step figures: 1 of 2 profiled steps, which launched no kernel (step [1]), rather "
        "than zeros (a kernel goes to the step holding its launch)"
    )
    metrics, _, _ = kernel_figures([RankResult(rank=0, per_step=per_step, timeline=timeline)])
    by_name = {m.name: m for m in metrics}
    assert by_name["compute_busy_ms_worst_rank"].value == pytest.approx(expected_ms, abs=TOL_MS)
    assert len(by_name["compute_busy_ms_worst_rank"].samples) == 1


# ---------------------------------------------------------------------- 5. ROCm 7 memsets as kernels
def test_rocm7_memsets_recorded_as_kernels_are_not_compute():
    """rocprofiler-sdk records hipMemsetAsync's fill kernel as a kernel: it is memory work, not compute."""
    t = trace(AMD_TRACES / MI350X)
    launches = t.launches()
    memset = {c for c, calls in launches.items() if any(x["name"] == "hipMemsetAsync" for x in calls)}
    compute = [e for e in t.raw_kernels() if e["args"]["correlation"] not in memset]
    assert len(t.raw_kernels()) - len(compute) == 2
    s = ta.analyze(t.kernels, steps=2, n_ranks=1)
    assert s.compute_busy_ms == pytest.approx(length_us(span(e) for e in compute) / 1e3, abs=TOL_MS)
    assert (s.kernel_count_by_kind["compute"], s.kernel_count_by_kind["memory"]) == (18, 2)
    per_step, _, reason, note = step_figures(t.kernels, t.ranges, 2, 1)
    assert reason is None and note is None
    ranges = t.step_ranges()
    for (start, end), step in zip(ranges, per_step):
        mine = [e for e in compute if start <= launches[e["args"]["correlation"]][0]["ts"] < end]
        assert step["compute_busy_ms"] == pytest.approx(length_us(span(e) for e in mine) / 1e3, abs=TOL_MS)


def two_ranks(trace, ahead: float = 2500.0) -> list[RankResult]:
    """The trace as rank 0 and, 2.5 ms ahead on another clock with no collective args, as rank 1 (same
    kernels): each rank's per-step figures and timeline, as the FSDP record reads them."""
    rank1 = [
        dataclasses.replace(
            k,
            start_us=k.start_us + ahead,
            launch_us=None if k.launch_us is None else k.launch_us + ahead,
            stream=9,
            collective=None,
            process_group=None,
            message_bytes=None,
            group_size=None,
        )
        for k in trace.kernels
    ]
    ranks = []
    for rank, kernels, shift in ((0, trace.kernels, 0.0), (1, rank1, ahead)):
        ranges = [(s + shift, e + shift) for s, e in trace.ranges]
        per_step, timeline, reason, _ = step_figures(kernels, ranges, 3, 2)
        assert reason is None
        ranks.append(RankResult(rank=rank, per_step=per_step, timeline=timeline))
    return ranks
