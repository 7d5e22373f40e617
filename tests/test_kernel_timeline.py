"""Per-round figures from kernel timestamps (aorta/kernel_timeline.py), with answers worked by hand."""

import pytest

from aorta import kernel_timeline as kt

THREAD = {"pid": 1, "tid": 7}


def rng(name, ts, dur, **thread):
    return {"ph": "X", "cat": "user_annotation", "name": name, "ts": ts, "dur": dur, **(thread or THREAD)}


def launch(corr, ts, **thread):
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts, "dur": 1,
            "args": {"correlation": corr}, **(thread or THREAD)}


def kernel(corr, stream, ts, dur, cat="kernel", name="k"):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 0, "tid": stream,
            "args": {"stream": stream, "correlation": corr}}


def two_stream_trace():
    """Round 0: stream 7 runs 100-300 µs and 300-400 µs, stream 8 runs 200-400 µs (a copy).
    A kernel launched before the round (warm-up) and one outside any block (the origin stream) too."""
    return {"traceEvents": [
        launch(1, 5), kernel(1, 7, 10, 50),                      # warm-up: no round
        rng("aorta.round.0", 20, 80),
        rng("aorta.s0:compute", 21, 10), launch(2, 22), launch(3, 25),
        rng("aorta.s1:copy", 40, 10), launch(4, 41),
        launch(5, 60),                                           # outside any block
        kernel(2, 7, 100, 200), kernel(3, 7, 300, 100), kernel(4, 8, 200, 200, cat="gpu_memcpy"),
        kernel(5, 9, 450, 50),
    ]}


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
    trace = {"traceEvents": [rng("aorta.round.0", 0, 10), launch(1, 1), launch(2, 2),
                             kernel(1, 7, 100, 1000), kernel(2, 8, 1100, 1000)]}
    f = kt.round_figures(kt.parse_rounds(trace)[0])
    assert f["effective_concurrency"] == pytest.approx(1.0)
    assert f["gpu_busy_share"] == pytest.approx(1.0)


def test_summary_divides_per_iteration_quantities_by_k_but_not_ratios():
    trace = {"traceEvents": [rng("aorta.round.0", 0, 10), launch(1, 1), launch(2, 2),
                             kernel(1, 7, 0, 1000), kernel(2, 8, 0, 500),
                             rng("aorta.round.1", 20, 10), launch(3, 21), launch(4, 22),
                             kernel(3, 7, 5000, 1000), kernel(4, 8, 5000, 1000)]}
    s = kt.summarize(kt.parse_rounds(trace), iterations_per_round=2)
    assert s["rounds_with_kernels"] == 2 and s["streams_with_work"] == 2
    assert s["per_stream_busy_ms"] == pytest.approx([1.0 / 2, (0.5 + 1.0) / 2 / 2])
    assert s["effective_concurrency_samples"] == pytest.approx([1.5, 2.0])
    assert s["gpu_busy_share_samples"] == pytest.approx([1.0, 1.0])
    assert s["kernel_span_ms_per_iteration"] == pytest.approx(0.5)


def test_no_kernels_gives_no_figures():
    assert kt.summarize([]) == {"rounds_with_kernels": 0}
    assert kt.parse_rounds({"traceEvents": [rng("aorta.round.0", 0, 10)]})[0].ops == []


def test_host_bound_note_below_seventy_percent_busy():
    assert kt.host_bound_note(0.19) == ("host-bound: GPU busy 19% of the round; "
                                        "the host's launch path is what is measured")
    assert kt.host_bound_note(0.70) is None and kt.host_bound_note(None) is None


def test_nested_blocks_file_ops_under_the_innermost():
    trace = {"traceEvents": [rng("aorta.round.0", 0, 100), rng("aorta.s0:outer", 1, 50), rng("aorta.s1", 10, 5),
                             launch(1, 11), launch(2, 30), kernel(1, 7, 100, 10), kernel(2, 8, 100, 10)]}
    (rnd,) = kt.parse_rounds(trace)
    assert [(b.stream_index, b.label, [op.stream for op in b.ops]) for b in rnd.blocks] == [
        (0, "outer", [8]), (1, None, [7])]


def test_trim_keeps_what_the_parser_reads():
    trace = two_stream_trace()
    trace["traceEvents"].append({"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 1, **THREAD})
    trimmed = kt.trim_trace(trace)
    assert len(trimmed["traceEvents"]) == len(two_stream_trace()["traceEvents"])
    assert kt.round_figures(kt.parse_rounds(trimmed)[0]) == kt.round_figures(kt.parse_rounds(trace)[0])
