"""The compact per-benchmark kernel summary, read from a Chrome trace the way the runner reads the kernel
pass: launches and device time per iteration, streams, grid and block, top N plus an "other" bucket."""

import pytest

from aorta import kernel_summary
from aorta.kernel_timeline import parse_rounds


def trace(rounds: int = 2):
    """Per round (host range aorta.round.<n>): kernel A three times on stream 7 (10 µs each, no grid recorded),
    kernel B once on stream 9 (50 µs, grid [4,1,1], block [256,1,1]), each launched by its own runtime call."""
    ev, corr = [], 0
    for n in range(rounds):
        t0 = n * 1000.0
        ev.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"aorta.round.{n}",
                "pid": 1,
                "tid": 1,
                "ts": t0,
                "dur": 900,
            }
        )
        launches = [("void A<float>(float*, int)", 7, 10.0, None)] * 3 + [
            ("B(BArgs<4096ul>)", 9, 50.0, [4, 1, 1])
        ]
        for i, (name, stream, dur, grid) in enumerate(launches):
            corr += 1
            ev.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernel",
                    "pid": 1,
                    "tid": 1,
                    "ts": t0 + 1 + i,
                    "dur": 1,
                    "args": {"correlation": corr},
                }
            )
            args = {"stream": stream, "correlation": corr}
            if grid:
                args.update(grid=grid, block=[256, 1, 1])
            ev.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": name,
                    "pid": 0,
                    "tid": stream,
                    "ts": t0 + 100 + 60 * i,
                    "dur": dur,
                    "args": args,
                }
            )
    return {"traceEvents": ev}


def test_launches_and_device_time_per_iteration_with_streams_and_launch_shape():
    s = kernel_summary.summarize(parse_rounds(trace()), iterations_per_round=2)
    assert s["rounds"] == 2 and s["iterations"] == 4
    b, a = s["kernels"]  # B first: 50 µs a round against A's 30; 2 rounds of K=2 are 4 iterations
    assert b == {
        "name": "B",
        "family": "B",
        "launches": 0.5,
        "device_ms": 0.025,
        "streams": 1,
        "grid": [4, 1, 1],
        "block": [256, 1, 1],
    }
    assert a == {"name": "A<float>", "family": "A", "launches": 1.5, "device_ms": 0.015, "streams": 1}
    assert s["total"] == {"kernels": 2, "launches": 2.0, "device_ms": 0.04}
    assert s["other"] == {"kernels": 0, "launches": 0.0, "device_ms": 0.0}


def test_past_top_n_the_rest_is_one_bucket():
    s = kernel_summary.summarize(parse_rounds(trace()), iterations_per_round=1, top_n=1)
    assert [k["name"] for k in s["kernels"]] == ["B"]
    assert s["other"] == {"kernels": 1, "launches": 3.0, "device_ms": 0.03}


def test_no_ops_no_summary_and_bad_arguments_are_refused():
    assert kernel_summary.summarize([], 1) is None
    with pytest.raises(ValueError, match="iterations_per_round must be >= 1, got 0"):
        kernel_summary.summarize([], 0)
    with pytest.raises(ValueError, match="top_n must be >= 1, got 0"):
        kernel_summary.summarize([], 1, top_n=0)
