"""Per-round figures from kernel timestamps (aorta/timeline/kernel_timeline.py), with answers worked by hand."""

import pytest

from aorta.timeline import kernel_timeline as kt
from aorta.timeline.device_op import DeviceOp

THREAD = {"pid": 1, "tid": 7}


def rng(name, ts, dur, **thread):
    return {"ph": "X", "cat": "user_annotation", "name": name, "ts": ts, "dur": dur, **(thread or THREAD)}


def launch(corr, ts, **thread):
    return {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "ts": ts,
        "dur": 1,
        "args": {"correlation": corr},
        **(thread or THREAD),
    }


def kernel(corr, stream, ts, dur, cat="kernel", name="k"):
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "ts": ts,
        "dur": dur,
        "pid": 0,
        "tid": stream,
        "args": {"stream": stream, "correlation": corr},
    }


def two_stream_trace():
    """Round 0: stream 7 runs 100-300 µs and 300-400 µs, stream 8 runs 200-400 µs (a copy).
    A kernel launched before the round (warm-up) and one outside any block (the origin stream) too."""
    return {
        "traceEvents": [
            launch(1, 5),
            kernel(1, 7, 10, 50),  # warm-up: no round
            rng("aorta.round.0", 20, 80),
            rng("aorta.s0:compute", 21, 10),
            launch(2, 22),
            launch(3, 25),
            rng("aorta.s1:copy", 40, 10),
            launch(4, 41),
            launch(5, 60),  # outside any block
            kernel(2, 7, 100, 200),
            kernel(3, 7, 300, 100),
            kernel(4, 8, 200, 200, cat="gpu_memcpy"),
            kernel(5, 9, 450, 50),
        ]
    }


def test_round_holds_only_ops_launched_inside_it_and_blocks_name_them():
    (rnd,) = kt.parse_rounds(two_stream_trace())
    assert rnd.index == 0 and len(rnd.ops) == 4
    assert [(b.stream_index, b.label, len(b.ops)) for b in rnd.blocks] == [(0, "compute", 2), (1, "copy", 1)]
    # ms from the round's first op (100 µs)
    assert rnd.stream_intervals_ms() == {0: [(0.0, 0.2), (0.2, 0.3)], 1: [(0.1, 0.3)]}
    assert rnd.label_intervals_ms() == {"compute": [(0.0, 0.2), (0.2, 0.3)], "copy": [(0.1, 0.3)]}
    assert rnd.block_spans_ms() == {0: [(0.0, 0.3)], 1: [(0.1, 0.3)]}


def test_round_figures_by_hand():
    (rnd,) = kt.parse_rounds(two_stream_trace())
    f = kt.round_figures(rnd)
    # span 100 -> 500 µs = 0.4 ms; busy: stream 7 0.3, stream 8 0.2, stream 9 0.05
    assert f["span_ms"] == pytest.approx(0.4)
    assert f["per_stream_busy_ms"] == pytest.approx({7: 0.3, 8: 0.2, 9: 0.05})
    assert f["effective_concurrency"] == pytest.approx((0.3 + 0.2 + 0.05) / 0.4)
    # union: 100-400 and 450-500 -> 0.35 of 0.4
    assert f["gpu_busy_share"] == pytest.approx(0.35 / 0.4)
    assert f["streams_with_work"] == 3


def test_queued_kernels_are_not_busy_time():
    """Two streams whose kernels run one at a time read concurrency 1, whatever the events said."""
    trace = {
        "traceEvents": [
            rng("aorta.round.0", 0, 10),
            launch(1, 1),
            launch(2, 2),
            kernel(1, 7, 100, 1000),
            kernel(2, 8, 1100, 1000),
        ]
    }
    f = kt.round_figures(kt.parse_rounds(trace)[0])
    assert f["effective_concurrency"] == pytest.approx(1.0)
    assert f["gpu_busy_share"] == pytest.approx(1.0)


def test_summary_divides_per_iteration_quantities_by_k_but_not_ratios():
    trace = {
        "traceEvents": [
            rng("aorta.round.0", 0, 10),
            launch(1, 1),
            launch(2, 2),
            kernel(1, 7, 0, 1000),
            kernel(2, 8, 0, 500),
            rng("aorta.round.1", 20, 10),
            launch(3, 21),
            launch(4, 22),
            kernel(3, 7, 5000, 1000),
            kernel(4, 8, 5000, 1000),
            rng("aorta.round.2", 40, 10),  # a third round, serial and with a gap: the samples are skewed
            launch(5, 41),
            launch(6, 42),
            kernel(5, 7, 9000, 1000),
            kernel(6, 8, 11000, 1000),
        ]
    }
    s = kt.summarize(kt.parse_rounds(trace), iterations_per_round=2)
    assert s["rounds_with_kernels"] == 3 and s["streams_with_work"] == 2
    # stream 7: 1, 1, 1 ms; stream 8: 0.5, 1, 1 ms (÷ K = 2)
    assert s["per_stream_busy_ms"] == pytest.approx([1.0 / 2, 1.0 / 2])
    # Σ busy / span: 1.5 / 1, 2 / 1, 2 / 3: the median 1.5, where the mean would read 1.39
    assert s["effective_concurrency_samples"] == pytest.approx([1.5, 2.0, 2.0 / 3.0])
    assert s["effective_concurrency"] == pytest.approx(1.5)
    assert s["gpu_busy_share_samples"] == pytest.approx([1.0, 1.0, 2.0 / 3.0])
    assert s["gpu_busy_share"] == pytest.approx(1.0)  # mean 0.89
    assert s["kernel_span_ms_per_iteration"] == pytest.approx(0.5)  # spans 1, 1, 3 ms: mean 0.83
    assert s["gpu_busy_ms_per_iteration"] == pytest.approx(0.5)  # 1, 1, 2 ms busy ÷ K: mean 0.67


def test_no_kernels_gives_no_figures():
    assert kt.summarize([]) == {"rounds_with_kernels": 0}
    assert kt.parse_rounds({"traceEvents": [rng("aorta.round.0", 0, 10)]})[0].ops == []


def test_host_bound_note_below_seventy_percent_busy():
    assert kt.host_bound_note(0.19) == (
        "host-bound: GPU busy 19% of the round; the host's launch path is what is measured"
    )
    assert kt.host_bound_note(0.70) is None and kt.host_bound_note(None) is None
    # a replayed graph has no host launch inside its round: its idle gaps are not blamed on the host
    assert kt.host_bound_note(0.43, graph_replay=True) == (
        "GPU idle: busy 43% of a replayed graph's round; no host launch is inside it, so the gaps are the GPU's "
        "own (dependencies, dispatch between short kernels)"
    )


def test_nested_blocks_file_ops_under_the_innermost():
    trace = {
        "traceEvents": [
            rng("aorta.round.0", 0, 100),
            rng("aorta.s0:outer", 1, 50),
            rng("aorta.s1", 10, 5),
            launch(1, 11),
            launch(2, 30),
            kernel(1, 7, 100, 10),
            kernel(2, 8, 100, 10),
        ]
    }
    (rnd,) = kt.parse_rounds(trace)
    assert [(b.stream_index, b.label, [op.stream for op in b.ops]) for b in rnd.blocks] == [
        (0, "outer", [8]),
        (1, None, [7]),
    ]


def test_trim_keeps_what_the_parser_reads():
    trace = two_stream_trace()
    trace["traceEvents"].append(
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 1, **THREAD}
    )
    trimmed = kt.trim_trace(trace)
    assert len(trimmed["traceEvents"]) == len(two_stream_trace()["traceEvents"])
    assert kt.round_figures(kt.parse_rounds(trimmed)[0]) == kt.round_figures(kt.parse_rounds(trace)[0])


def test_trim_keeps_exactly_the_fields_the_parser_reads_of_each_kind_of_event():
    other = {"pid": 3, "tid": 9}
    events = [
        {"ph": "B", "cat": "kernel", "name": "k0", "ts": 0, **other},  # not a complete event: dropped
        {"ph": "X", "name": "no_cat", "ts": 1, "dur": 1, **other},  # no category: dropped
        rng("aorta.round.0", 2, 50, **other),
        rng("not_aorta", 3, 1, **other),  # a user range of another name: dropped
        rng("aorta.s1:gemm", 4, 5, **other),
        {**launch(5, 6, **other), "args": {"correlation": 5, "cbid": 211}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMalloc", "ts": 7, "dur": 1, "args": {}, **other},
        {**kernel(5, 13, 20, 4), "args": {"stream": 13, "correlation": 5, "grid": [1, 1, 1]}, **other},
        {"ph": "X", "cat": "gpu_memset", "name": "m", "ts": 30, "args": {"stream": 13}, **other},  # no dur
    ]
    assert kt.trim_trace({"traceEvents": events}) == {
        "traceEvents": [
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": "aorta.round.0",
                "ts": 2,
                "dur": 50,
                "args": {},
                **other,
            },
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": "aorta.s1:gemm",
                "ts": 4,
                "dur": 5,
                "args": {},
                **other,
            },
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "ts": 6,
                "dur": 1,
                "args": {"correlation": 5},
                **other,
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": "k",
                "ts": 20,
                "dur": 4,
                "args": {"stream": 13, "correlation": 5, "grid": [1, 1, 1]},  # grid: the kernel summary's
                **other,
            },
            {
                "ph": "X",
                "cat": "gpu_memset",
                "name": "m",
                "ts": 30,
                "dur": 0,
                "args": {"stream": 13},
                **other,
            },
        ]
    }


# -- recorded traces (H100, torch 2.11+cu130, python3 -m scripts.gpu.prove kernel_traces) and a hand-written ROCm one
def _load(name):
    import json
    from pathlib import Path

    return json.loads((Path(__file__).parents[1] / "data" / name).read_text())


def _by_hand(trace, n):
    """Round n's figures straight from the raw events: every device event launched in the round's range."""
    evs = trace["traceEvents"]
    rnd = next(e for e in evs if e["name"] == f"aorta.round.{n}")
    corr = {
        e["args"]["correlation"]
        for e in evs
        if e["cat"] in ("cuda_runtime", "cuda_driver") and rnd["ts"] <= e["ts"] <= rnd["ts"] + rnd["dur"]
    }
    ops = [
        e
        for e in evs
        if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset") and e["args"]["correlation"] in corr
    ]
    span = max(e["ts"] + e["dur"] for e in ops) - min(e["ts"] for e in ops)
    return ops, span


def test_recorded_cuda_trace_four_streams_one_kernel_each():
    trace = _load("kernels_4streams_cuda.json")
    rounds = kt.parse_rounds(trace)
    assert [r.index for r in rounds] == [0, 1]
    for r in rounds:
        ops, span = _by_hand(trace, r.index)
        assert len(ops) == 4 and len({e["args"]["stream"] for e in ops}) == 4  # one spin kernel per stream
        f = kt.round_figures(r)
        assert f["streams_with_work"] == 4
        assert f["effective_concurrency"] == pytest.approx(sum(e["dur"] for e in ops) / span)
        assert f["gpu_busy_share"] == pytest.approx(1.0)  # four overlapping kernels: no gap in the round
        assert 3.0 < f["effective_concurrency"] < 4.0  # the host staggers four 1 ms kernels' starts
        assert [b.stream_index for b in r.blocks] == [0, 1, 2, 3]


def test_recorded_cuda_trace_labels_copies_preprocess_and_compute():
    trace = _load("kernels_async_dataload_cuda.json")
    for r in kt.parse_rounds(trace):
        labels = r.label_intervals_ms()
        assert {k: len(v) for k, v in labels.items()} == {"copy": 3, "preprocess": 18, "compute": 27}
        assert {op.category for op in r.ops} == {"kernel", "gpu_memcpy"}  # copies count as device work
        ops, span = _by_hand(trace, r.index)
        f = kt.round_figures(r)
        assert len(r.ops) == len(ops)
        assert f["span_ms"] == pytest.approx(span / 1e3)
        assert f["gpu_busy_share"] < 0.3  # smoke size: the device waits for the host most of the round
        assert kt.host_bound_note(f["gpu_busy_share"]).startswith("host-bound: GPU busy")


def test_hand_written_rocm_trace():
    """HIP launches, Tensile GEMMs (Cijk_...), an RCCL kernel and a copy; not recorded on an AMD GPU."""
    rounds = kt.parse_rounds(_load("kernels_rocm_handwritten.json"))
    assert len(rounds) == 2
    for r in rounds:
        f = kt.round_figures(r)
        # span 100..450 µs = 0.35 ms; busy: stream 1 0.3, stream 2 0.25, stream 3 0.05
        assert f["span_ms"] == pytest.approx(0.35)
        assert f["effective_concurrency"] == pytest.approx((0.3 + 0.25 + 0.05) / 0.35)
        assert f["gpu_busy_share"] == pytest.approx(1.0)  # 100-400 covered by GEMMs/RCCL, 400-450 the copy
        labels = r.label_intervals_ms()
        from aorta.timeline import overlap

        # comm 150-400 hidden behind compute 100-400: ratio 1; the copy runs alone
        assert overlap.overlap_ratio(labels["compute"], labels["comm"]) == pytest.approx(1.0)
        assert overlap.overlap_ratio(labels["compute"] + labels["comm"], labels["copy"]) == pytest.approx(0.0)


def test_terminal_table_shows_gpu_busy_and_the_host_bound_note():
    from aorta.record.table import format_summary

    note = kt.host_bound_note(0.19)
    lines = format_summary(
        [
            {
                "name": "t[4]",
                "streams": 4,
                "distinct": 4,
                "median_ms": 1.0,
                "enqueue_ms": 0.9,
                "metric": "1 x",
                "concurrency": 0.3,
                "gpu_busy": 0.19,
                "notes": [note],
                "method": "events",
            }
        ]
    )
    assert "gpu busy" in lines[0] and "19%" in lines[2]
    assert lines[-1] == f"t[4]: {note}"


def test_terminal_summary_ends_with_where_the_host_time_went():
    from aorta.record.table import format_summary

    row = {
        "name": "t",
        "streams": 1,
        "distinct": 1,
        "median_ms": 1.0,
        "metric": "1 x",
        "concurrency": 1.0,
        "method": "events",
    }
    lines = format_summary(
        [
            {**row, "phases": {"setup": 1.0, "kernel_pass": 2.5}},
            {**row, "name": "u", "phases": {"setup": 0.5, "kernel_pass": 1.0, "labelled_pass": 4.0}},
        ]
    )
    assert lines[-1] == (
        "host seconds by phase, 2 benchmarks: setup 1.5, kernel pass 3.5, labelled pass 4.0 (total 9.0)"
    )


def test_a_stream_missing_from_a_round_is_idle_in_it_and_a_zero_span_round_has_no_ratio():
    ops = lambda *spec: [DeviceOp("k", s, a, b - a) for s, a, b in spec]  # noqa: E731
    rounds = [
        kt.KernelRound(0, ops=ops((7, 0, 1000), ("8", 0, 1000))),  # stream ids as the profiler gives them
        kt.KernelRound(1, ops=ops((7, 0, 1000))),  # stream "8" idle in rounds 1 and 2
        kt.KernelRound(2, ops=ops((7, 0, 1000))),
    ]
    s = kt.summarize(rounds)
    assert s["device_stream_ids"] == [7, "8"]
    assert s["per_stream_busy_ms"] == pytest.approx([1.0, 0.0])  # "8": 1, 0, 0 ms -> median 0
    instant = kt.KernelRound(0, ops=ops((7, 5, 5)))  # a zero-length op: span 0
    f = kt.round_figures(instant)
    assert f["span_ms"] == 0 and f["effective_concurrency"] is None and f["gpu_busy_share"] is None
    s = kt.summarize([instant])
    assert (
        s["effective_concurrency"] is None and s["gpu_busy_share"] is None and s["rounds_with_kernels"] == 1
    )
    with pytest.raises(ValueError, match="iterations_per_round must be >= 1, got 0"):
        kt.summarize(rounds, iterations_per_round=0)


def test_parse_reads_past_non_complete_events_takes_the_stream_arg_and_the_innermost_of_equal_starts():
    other_thread_kernel = kernel(3, 20, 300, 10)
    other_thread_kernel["tid"] = 99  # the profiler's row, not the stream: args.stream is what counts
    no_stream = kernel(4, 21, 400, 10)
    del no_stream["args"]["stream"]  # without args.stream the row (tid) stands in
    trace = {
        "traceEvents": [
            {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},  # metadata comes first
            {"ph": "i", "cat": "user_annotation", "name": "marker", "ts": 0, "pid": 1, "tid": 7},
            rng("aorta.round.0", 0, 100),
            rng("aorta.s0:outer", 1, 50),
            rng("aorta.s1:inner", 1, 20),  # starts with its parent: still the innermost
            launch(1, 5),
            launch(2, 30),
            launch(3, 60),
            launch(4, 70),
            kernel(1, 7, 100, 10),
            kernel(2, 8, 200, 10),
            other_thread_kernel,
            no_stream,
        ]
    }
    (rnd,) = kt.parse_rounds(trace)
    assert [(b.stream_index, b.label, [op.start_us for op in b.ops]) for b in rnd.blocks] == [
        (0, "outer", [200.0]),
        (1, "inner", [100.0]),
    ]
    assert [op.stream for op in rnd.ops] == [7, 8, 20, 21]
    assert kt.round_figures(rnd)["streams_with_work"] == 4


def test_a_range_without_a_duration_holds_nothing_after_its_start():
    start_only = {k: v for k, v in rng("aorta.round.1", 200, 0).items() if k != "dur"}
    trace = {"traceEvents": [rng("aorta.round.0", 0, 100), launch(1, 50), start_only, launch(2, 200.5)]}
    trace["traceEvents"] += [kernel(1, 7, 300, 10), kernel(2, 7, 400, 10)]
    r0, r1 = kt.parse_rounds(trace)
    assert [op.start_us for op in r0.ops] == [300.0] and r1.ops == []


def test_parse_rounds_of_two_threads_with_bare_events_and_launches_at_a_rounds_end():
    a, b, c = {"pid": 1, "tid": 7}, {"pid": 1, "tid": 8}, {"pid": 2, "tid": 9}
    events = [
        rng("aorta.round.0", 0, 100, **a),
        rng("aorta.s0", 10, 20, **a),
        rng("aorta.round.0", 0, 100, **b),
        rng("aorta.s1:early", 5, 3, **b),  # starts before thread a's block: first in issue order
        rng("aorta.s2:empty", 40, 5, **a),  # launches nothing
        launch(1, 100, **a),  # at the round's very end: still inside it
        launch(2, 6, **b),
        launch(3, 50, **c),  # a thread without rounds
        {"ph": "X", "cat": "kernel", "ts": 300, "args": {"correlation": 9}},  # no launch: left out
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k1",
            "ts": 110,
            "dur": 5,
            "args": {"stream": 7, "correlation": 1},
        },
        {"ph": "X", "cat": "kernel", "ts": 120, "args": {"correlation": 2}},  # no name, stream, tid or dur
        {"ph": "X", "cat": "kernel", "name": "k3", "ts": 130, "dur": 1, "args": {"correlation": 3}},
        {"ph": "X", "cat": "kernel", "name": "k4", "ts": 140, "dur": 1},  # no correlation at all
    ]
    (rnd,) = kt.parse_rounds(events)  # a bare event list reads like a document
    assert [(o.name, o.stream, o.start_us, o.end_us) for o in rnd.ops] == [
        ("k1", 7, 110.0, 115.0),
        ("", 0, 120.0, 120.0),
    ]
    assert [(blk.stream_index, blk.label, [o.name for o in blk.ops]) for blk in rnd.blocks] == [
        (1, "early", [""]),
        (0, None, []),
        (2, "empty", []),
    ]
    assert rnd.block_spans_ms() == {1: [(0.01, 0.01)], 0: [None], 2: [None]}  # from the first op, 110 µs
    assert (
        kt.parse_rounds({}) == []
        and kt.block_label(2) == "aorta.s2"
        and kt.block_label(2, "x") == "aorta.s2:x"
    )
