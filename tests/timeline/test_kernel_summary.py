"""The compact per-benchmark kernel summary, read from a Chrome trace the way the runner reads the kernel
pass: launches and device time per iteration, streams, grid and block, top N plus an "other" bucket."""

from pathlib import Path

import pytest

from aorta.timeline import kernel_summary
from aorta.timeline.kernel_timeline import KernelRound, parse_rounds


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


def test_a_round_that_recorded_no_kernels_is_not_counted_as_iterations():
    # Three rounds of K=2, the profiler kept nothing of the middle one: 2 rounds with kernels, 4 iterations,
    # so kernel A (3 launches of 10 µs a round) still reads 1.5 launches and 15 µs per iteration
    rounds = parse_rounds(trace(3))
    rounds[1] = KernelRound(index=rounds[1].index)
    s = kernel_summary.summarize(rounds, iterations_per_round=2)
    assert (s["rounds"], s["iterations"]) == (2, 4)
    a = next(k for k in s["kernels"] if k["name"] == "A<float>")
    assert (a["launches"], a["device_ms"]) == (1.5, 0.015)
    assert s["total"] == {"kernels": 2, "launches": 2.0, "device_ms": 0.04}


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


def fsdp_summary(path: str, steps: int):
    from aorta.fsdp import trace_analysis as ta

    kernels = ta.parse_chrome_trace(Path(__file__).parents[1] / "data" / path)
    return kernel_summary.summarize_launches(kernels, steps)


def test_an_fsdp_window_is_summarised_per_step_with_nccl_kernels_by_collective():
    s = fsdp_summary("collectives/nccl_2ranks_rank0.json", steps=2)
    assert [(k["name"], k["family"], k["launches"]) for k in s["kernels"]] == [
        (
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
            "kernel__5x_cublas",
            "gemm",
            4.0,
        ),
        ("ncclDevKernel_AllGather_RING_LL", "collective:all_gather", 2.0),
        ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", "collective:reduce_scatter", 1.0),
    ]


def test_rccls_generic_kernel_is_kept_apart_per_collective_from_the_profilers_arg():
    s = fsdp_summary("collectives/rccl_4ranks_rank0.json", steps=1)
    generic = sorted((k["name"], k["family"]) for k in s["kernels"] if k["name"].startswith("ncclDevKernel"))
    assert [f for _, f in generic] == ["collective:all_gather", "collective:reduce_scatter"]
    assert all(n.startswith("ncclDevKernel_Generic_1[") for n, _ in generic)


def test_a_recorded_h100_kernel_pass_keeps_its_top_ten_and_buckets_the_rest():
    import json

    from aorta.timeline.kernel_timeline import parse_rounds

    doc = json.loads((Path(__file__).parents[1] / "data" / "kernels_async_dataload_cuda.json").read_text())
    s = kernel_summary.summarize(parse_rounds(doc), iterations_per_round=1)
    assert (s["rounds"], s["total"]["kernels"], len(s["kernels"]), s["other"]["kernels"]) == (2, 13, 10, 3)
    assert s["total"]["launches"] == 48.0  # per iteration: 96 launches over 2 rounds of one iteration
    first = s["kernels"][0]
    assert (
        first["name"]
        == "implicit_convolve_sgemm<__nv_bfloat16,__nv_bfloat16,128,5,5,3,3,3,1,false,false,true>"
    )
    assert (first["family"], first["launches"]) == ("gemm", 6.0)
    assert "cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_32x2_nn_align2>" in {
        k["name"] for k in s["kernels"]
    }
    assert kernel_summary.summary_bytes(s) < 2600
