"""The Kineto trace loader and the kernel-name table (aorta/timeline/trace_events.py, issue 58): each kind of
kernel name told apart where one needle is inside another (all-reduce and reduce, reduce-scatter and scatter),
the kernel's own name winning over the profiler's arg, NVIDIA and AMD names side by side, the loader's events
kept or dropped and its every refusal in one line naming the file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from aorta.timeline import trace_events as te
from aorta.timeline.device_op import DeviceOp
from aorta.timeline.trace_events import TraceFileError, classify_kernel, load_trace


@pytest.fixture(autouse=True)
def classified_afresh():
    """Kinds are cached per name: each test classifies its names itself, not from an earlier test's cache."""
    te._classify_once.cache_clear()


@pytest.mark.parametrize(
    "name, arg, kind",
    [
        ("ncclDevKernel_AllGather_RING_LL(x)", None, "all_gather"),
        ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(x)", None, "reduce_scatter"),
        ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(x)", None, "all_reduce"),
        ("ncclKernel_Broadcast_RING_LL(x)", None, "broadcast"),
        ("ncclDevKernel_Reduce_Sum_f32_RING_LL(x)", None, "reduce"),
        ("ncclDevKernel_AllToAll(x)", None, "all_to_all"),
        ("ncclDevKernel_SendRecv(x)", None, "other_comm"),
        ("NCCLDEVKERNEL_ALL_GATHER(x)", None, "all_gather"),  # any case, '_' dropped
        ("ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)", "allreduce", "all_reduce"),
        ("ncclDevKernel_Generic(x)", "_allgather_base", "all_gather"),
        ("ncclDevKernel_Generic(x)", "reduce_scatter_tensor_coalesced", "reduce_scatter"),
        ("ncclDevKernel_Generic(x)", "alltoall_base", "all_to_all"),
        ("ncclDevKernel_Generic(x)", "barrier", "other_comm"),
        ("ncclDevKernel_Generic(x)", None, "other_comm"),
        ("ncclDevKernel_Broadcast(x)", "allreduce", "broadcast"),  # the kernel's own name wins
        ("ncclDevKernel_Generic(AllReduce_args)", "broadcast", "broadcast"),  # only the name before '('
        ("ncclDevKernel_Generic(Args<AllReduce>(4096))", "broadcast", "broadcast"),  # before the first '('
        ("rcclGenericKernel(x)", None, "other_comm"),
        ("mscclKernel_Sum_f32(x)", None, "other_comm"),
        ("RCCL_kernel", None, "other_comm"),
        ("void gemm<float>(float*)", None, "compute"),
        ("gemm_allreduce_fused", None, "compute"),  # a compute kernel named for a collective, no NCCL in it
        ("void gemm<float>(float*)", "allreduce", "all_reduce"),  # the profiler's arg makes it one
        ("__amd_rocclr_fillBufferAligned.kd", None, "memory"),
        ("x__amd_rocclr_copyBuffer", None, "compute"),  # the prefix only at the start
    ],
)
def test_each_kernel_name_gets_its_kind(name, arg, kind):
    assert classify_kernel(name, arg) == kind


@pytest.mark.parametrize(
    "name, arg, kind",
    [
        ("ncclDevKernel_Generic(x)", ["allreduce"], "all_reduce"),
        ("ncclDevKernel_Generic(x)", 5, "other_comm"),
        ("gemm", ["allreduce"], "all_reduce"),
        ("gemm", [], "compute"),
        ("gemm", 0, "compute"),
    ],
)
def test_an_arg_that_is_no_string_is_read_as_its_text_as_a_device_op_reads_it(name, arg, kind):
    """A damaged trace's list or number: it raised AttributeError (``.lower()``) for a generic name."""
    assert classify_kernel(name, arg) == kind
    assert DeviceOp(name, 0, 0.0, 1.0, collective=str(arg) if arg else None).kind == kind
    assert te.is_comm_kernel({"cat": "kernel", "name": name, "args": {"Collective name": arg}}) is (
        kind != "compute"
    )


def test_the_vendor_table_names_nvidia_and_amd_side_by_side():
    assert te.COMM_KERNEL.pattern == "msccl|nccl|rccl"
    assert te.LAUNCH_CATEGORIES == ("cuda_driver", "cuda_runtime")
    assert te.MEMORY_KERNEL_PREFIXES == ("__amd_rocclr_",)
    assert te.COMM_KINDS[-1] == "other_comm" and len(te.COMM_KINDS) == 7


def test_an_events_category_and_whether_it_is_a_kernel_or_a_collectives_kernel():
    assert te.str_category({"cat": "Kernel"}) == "kernel" and te.str_category({}) == ""
    assert (
        te.is_kernel({"cat": "KERNEL"}) and not te.is_kernel({"cat": "gpu_memcpy"}) and not te.is_kernel({})
    )
    assert te.is_comm_kernel({"cat": "kernel", "name": "ncclDevKernel_AllGather(x)"})
    assert te.is_comm_kernel({"cat": "kernel", "name": "gemm", "args": {"Collective name": "allreduce"}})
    assert not te.is_comm_kernel({"cat": "kernel", "name": "gemm", "args": None})
    assert not te.is_comm_kernel({"cat": "cpu_op", "name": "ncclDevKernel_AllGather(x)"})
    assert not te.is_comm_kernel({"cat": "kernel", "name": "__amd_rocclr_fillBuffer"})
    assert not te.is_comm_kernel({"cat": "kernel"})


# --------------------------------------------------------------------------- the loader
KERNEL = {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 2,
          "args": {"device": 0, "stream": 7, "correlation": 1, "registers per thread": 32}}  # fmt: skip
CPU = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 9, "dur": 5}


def written(path: Path, doc) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_a_trace_is_read_with_its_other_keys_and_the_duplicates_it_dropped(tmp_path):
    doc = {
        "schemaVersion": 1,
        "traceEvents": [KERNEL, CPU, KERNEL, dict(KERNEL, ts=11)],
        "deviceProperties": [],
    }
    read = load_trace(written(tmp_path / "t.json", doc))
    assert read["traceEvents"] == [KERNEL, CPU, dict(KERNEL, ts=11)]
    assert read["schemaVersion"] == 1 and read["deviceProperties"] == []
    assert read[te.DUPLICATES_KEY] == {"events": 1, "device_ops": 1}


def test_only_read_keeps_the_events_a_figure_reads_with_their_read_args(tmp_path):
    doc = {"traceEvents": [KERNEL, CPU]}
    read = load_trace(written(tmp_path / "t.json", doc), only_read=True)
    assert [e["cat"] for e in read["traceEvents"]] == ["kernel"]
    assert read["traceEvents"][0]["args"] == {"device": 0, "stream": 7, "correlation": 1}
    whole = load_trace(tmp_path / "t.json")
    assert whole["traceEvents"][0]["args"]["registers per thread"] == 32 and len(whole["traceEvents"]) == 2


def test_a_gzipped_trace_and_an_opened_source_read_alike(tmp_path):
    from aorta.timeline.trace_source import open_source

    doc = {"traceEvents": [KERNEL, CPU]}
    gz = tmp_path / "t.bin"
    gz.write_bytes(gzip.compress(json.dumps(doc).encode()))
    assert load_trace(gz)["traceEvents"] == doc["traceEvents"]
    with open_source(gz) as s:
        assert te.read_source(s)["traceEvents"] == doc["traceEvents"]  # every event, unless asked
    with open_source(gz) as s:
        assert te.read_source(s, only_read=True)["traceEvents"] == [
            dict(KERNEL, args={"device": 0, "stream": 7, "correlation": 1})
        ]


@pytest.mark.parametrize(
    "data, said",
    [
        (b'{"traceEvents": [{},', "not a Chrome trace JSON file (event 1 of traceEvents at line 1 column 21: the file ends inside it (cut short))"),
        (b'{"traceEvents": ["\xff"]}', "not a Chrome trace JSON file ('utf-8' codec can't decode byte 0xff in position 18: invalid start byte)"),
        (b'{"traceEvents": [null]}', "event 0 is null, not a JSON object"),
        (b'{"other": []}', "not a Chrome trace (no 'traceEvents' list)"),
        (b'{"traceEvents": {}}', "not a Chrome trace (no 'traceEvents' list)"),
    ],
)  # fmt: skip
def test_a_file_that_is_no_trace_is_refused_in_one_line_naming_it(tmp_path, data, said):
    path = tmp_path / "t.json"
    path.write_bytes(data)
    with pytest.raises(TraceFileError) as exc:
        load_trace(path)
    assert str(exc.value) == f"{path}: {said}"


def test_a_gzip_damaged_past_its_start_is_refused_naming_the_file(tmp_path):
    body = json.dumps({"traceEvents": [dict(KERNEL, ts=i) for i in range(3000)]}).encode()
    packed = gzip.compress(body)
    path = tmp_path / "t.json.gz"
    path.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(TraceFileError) as exc:
        load_trace(path)
    assert str(exc.value).startswith(f"{path}: a damaged gzip file (EOFError: ")


def test_a_read_error_past_the_start_is_refused_naming_the_file(tmp_path, monkeypatch):
    from aorta.timeline import trace_json

    def failing(stream, take):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(te, "read_trace_json", failing)
    path = written(tmp_path / "t.json", {"traceEvents": []})
    with pytest.raises(TraceFileError) as exc:
        load_trace(path)
    assert str(exc.value) == f"{path}: cannot read trace: [Errno 5] Input/output error"
    assert trace_json.read_trace_json is not failing
