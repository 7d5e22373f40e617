"""FSDP figures on asymmetric known-answer data: every rank and step different, so the right answer differs
from each plausible wrong one (best rank for worst, mean for median, the last rank for rank 0, overlapped for
exposed, all collectives for one step's)."""

from __future__ import annotations

import pytest

from aorta.fsdp import trace_analysis as ta
from aorta.fsdp import wait_transfer as wt
from aorta.fsdp.collective_match import Collective, Matching
from aorta.fsdp.figures import build_result
from aorta.fsdp.rank_figures import kernel_figures
from aorta.fsdp.rank_result import RankResult
from aorta.record.rank_breakdown import worst_per_step
from aorta.timeline.device_op import DeviceOp


def _step(compute, overlapped, exposed, idle, busbw=None):
    comm = overlapped + exposed
    return {
        "compute_busy_ms": compute,
        "overlapped_ms": overlapped,
        "exposed_comm_ms": exposed,
        "comm_busy_ms": comm,
        "idle_ms": idle,
        "window_ms": compute + exposed + idle,
        "busbw_gbps": {"all_gather": busbw} if busbw is not None else {},
    }


# rank 0: three steps, skewed (median != mean); exposed != overlapped in every step
RANK0_STEPS = [
    _step(10.0, 1.0, 4.0, 1.0, 100.0),
    _step(12.0, 2.0, 5.0, 2.0, 200.0),
    _step(30.0, 9.0, 20.0, 3.0, 50.0),
]
RANK1_STEPS = [
    _step(15.0, 3.0, 2.0, 1.0, 150.0),
    _step(5.0, 1.0, 8.0, 1.0, 100.0),
    _step(40.0, 2.0, 1.0, 1.0, 80.0),
]


def _results(ranks: list[dict]) -> list[RankResult]:
    """The ranks' results as they arrive on rank 0 (dicts), through the one boundary."""
    return [RankResult.from_dict(r) for r in ranks]


def _baseline(ranks: list[dict], world_size: int, backend: str = "cuda", comm_library: str = "nccl"):
    """``build_result`` for the baseline scenario at seq_len 8, the ranks through the one boundary."""
    return build_result(
        {"id": "baseline"},
        _results(ranks),
        world_size=world_size,
        seq_len=8,
        backend=backend,
        comm_library=comm_library,
        config={},
    )


def _by_name(metrics):
    return {m.name: m for m in metrics}


def test_one_rank_exposed_transfer_is_its_exposed_communication_and_the_figure_is_the_median_step():
    metrics, unavailable, details = kernel_figures(_results([{"rank": 0, "per_step": RANK0_STEPS}]))
    m = _by_name(metrics)
    # one rank alone: all its exposed communication is exposed transfer (not its overlapped time)
    assert list(m["exposed_transfer_ms_worst_rank"].samples) == [4.0, 5.0, 20.0]
    assert m["exposed_transfer_ms_worst_rank"].value == 5.0  # the median step; the mean would be 9.67
    assert list(m["overlapped_ms_worst_rank"].samples) == [1.0, 2.0, 9.0]
    assert m["overlapped_ms_worst_rank"].value == 2.0  # mean 4
    assert m["compute_busy_ms_worst_rank"].value == 12.0  # mean 17.33
    assert m["overlap_ratio_worst_rank"].value == pytest.approx(2.0 / 7.0)  # steps 0.2, 0.286, 0.31
    assert m["all_gather_busbw_gbps_worst_rank"].value == 100.0  # 100, 200, 50: mean 116.7
    # the rest of the breakdown: compute alone = compute busy - overlapped; no peers, so no wait
    assert list(m["compute_only_ms_worst_rank"].samples) == [9.0, 10.0, 21.0]
    assert list(m["idle_ms_worst_rank"].samples) == [1.0, 2.0, 3.0]
    assert list(m["exposed_wait_ms_worst_rank"].samples) == [0.0, 0.0, 0.0]
    e = m["exposed_transfer_ms_worst_rank"]
    assert (e.unit, e.higher_is_better) == ("ms/step", False) and "worst rank per step" in e.source
    assert m["overlap_ratio_worst_rank"].higher_is_better is True
    steps = details["per_rank_steps"]["0"]
    assert [(st["rank"], st["step"], st["window_ms"]) for st in steps] == [
        (0, 0, 15.0),
        (0, 1, 19.0),
        (0, 2, 53.0),
    ]
    assert [st["transfer_ms"] for st in steps] == [5.0, 7.0, 29.0]
    assert set(unavailable) == {"reduce_scatter_busbw_gbps_worst_rank", "all_reduce_busbw_gbps_worst_rank"}


def test_two_ranks_each_step_takes_the_worst_rank_not_the_best():
    ranks = [{"rank": 0, "per_step": RANK0_STEPS}, {"rank": 1, "per_step": RANK1_STEPS}]
    metrics, _, details = kernel_figures(_results(ranks))  # no timelines: each rank's steps alone, not split
    m = _by_name(metrics)
    assert list(m["compute_busy_ms_worst_rank"].samples) == [15.0, 12.0, 40.0]  # highest; best: 10, 5, 30
    assert list(m["all_gather_busbw_gbps_worst_rank"].samples) == [
        100.0,
        100.0,
        50.0,
    ]  # lowest; best 150 200 80
    assert list(m["exposed_transfer_ms_worst_rank"].samples) == [4.0, 8.0, 20.0]  # highest; best 2, 5, 1
    assert m["overlap_ratio_worst_rank"].samples == pytest.approx([1 / 5, 1 / 9, 9 / 29])  # lowest
    assert "not split" in details["wait_vs_transfer"]


def test_worst_of_ranks_step_by_step():
    per_rank = [[1.0, 5.0, 3.0, None], [2.0, 4.0, 6.0, 1.0]]
    assert worst_per_step(per_rank, higher_is_better=True) == [
        1.0,
        4.0,
        3.0,
    ]  # a step some rank lacks is left out
    assert worst_per_step(per_rank, higher_is_better=False) == [2.0, 5.0, 6.0]


def _rank(rank, step_ms, *, window, compute, comm, overlapped, slowdown):
    return {
        "rank": rank,
        "step_ms": step_ms,
        "samples_per_step": 4,
        "peak_memory_bytes": None,
        "overlap": {
            "window_ms": window,
            "compute_busy_ms": compute,
            "comm_busy_ms": comm,
            "overlapped_ms": overlapped,
            "steps": 2,
        },
        "overlap_reason": None,
        "compute_slowdown_ratio": slowdown,
        "slowdown_reason": None,
    }


def test_rank_0_leads_the_notes_the_worst_slowdown_is_the_highest_and_step_time_is_the_median_round():
    ranks = [
        _rank(2, [30.0, 31.0, 90.0], window=100.0, compute=50.0, comm=30.0, overlapped=10.0, slowdown=1.05),
        _rank(0, [29.0, 33.0, 80.0], window=80.0, compute=60.0, comm=20.0, overlapped=15.0, slowdown=1.4),
        _rank(1, [28.0, 30.0, 85.0], window=90.0, compute=40.0, comm=10.0, overlapped=5.0, slowdown=1.1),
    ]
    step_ms, record = _baseline(ranks, 3)
    assert step_ms == [30.0, 33.0, 90.0]  # slowest rank per round
    m = record.metrics
    assert m["step_ms"].value == 33.0  # the median round; the mean would be 51
    # rank 0's own window: busy 60 + 20 - 15 = 65 of 80 ms, idle 15; 40 ms per profiled step
    assert m["gpu_idle_share_rank0"].value == pytest.approx(15.0 / 80.0)
    assert m["profiled_step_ms_rank0"].value == pytest.approx(40.0)
    assert m["compute_slowdown_ratio_worst_rank"].value == pytest.approx(1.4)  # highest of 1.05, 1.4, 1.1


def test_compute_slowdown_is_weighted_over_the_matched_kernels_only():
    def K(name: str, start_us: float, dur_us: float) -> DeviceOp:
        return DeviceOp(name, 0, start_us, dur_us)

    ref = [K("gemm", 0, 10), K("gemm", 20, 10), K("add", 40, 5), K("ref_only", 50, 5)]
    run = [K("gemm", 0, 12), K("gemm", 30, 14), K("add", 50, 5)]
    value, reason = ta.compute_slowdown(run, ref)
    # matched: gemm (ref 20 µs, mean 13 / 10) and add (5 µs, 5 / 5) = 25 of the reference's 30 µs
    assert reason is None
    assert value == pytest.approx((20 * 13 / 10 + 5 * 5 / 5) / 25)  # / 30 would read 1.033


def _collective(step, index, starts):
    return Collective(
        "g", index, "all_gather", step, dict(enumerate(starts)), dict.fromkeys(range(len(starts)), 1.0)
    )


def test_the_stragglers_skew_is_the_median_over_its_own_steps_collectives():
    m = Matching(
        ranks=[0, 1],
        collectives=[
            _collective(0, 0, [0.0, 100.0]),  # rank 1 last by 100 µs
            _collective(0, 1, [0.0, 300.0]),  # rank 1 last by 300 µs
            _collective(0, 2, [50.0, 0.0]),  # rank 0 last
            _collective(1, 3, [0.0, 1000.0]),  # step 1: rank 1 last by 1 ms
        ],
    )
    s0, s1 = wt.stragglers(m, steps=2)
    assert (s0.step, s0.rank, s0.last_in, s0.collectives) == (0, 1, 2, 3)
    assert s0.median_skew_ms == pytest.approx(0.2)  # over all collectives rank 1 was last in: 0.3
    assert (s1.step, s1.rank, s1.median_skew_ms) == (1, 1, pytest.approx(1.0))


def test_the_straggler_is_the_rank_last_most_often_and_a_step_without_collectives_has_none():
    m = Matching(
        ranks=[0, 1],
        collectives=[
            _collective(0, 0, [200.0, 0.0]),  # rank 0 last by 200 µs
            _collective(0, 1, [400.0, 0.0]),  # rank 0 last by 400 µs
            _collective(0, 2, [0.0, 900.0]),  # rank 1 last once
            _collective(2, 3, [0.0, 50.0]),  # step 1 has no matched collective
        ],
    )
    s0, s1, s2 = wt.stragglers(m, steps=3)
    assert (s0.rank, s0.last_in, s0.median_skew_ms) == (0, 2, pytest.approx(0.3))  # not the higher rank
    assert s1 is None
    assert (s2.step, s2.rank, s2.median_skew_ms) == (2, 1, pytest.approx(0.05))


def test_worst_per_step_skips_a_step_some_rank_lacks_and_goes_on():
    per_rank = {
        0: [
            wt.RankStep(0, i, 1.0, ov, 1.0, 0.0, 0.0, tr, 0.0, 4.0)
            for i, (ov, tr) in enumerate([(1, 2), (0, 0), (3, 4)])
        ],
        1: [
            wt.RankStep(1, i, 1.0, ov, 1.0, 0.0, 0.0, tr, 0.0, 4.0)
            for i, (ov, tr) in enumerate([(1, 4), (1, 2), (1, 4)])
        ],
    }
    # step 1: rank 0 moved nothing (overlap ratio undefined): left out, and step 2 still counts
    assert wt.worst_per_step(per_rank, "overlap_ratio", higher_is_better=True) == [0.25, 0.25]
    assert wt.worst_per_step({}, "overlap_ratio", higher_is_better=True) == []


# Each figure's unit, direction and whether the gate judges it: a flipped direction turns SLOWER into FASTER,
# a figure judged by mistake gates a run on launch skew.
FSDP_FIGURES = {
    "step_ms": ("ms", False, True),
    "samples_per_s": ("samples/s", True, True),
    "tokens_per_s": ("tokens/s", True, True),
    "peak_memory_bytes": ("bytes", False, True),
    "overlap_ratio_worst_rank": ("ratio", True, False),  # rises when comm slows: reported, not judged
    "exposed_transfer_ms_worst_rank": ("ms/step", False, True),
    "exposed_wait_ms_worst_rank": ("ms/step", False, False),
    "exposed_comm_ms_worst_rank": ("ms/step", False, True),
    "transfer_ms_worst_rank": ("ms/step", False, True),  # the link's cost, hidden or not: judged
    "comm_busy_ms_worst_rank": ("ms/step", False, False),
    "overlapped_ms_worst_rank": ("ms/step", True, False),
    "compute_only_ms_worst_rank": ("ms/step", False, False),
    "idle_ms_worst_rank": ("ms/step", False, False),
    "compute_busy_ms_worst_rank": ("ms/step", False, True),
    "all_gather_busbw_gbps_worst_rank": ("GB/s", True, False),
    "gpu_idle_share_rank0": ("ratio", False, False),
    "profiled_step_ms_rank0": ("ms", False, False),
    "compute_slowdown_ratio_worst_rank": ("ratio", False, True),
}


def test_every_fsdp_figure_has_its_unit_direction_and_judgement():
    ranks = [
        _rank(0, [29.0, 33.0, 80.0], window=80.0, compute=60.0, comm=20.0, overlapped=15.0, slowdown=1.4),
        _rank(1, [28.0, 30.0, 85.0], window=90.0, compute=40.0, comm=10.0, overlapped=5.0, slowdown=1.1),
    ]
    for r, steps, peak in zip(ranks, (RANK0_STEPS, RANK1_STEPS), (1000, 3000)):
        r.update(per_step=steps, peak_memory_bytes=peak)
    _, record = _baseline(ranks, 2)
    got = {m.name: (m.unit, m.higher_is_better, m.judged) for m in record.metrics.values()}
    assert got == FSDP_FIGURES
    # the per-step parts of the step are marked so (the gate bounds their MDE by their share of the step)
    parts = {m.name for m in record.metrics.values() if m.part_of_step}
    assert parts == {n for n, (unit, *_) in FSDP_FIGURES.items() if unit == "ms/step"}
    m = record.metrics
    assert m["peak_memory_bytes"].value == 3000  # the highest rank's
    for name in ("peak_memory_bytes", "compute_slowdown_ratio_worst_rank"):  # one value per run
        assert "one value per run" in m[name].source and "judged as the run's figure" in m[name].source
    for name in ("gpu_idle_share_rank0", "profiled_step_ms_rank0"):
        assert (
            m[name].source.startswith("rank 0, over its whole profiled window")
            and "not judged" in m[name].source
        )
    assert record.unavailable == {
        "reduce_scatter_busbw_gbps_worst_rank": "no reduce_scatter kernels with message sizes in the profiled steps",
        "all_reduce_busbw_gbps_worst_rank": "no all_reduce kernels with message sizes in the profiled steps",
        "telemetry": "no rank recorded telemetry",  # these ranks' results carry none
    }
    cpu_ranks = [dict(r, peak_memory_bytes=None) for r in ranks]
    _, cpu = _baseline(cpu_ranks, 2, backend="cpu", comm_library="gloo")
    assert cpu.unavailable["peak_memory_bytes"] == "CPU backend: no device memory statistics"


_IDLE_NOTE = ": communication there had the GPU to itself, so the overlap ratio says little about how well it is hidden"


def test_reading_notes_at_each_threshold_word_for_word():
    from aorta.fsdp.figures import reading_notes

    # idle share 0.3 and enqueue 0.9 x step (median of 9.0, 8.0, 9.5) and profiled +25%: each exactly at its bound
    assert reading_notes(
        {"step_ms": 10.0, "gpu_idle_share": 0.3, "profiled_step_ms": 12.5}, [9.0, 8.0, 9.5]
    ) == [
        "host-bound: rank 0 took 9.0 ms to enqueue a 10.0 ms step and the GPU ran no kernel for 30% of the "
        "profiled window; a larger batch or model (--aorta-override) moves the bound to the GPU" + _IDLE_NOTE,
        "profiled steps took 12.5 ms against 10.0 ms timed (+25%): the profiler's host cost slowed them, and the "
        "kernel-timestamp figures describe the slower steps",
    ]
    assert reading_notes({"step_ms": 10.0, "gpu_idle_share": 0.3}, [8.9]) == [
        "the GPU ran no kernel for 30% of the profiled window" + _IDLE_NOTE
    ]
    assert reading_notes({"step_ms": 10.0, "gpu_idle_share": 0.29, "profiled_step_ms": 12.4}, [10.0]) == []


def test_the_record_of_a_gpu_run_and_of_a_cpu_run_field_by_field():
    ranks = [
        _rank(1, [28.0, 30.0, 85.0], window=90.0, compute=40.0, comm=10.0, overlapped=5.0, slowdown=None),
        _rank(0, [29.0, 33.0, 80.0], window=80.0, compute=20.0, comm=10.0, overlapped=6.0, slowdown=1.4),
    ]
    ranks[1].update(stream_busy_ms={"7": 20.0, "13": 10.0}, host_enqueue_ms=[31.0, 33.0, 32.0], timeline=[1])
    ranks[1]["slowdown_reason"] = "rank 1: no compute-only reference"  # rank 0 (ranks come in any order)
    scenario, config = {"id": "baseline", "layers": 2}, {"batch": 4}
    kw = dict(world_size=2, seq_len=8, comm_library="nccl", config=config)
    _, rec = build_result(scenario, _results(ranks), backend="cuda", **kw)
    assert (rec.workload, rec.backend, rec.timing_method, rec.clock) == (
        "fsdp_baseline",
        "cuda",
        "events",
        "device_events",
    )
    assert rec.headline_metric == "step_ms"
    # rank 0's window: busy 20 + 10 - 6 = 24 of 80 ms, idle share 0.7; enqueue 32 ms of a 33 ms step: host-bound
    assert rec.reading_notes == [
        "host-bound: rank 0 took 32.0 ms to enqueue a 33.0 ms step and the GPU ran no kernel for 70% of the "
        "profiled window; a larger batch or model (--aorta-override) moves the bound to the GPU" + _IDLE_NOTE,
    ]
    assert rec.unavailable["compute_slowdown_ratio_worst_rank"] == "rank 1: no compute-only reference"
    d = rec.details
    assert {k: d[k] for k in ("category", "scenario", "comm_library", "world_size", "step_ms_is")} == {
        "category": "training",
        "scenario": scenario,
        "comm_library": "nccl",
        "world_size": 2,
        "step_ms_is": "slowest rank per round",
    }
    assert (d["samples_per_step"], d["tokens_per_step"], d["config"]) == (8, 64, config)
    assert (d["stream_busy_ms"], d["streams_with_work"]) == ({"7": 20.0, "13": 10.0}, 2)
    assert [r["rank"] for r in d["per_rank"]] == [0, 1] and "timeline" not in d["per_rank"][0]
    assert d["per_rank"][0]["host_enqueue_ms"] == [31.0, 33.0, 32.0]

    ranks[1]["slowdown_reason"] = None
    ranks[1].pop("stream_busy_ms")
    _, cpu = build_result(scenario, _results(ranks), backend="cpu", **kw)
    assert (cpu.clock, cpu.reading_notes) == ("host_clock", [])  # on the CPU every op runs as it is issued
    assert cpu.unavailable["compute_slowdown_ratio_worst_rank"] == "no compute-only reference on every rank"
    assert (cpu.details["stream_busy_ms"], cpu.details["streams_with_work"]) == (None, None)


@pytest.mark.parametrize(("window_ms", "has_window_figures"), [(0.0, False), (0.5, True)])
def test_window_figures_need_a_window_longer_than_zero(window_ms, has_window_figures):
    r = _rank(0, [1.0], window=window_ms, compute=0.25, comm=0.0, overlapped=0.0, slowdown=1.0)
    _, rec = build_result(
        {"id": "x"}, _results([r]), world_size=1, seq_len=1, backend="cuda", comm_library="nccl", config={}
    )
    assert ("gpu_idle_share_rank0" in rec.metrics) is has_window_figures
    if has_window_figures:
        assert rec.metrics["gpu_idle_share_rank0"].value == pytest.approx(0.5)


def test_a_rank_without_collectives_or_offset_keeps_its_clock_and_counts_unmatched_kernels_as_transfer():
    from aorta.fsdp.collective_match import CommKernel

    # step 0: compute [1000, 3000) µs, an unmatched kernel [2500, 3500); step 1: compute only. No offset for rank 5.
    unmatched = [
        CommKernel("all_gather", "pg:0", 2500.0, 3500.0, 0),
        CommKernel("all_gather", "pg:0", 9e3, 9.5e3, 7),
    ]
    steps = wt.rank_steps(
        5,
        Matching([0, 5]),
        [[(1000.0, 3000.0)], [(5000.0, 5500.0)]],
        [(0.0, 4000.0), (4000.0, 6000.0)],
        unmatched,
    )
    assert [s.as_dict() for s in steps] == [
        {
            "rank": 5,
            "step": 0,
            "compute_only_ms": 1.5,
            "overlapped_ms": 0.5,
            "exposed_transfer_ms": 0.5,
            "exposed_wait_ms": 0.0,
            "idle_ms": 1.5,
            "transfer_ms": 1.0,
            "wait_ms": 0.0,
            "window_ms": 4.0,
            "overlapped_wait_ms": 0.0,
            "copy_only_ms": 0.0,
            "exposed_comm_ms": 0.5,
            "overlap_ratio": 0.5,
        },
        {
            "rank": 5,
            "step": 1,
            "compute_only_ms": 0.5,
            "overlapped_ms": 0.0,
            "exposed_transfer_ms": 0.0,
            "exposed_wait_ms": 0.0,
            "idle_ms": 1.5,
            "transfer_ms": 0.0,
            "wait_ms": 0.0,
            "window_ms": 2.0,
            "overlapped_wait_ms": 0.0,
            "copy_only_ms": 0.0,
            "exposed_comm_ms": 0.0,
            "overlap_ratio": None,
        },
    ]


def test_kernel_figures_name_the_first_rank_without_profiled_steps_and_its_reason():
    ranks = [
        {"rank": 0, "per_step": RANK0_STEPS},
        {"rank": 3, "per_step": [], "per_step_reason": "profiler off"},
        {"rank": 5, "per_step": None, "overlap_reason": "no trace"},
    ]
    metrics, unavailable, details = kernel_figures(_results(ranks))
    assert (metrics, details) == ([], {}) and set(unavailable.values()) == {"rank 3: profiler off"}
    _, unavailable, _ = kernel_figures(
        _results([{"rank": 2, "per_step": []}, {"rank": 4, "per_step": [], "per_step_reason": "x"}])
    )
    assert set(unavailable.values()) == {"rank 2: no profiled steps"}


def _timeline(comm):
    return {"comm": comm, "compute_us": [[(0.0, 50.0)]] * 3, "window_us": [(0.0, 400.0)] * 3}


def test_kernel_figures_without_timelines_say_why_wait_is_not_split_and_name_each_source():
    from aorta.fsdp.rank_figures import WAIT_NOTE

    ranks = [{"rank": 0, "per_step": RANK0_STEPS}, {"rank": 1, "per_step": RANK1_STEPS}]
    metrics, _, details = kernel_figures(_results(ranks))
    assert details["aggregate"] == "worst rank at each profiled step; every rank's steps in per_rank_steps"
    assert details["wait_vs_transfer"] == (
        "not split: no per-step kernel timelines from every rank (all communication counted as transfer)"
    )
    assert "clock_alignment" not in details
    m = _by_name(metrics)
    assert m["compute_busy_ms_worst_rank"].source == "worst rank per step"
    assert m["all_gather_busbw_gbps_worst_rank"].source == f"bytes / kernel time, {WAIT_NOTE}"
    # one rank with a timeline: nothing to match across ranks, and nothing to say about it
    from aorta.fsdp.collective_match import CommKernel

    _, _, alone = kernel_figures(
        _results([{**ranks[0], "timeline": _timeline([CommKernel("all_gather", "pg:a", 1, 2, 0)])}])
    )
    assert "clock_alignment" not in alone and "wait_vs_transfer" not in alone


def test_kernel_figures_with_no_communication_at_all():
    ranks = [{"rank": r, "per_step": [_step(10.0 + r, 0.0, 0.0, 1.0)] * 2} for r in (0, 1)]
    _, unavailable, _ = kernel_figures(_results(ranks))
    assert unavailable["overlap_ratio_worst_rank"] == "no communication kernels in the profiled steps"


def test_kernel_figures_when_only_some_groups_match_leave_every_rank_unsplit_and_list_each_problem():
    from aorta.fsdp.collective_match import CommKernel as K

    comm0 = [
        K("all_gather", "pg:a", 100, 200, 0),
        K("all_gather", "pg:b", 10, 20, 0),
        K("all_gather", "pg:b", 30, 40, 0),
    ]
    comm0.append(K("all_reduce", "pg:c", 300, 310, 0))
    comm1 = [K("all_gather", "pg:a", 1120, 1200, 0), K("all_gather", "pg:b", 1010, 1020, 0)]
    ranks = [
        {"rank": 0, "per_step": RANK0_STEPS, "timeline": _timeline(comm0)},
        {"rank": 1, "per_step": RANK1_STEPS, "timeline": _timeline(comm1)},
    ]
    _, _, details = kernel_figures(_results(ranks))
    problems = [
        "pg:b: ranks ran different numbers of collectives {0: 2, 1: 1}",
        "pg:c: ranks ran different numbers of collectives {0: 1, 1: 0}",
    ]
    assert (
        details["wait_vs_transfer"]
        == f"not split: {'; '.join(problems)} (all communication counted as transfer)"
    )
    assert details["clock_alignment"] == {
        "offset_us": {"0": 0.0, "1": 1000.0},
        "alignment_error_us": 0.0,
        "matched_collectives": 1,
        "problems": problems,
    }
    assert details["stragglers"][1:] == [None, None]  # no collective in steps 1 and 2
    steps0 = details["per_rank_steps"]["0"]
    assert [(s["transfer_ms"], s["wait_ms"]) for s in steps0] == [(5.0, 0.0), (7.0, 0.0), (29.0, 0.0)]


def test_worst_skips_only_the_steps_some_rank_lacks():
    assert worst_per_step([[None, 2.0, 5.0], [1.0, 3.0, None], [4.0, 1.0, 6.0]], higher_is_better=True) == [
        1.0
    ]
    assert worst_per_step([[1.0, 2.0], [None, 3.0]], higher_is_better=False) == [3.0]
