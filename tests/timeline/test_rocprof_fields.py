"""Every field of a rocprofv3 record read from its own column: traces drawn by hypothesis in which a record's
queue, stream, agent, correlation id, event row, process and thread never share a number, and a kernel's name
differs from its symbol's display name, written as rocprofv3's CSV files and as a rocpd database (the documented
schema, ``test_rocprof.SCHEMA``), then read back. In the rocprofiler-sdk samples a kernel's queue and stream have
the same number, so reading one for the other passed every test there.

Expected values are the drawn records themselves; the figures per hardware queue are counted here.
"""

from __future__ import annotations

import csv
import sqlite3
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_tiers import examples
from test_rocprof import SCHEMA, UUID, union_ms

from aorta.timeline import rocprof, rocprof_read

# Each field its own range, so a value read from the wrong column is never right by accident.
QUEUES, STREAMS, AGENTS = st.integers(1, 4), st.integers(11, 16), st.integers(21, 24)
PIDS, TIDS = st.integers(7001, 7003), st.integers(8001, 8003)
FIRST_CORRELATION, FIRST_EVENT_ROW = 100, 5000  # correlation ids and rocpd event rows never meet
NAMES = ("void gemm_kernel<float>(float*, int)", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)")
DIRECTIONS = ("MEMORY_COPY_HOST_TO_DEVICE", "MEMORY_COPY_DEVICE_TO_HOST")


@dataclass(frozen=True)
class Record:
    kind: str  # KERNEL_DISPATCH or MEMORY_COPY
    name: str  # the kernel's name, or the copy's direction
    queue: int
    stream: int
    agent: int
    pid: int
    tid: int
    correlation: int
    start_ns: int
    end_ns: int
    launch_ns: int | None  # the HIP call with its correlation id, where the trace holds one

    @property
    def display_name(self) -> str:  # rocpd keeps a short name beside the kernel's full one
        return self.name.split("(")[0].split("<")[0] + "_display"


@st.composite
def traces(draw) -> list[Record]:
    """One rank's records: 1-8 kernels and 0-3 copies, overlapping or not, most with their HIP call."""
    kinds = draw(
        st.lists(st.sampled_from(["KERNEL_DISPATCH"] * 3 + ["MEMORY_COPY"]), min_size=1, max_size=11)
    )
    if "KERNEL_DISPATCH" not in kinds:
        kinds.append("KERNEL_DISPATCH")
    t = draw(st.integers(10**9, 2 * 10**12))  # ns, as the profiler's clock gives them
    out = []
    for i, kind in enumerate(kinds):
        t += draw(st.integers(0, 3_000))
        start = t
        launched = draw(st.booleans())
        out.append(
            Record(
                kind=kind,
                name=draw(st.sampled_from(NAMES if kind == "KERNEL_DISPATCH" else DIRECTIONS)),
                queue=draw(QUEUES),
                stream=draw(STREAMS),
                agent=draw(AGENTS),
                pid=draw(PIDS),
                tid=draw(TIDS),
                correlation=FIRST_CORRELATION + 2 * i + draw(st.integers(0, 1)),
                start_ns=start,
                end_ns=start + draw(st.integers(0, 5_000)),
                launch_ns=start - draw(st.integers(1, 900)) if launched else None,
            )
        )
    return out


def kernels(records: list[Record]) -> list[Record]:
    return [r for r in records if r.kind == "KERNEL_DISPATCH"]


# ------------------------------------------------------------------------------ writers
def _write(path: Path, header: list[str], rows: list[list]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_NONNUMERIC)
        w.writerow(header)
        w.writerows(rows)


def write_csv(folder: Path, records: list[Record]) -> Path:
    """rocprofv3 ``--output-format csv``: one file per record kind, the columns of rocprofiler-sdk's samples."""
    folder.mkdir()
    ks = kernels(records)
    _write(
        folder / "7001_kernel_trace.csv",
        ["Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name",
         "Correlation_Id", "Start_Timestamp", "End_Timestamp", "Workgroup_Size_X", "Workgroup_Size_Y",
         "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"],
        [[r.kind, f"Agent {r.agent}", r.queue, r.stream, r.tid, i + 1, NAMES.index(r.name) + 1, r.name,
          r.correlation, r.start_ns, r.end_ns, 64, 1, 1, 1024, 1, 1] for i, r in enumerate(ks)],
    )  # fmt: skip
    _write(
        folder / "7001_memory_copy_trace.csv",
        ["Kind", "Direction", "Stream_Id", "Source_Agent_Id", "Destination_Agent_Id", "Correlation_Id",
         "Start_Timestamp", "End_Timestamp"],
        [[r.kind, r.name, r.stream, r.agent, r.agent + 10, r.correlation, r.start_ns, r.end_ns]
         for r in records if r.kind == "MEMORY_COPY"],
    )  # fmt: skip
    _write(
        folder / "7001_hip_api_trace.csv",
        ["Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"],
        [["HIP_RUNTIME_API", "hipLaunchKernel", r.pid, r.tid, r.correlation, r.launch_ns, r.launch_ns + 1]
         for r in records if r.launch_ns is not None],
    )  # fmt: skip
    return folder


def write_rocpd(path: Path, records: list[Record]) -> Path:
    """rocprofv3's rocpd database: the records through the per-session tables and views of ``SCHEMA``, each
    record's event row numbered apart from its correlation id."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA synchronous = OFF")  # a test file: no need to wait for the disk
    con.executescript(SCHEMA)
    texts = ["hipLaunchKernel", "HIP_RUNTIME_API", "KERNEL_DISPATCH", "MEMORY_COPY", *DIRECTIONS]
    con.executemany(f"INSERT INTO `rocpd_string{UUID}` (id, string) VALUES (?, ?)", enumerate(texts, start=1))
    string = {text: i for i, text in enumerate(texts, start=1)}.__getitem__
    rows = iter(range(FIRST_EVENT_ROW, FIRST_EVENT_ROW + 10 * len(records)))

    def event(category: str, correlation: int) -> int:
        row = next(rows)
        con.execute(  # as rocprofv3 writes it: the internal id in stack_id, the external one (0) apart
            f"INSERT INTO `rocpd_event{UUID}` (id, category_id, stack_id, parent_stack_id, correlation_id) "
            "VALUES (?, ?, ?, ?, 0)",
            (row, string(category), correlation, correlation),
        )
        return row

    for i, name in enumerate(NAMES, start=1):
        con.execute(
            f"INSERT INTO `rocpd_info_kernel_symbol{UUID}` (id, pid, kernel_name, display_name) VALUES (?,?,?,?)",
            (i, 7001, name, Record("", name, 0, 0, 0, 0, 0, 0, 0, 0, None).display_name),
        )
    for r in records:
        if r.launch_ns is not None:
            con.execute(
                f"INSERT INTO `rocpd_region{UUID}` (pid, tid, start, end, name_id, event_id) VALUES (?,?,?,?,?,?)",
                (r.pid, r.tid, r.launch_ns, r.launch_ns + 1, string("hipLaunchKernel"),
                 event("HIP_RUNTIME_API", r.correlation)),
            )  # fmt: skip
        if r.kind == "KERNEL_DISPATCH":
            con.execute(
                f"INSERT INTO `rocpd_kernel_dispatch{UUID}` (pid, tid, agent_id, kernel_id, queue_id, stream_id, "
                "start, end, event_id) VALUES (?,?,?,?,?,?,?,?,?)",
                (r.pid, r.tid, r.agent, NAMES.index(r.name) + 1, r.queue, r.stream, r.start_ns, r.end_ns,
                 event("KERNEL_DISPATCH", r.correlation)),
            )  # fmt: skip
        else:
            con.execute(
                f"INSERT INTO `rocpd_memory_copy{UUID}` (pid, tid, start, end, name_id, dst_agent_id, "
                "src_agent_id, size, queue_id, stream_id, event_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (r.pid, r.tid, r.start_ns, r.end_ns, string(r.name), r.agent + 10, r.agent, 4096, r.queue,
                 r.stream, event("MEMORY_COPY", r.correlation)),
            )  # fmt: skip
    con.commit()
    con.close()
    return path


# ------------------------------------------------------------------------------ what the readers must give
def as_read(ops) -> Counter:
    return Counter(
        (
            op.category,
            op.name,
            op.stream,
            op.queue,
            op.correlation,
            round(op.start_us * 1e3),
            round(op.dur_us * 1e3),
            None if op.launch_us is None else round(op.launch_us * 1e3),
            op.link,
        )
        for op in ops
    )


def expected(records: list[Record], *, copy_queues: bool) -> Counter:
    """What each record is as a device op: a CSV memory copy has no Queue_Id column, a rocpd one has its queue."""
    return Counter(
        (
            "kernel" if r.kind == "KERNEL_DISPATCH" else "gpu_memcpy",
            r.name,
            r.stream,
            r.queue if r.kind == "KERNEL_DISPATCH" or copy_queues else None,
            r.correlation,
            r.start_ns,
            r.end_ns - r.start_ns,
            r.launch_ns,
            "correlation" if r.launch_ns is not None else None,
        )
        for r in records
    )


def queue_table(records: list[Record]) -> list[dict]:
    """Per hardware queue: its kernels (copies are no queue's kernels), the union of their spans, their streams."""
    ks = kernels(records)
    return [
        {
            "queue": q,
            "kernels": sum(r.queue == q for r in ks),
            "busy_ms": union_ms((r.start_ns, r.end_ns) for r in ks if r.queue == q),
            "streams": sorted({r.stream for r in ks if r.queue == q}),
        }
        for q in sorted({r.queue for r in ks})
    ]


WRITTEN = {
    rocprof.CSV: lambda folder, records: write_csv(folder / "rank0", records),
    rocprof.ROCPD: lambda folder, records: write_rocpd(folder / "results.db", records),
}


@pytest.mark.parametrize("kind", WRITTEN)
@settings(max_examples=examples(25), deadline=None)
@given(records=traces())
def test_each_column_is_read_as_its_own_field_and_copies_are_no_queues_kernels(kind, records):
    with tempfile.TemporaryDirectory() as tmp:
        read = rocprof_read.read_processes(WRITTEN[kind](Path(tmp), records), kind)
    # a database holding several processes is read as one trace each, in pid order (issue 49)
    pids = sorted({r.pid for r in records})
    groups = [records] if len(read) == 1 else [[r for r in records if r.pid == p] for p in pids]
    assert len(read) == len(groups)
    for trace, own in zip(read, groups):
        assert as_read(trace.ops) == expected(own, copy_queues=kind == rocprof.ROCPD)
        assert rocprof.queue_figures(trace.ops) == queue_table(own)
        counts = Counter(r.kind for r in own) + Counter(
            "HIP_RUNTIME_API" for r in own if r.launch_ns is not None
        )
        assert {k: n for k, n in trace.records.items() if n} == counts
