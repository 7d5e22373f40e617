"""What the trace reader takes from a Chrome trace, on hand-made traces (pure: no torch): a kernel's launch
(the first host call carrying its correlation id) decides its step, and every vendor's collective kernel name
counts as communication, RCCL's and MSCCL's included."""

import gzip
import json

import pytest

from aorta.fsdp import trace_analysis as ta
from aorta.fsdp.profiled_steps import split_by_step
from aorta.timeline.launch_links import launch_links
from aorta.timeline.trace_events import classify_kernel, load_trace


def runtime(name: str, ts: float, corr: int) -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "ts": ts, "dur": 2, "args": {"correlation": corr}}


def kernel(name: str, ts: float, dur: float, corr: int | None = None, stream: int = 7, **args) -> dict:
    if corr is not None:
        args["correlation"] = corr
    return {
        "ph": "X",
        "cat": "kernel",
        "name": name,
        "ts": ts,
        "dur": dur,
        "args": {"stream": stream, **args},
    }


def test_two_calls_sharing_a_correlation_id_launch_at_the_first_and_the_kernel_is_in_that_step():
    # rocprofiler-sdk records hipMemsetAsync and an internal call beside it with one id; the step boundary
    # at 100 µs falls between them
    events = [
        runtime("hipMemsetAsync", 95.0, 41),
        runtime("hipExtModuleLaunchKernel", 103.0, 41),
        kernel("__amd_rocclr_fillBufferAligned.kd", 150.0, 4.0, 41),
        runtime("hipLaunchKernel", 120.0, 42),
        kernel("Cijk_gemm", 160.0, 30.0, 42),
    ]
    assert {k: c.ts_us for k, c in launch_links(events).by_correlation.items()} == {41: 95.0, 42: 120.0}
    kernels = ta.parse_chrome_trace({"traceEvents": events})
    split = split_by_step(kernels, [(0.0, 100.0), (100.0, 200.0)])
    assert [[k.name for k in ks] for ks in split.by_step] == [
        ["__amd_rocclr_fillBufferAligned.kd"],
        ["Cijk_gemm"],
    ]


@pytest.mark.parametrize(
    "name",
    [
        "rcclGenericKernel",  # RCCL builds that name it so (ROCm traces often give no argument list)
        "rcclGenericKernel_1",
        "mscclKernel_Sum_bf16_LL",  # MSCCL, inside RCCL
        "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)",  # RCCL's generic kernel
    ],
)
def test_rccl_kernels_without_a_collective_name_are_communication_not_compute(name):
    # launched before the profiled window: no "Collective name" arg, so the name alone must say "collective"
    assert classify_kernel(name) == "other_comm"
    trace = {"traceEvents": [kernel("Cijk_gemm", 0.0, 1000.0), kernel(name, 500.0, 1000.0, stream=9)]}
    s = ta.analyze(ta.parse_chrome_trace(trace), steps=1)
    assert (s.comm_busy_ms, s.overlapped_ms, s.exposed_comm_ms) == (1.0, 0.5, 0.5)
    assert s.kernel_count_by_kind["compute"] == 1


@pytest.mark.parametrize(
    "name, kind",
    [
        ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "all_gather"),
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "all_reduce"),
        ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(x)", "reduce_scatter"),
        ("ncclDevKernel_Broadcast_RING_LL(x)", "broadcast"),
        ("ncclDevKernel_Reduce_Sum_f32_RING_LL(x)", "reduce"),
        ("ncclDevKernel_SendRecv(x)", "other_comm"),
        ("Cijk_Ailk_Bljk_BBS_BH_MT128x128x64(x)", "compute"),
        ("__amd_rocclr_copyBuffer.kd", "memory"),
    ],
)
def test_each_kernel_name_gets_its_kind(name, kind):
    assert classify_kernel(name) == kind


def test_a_generic_kernel_takes_its_kind_from_the_profilers_collective_name():
    assert classify_kernel("ncclDevKernel_Generic(x)", "_allgather_base") == "all_gather"
    assert classify_kernel("rcclGenericKernel(x)", "reduce_scatter_tensor_coalesced") == "reduce_scatter"
    assert classify_kernel("ncclDevKernel_Generic(x)", "alltoall_base") == "all_to_all"


def test_a_trace_is_read_by_its_bytes_whatever_its_name(tmp_path):
    doc = {"traceEvents": [kernel("Cijk_gemm", 0.0, 10.0)]}
    zipped = tmp_path / "rank0.pt.trace.json"  # gzipped, named without .gz (saved from a browser, renamed)
    zipped.write_bytes(gzip.compress(json.dumps(doc).encode()))
    plain = tmp_path / "rank1.pt.trace.json.gz"  # named .gz, written plain
    plain.write_text(json.dumps(doc))
    read = [load_trace(zipped), load_trace(plain)]
    assert [r["traceEvents"] for r in read] == [doc["traceEvents"]] * 2
