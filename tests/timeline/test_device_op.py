"""The one kernel type: the hardware-queue timeline and the FSDP analysis read the same ``DeviceOp``."""

from aorta.fsdp import trace_analysis as ta
from aorta.timeline import kernel_timeline as kt
from aorta.timeline.device_op import DeviceOp


def test_the_end_is_the_start_plus_the_profilers_own_duration():
    op = DeviceOp("k", 7, 4500000000000.25, 3.5)
    assert op.end_us == 4500000000003.75 and op.dur_us == 3.5  # the duration as written, not end - start


def test_kind_reads_the_name_then_the_collective_arg_and_copies_are_memory():
    assert DeviceOp("sm90_xmma_gemm_bf16", 7, 0, 1).kind == "compute"
    assert DeviceOp("ncclDevKernel_AllGather_RING_LL", 7, 0, 1).kind == "all_gather"
    assert DeviceOp("ncclDevKernel_Generic_1", 7, 0, 1, collective="allreduce").kind == "all_reduce"
    assert DeviceOp("__amd_rocclr_fillBufferAligned.kd", 7, 0, 1).kind == "memory"
    assert DeviceOp("Memcpy DtoD (Device -> Device)", 7, 0, 1, category="gpu_memcpy").kind == "memory"


def test_both_trace_readers_give_the_same_op_for_the_same_kernel():
    trace = {
        "traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": kt.round_label(0), "pid": 1, "tid": 1, "ts": 0, "dur": 50},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 5, "dur": 2,
             "args": {"correlation": 3}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10.5, "dur": 20.25,
             "args": {"stream": 7, "correlation": 3, "grid": [4, 1, 1], "block": [256, 1, 1]}},
        ]
    }  # fmt: skip
    (timeline_op,) = kt.parse_rounds(trace)[0].ops
    (fsdp_op,) = ta.parse_chrome_trace(trace)
    # the ns of the text (10.5 µs, 20.25 µs) kept beside the µs: figures subtract them exactly
    exact = {"start_ns": 10_500, "dur_ns": 20_250}
    # no args.device: the device is the pid (Kineto's GPU track), in both readers
    assert timeline_op == DeviceOp(
        "gemm", 7, 10.5, 20.25, "kernel", (4, 1, 1), (256, 1, 1), device=0, **exact
    )
    assert fsdp_op == DeviceOp(
        "gemm",
        7,
        10.5,
        20.25,
        "kernel",
        (4, 1, 1),
        (256, 1, 1),
        launch_us=5.0,
        correlation=3,
        link="correlation",
        device=0,
        **exact,
    )
