"""rocprofv3's rocpd database reader (aorta/timeline/rocpd.py) on small databases written here, table by table
with the columns of rocprofiler-sdk's schema (``rocpd_tables.sql``) the reader uses, whose values tell each
choice apart (issue 58): two processes and two sessions (guids) in one database, two GPUs of one process,
``rocpd_info_process`` ids that differ from the pids, event rows whose ids are not their stack ids, a copy's two
ends on different agents, rows inserted out of time order, launches of one id at two times. Expected values are
written from the rows themselves."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from aorta.timeline import rocpd
from aorta.timeline.device_op import DeviceOp
from aorta.timeline.rocprof import ROCPD, RocprofFileError

UUID = "_0198c0de_1234_7abc_8def_0123456789ab"
COLUMNS = {
    "rocpd_string": "id, guid, string",
    "rocpd_info_process": "id, guid, pid",
    "rocpd_info_kernel_symbol": "id, guid, kernel_name, display_name",
    "rocpd_event": "id, guid, category_id, stack_id, correlation_id",
    "rocpd_region": 'id, guid, pid, tid, start, "end", name_id, event_id',
    "rocpd_kernel_dispatch": 'id, guid, pid, agent_id, kernel_id, queue_id, stream_id, start, "end", event_id',
    "rocpd_memory_copy": 'id, guid, pid, name_id, src_agent_id, dst_agent_id, queue_id, stream_id, start, "end", '
    "event_id",
}
T0 = 7_000_000_000  # ns
A, B = "guid-a", "guid-b"
HIP, RCCL, KERNEL = 1, 2, 3  # rocpd_string ids of the categories
LAUNCH, ALLREDUCE, H2D, D2H, D2D = 11, 12, 21, 22, 23  # rocpd_string ids of names


class Db:
    """A rocpd database: every table of ``COLUMNS``, named ``<table><suffix>`` (``UUID`` for a session's
    tables, with the unsuffixed view over them when ``views``)."""

    def __init__(self, path: Path, suffix: str = "", views: bool = False, skip: tuple[str, ...] = ()) -> None:
        self.path, self.con, self.suffix = path, sqlite3.connect(path), suffix
        self.con.execute(
            "PRAGMA synchronous = OFF"
        )  # a test's file: no fsync per commit (seconds on a busy disk)
        for t, cols in COLUMNS.items():
            if t not in skip:
                self.con.execute(f'CREATE TABLE "{t}{suffix}" ({cols})')
                if views:
                    self.con.execute(f'CREATE VIEW "{t}" AS SELECT * FROM "{t}{suffix}"')

    def add(self, table: str, *values) -> Db:
        marks = ", ".join("?" * len(values))
        self.con.execute(f'INSERT INTO "{table}{self.suffix}" VALUES ({marks})', values)
        return self

    def strings(self, guid: str = A) -> Db:
        for sid, text in ((HIP, "HIP_RUNTIME_API"), (RCCL, "RCCL_API"), (KERNEL, "KERNEL_DISPATCH"),
                          (LAUNCH, "hipLaunchKernel"), (ALLREDUCE, "ncclAllReduce"),
                          (H2D, "MEMORY_COPY_HOST_TO_DEVICE"), (D2H, "MEMORY_COPY_DEVICE_TO_HOST"),
                          (D2D, "MEMORY_COPY_DEVICE_TO_DEVICE")):  # fmt: skip
            self.add("rocpd_string", sid, guid, text)
        return self

    def close(self) -> Path:
        self.con.commit()
        self.con.close()
        return self.path


def one(path: Path) -> rocpd.RocprofTrace:
    (trace,) = rocpd.read_processes(path)
    return trace


def refusal(path: Path) -> str:
    with pytest.raises(RocprofFileError) as exc:
        rocpd.read_processes(path)
    return str(exc.value)


def two_gpus(path: Path) -> Path:
    """Process 4321 (``rocpd_info_process`` id 2) ran three kernels on GPUs 8 and 9, inserted out of time order,
    and one call of each kind; event row ids (500+) are not their stack ids (70+)."""
    db = Db(path).strings()
    db.add("rocpd_info_process", 2, A, 4321)
    db.add("rocpd_info_kernel_symbol", 31, A, "void gemm<float>(float*)", "gemm")
    db.add("rocpd_info_kernel_symbol", 32, A, None, "only_display")
    db.add("rocpd_info_kernel_symbol", 33, A, None, None)
    for eid, cat, stack in ((501, KERNEL, 71), (502, KERNEL, 72), (503, KERNEL, 73), (504, HIP, 71),
                            (505, HIP, 72), (506, RCCL, 73), (507, HIP, 71)):  # fmt: skip
        db.add("rocpd_event", eid, A, cat, stack, 0)
    db.add("rocpd_kernel_dispatch", 901, A, 2, 9, 33, 3, 13, T0 + 3000, T0 + 3000, 503)
    db.add("rocpd_kernel_dispatch", 902, A, 2, 8, 31, 1, 11, T0 + 1000, T0 + 2000, 501)
    db.add("rocpd_kernel_dispatch", 903, A, 2, 9, 32, 2, None, T0 + 1000, T0 + 1500, 502)
    db.add("rocpd_region", 801, A, 2, 40, T0 + 500, T0 + 510, LAUNCH, 504)
    db.add("rocpd_region", 802, A, 2, 41, T0 + 300, T0 + 300, LAUNCH, 507)  # the same stack id, earlier
    db.add("rocpd_region", 805, A, 2, 42, T0 + 400, T0 + 400, LAUNCH, 507)  # and neither first nor last
    db.add("rocpd_region", 803, A, 2, 40, T0 + 600, T0 + 610, LAUNCH, 505)
    db.add("rocpd_region", 804, A, 2, 40, T0 + 700, T0 + 710, ALLREDUCE, 506)
    return db.close()


def test_each_field_of_a_kernel_comes_from_its_own_column_and_gpus_stay_apart(tmp_path):
    trace = one(two_gpus(tmp_path / "a.db"))
    assert (trace.process, trace.source, trace.path) == (4321, ROCPD, tmp_path / "a.db")
    assert trace.ops == [
        DeviceOp(
            "only_display",
            0,
            (T0 + 1000) / 1e3,
            0.5,
            "kernel",
            launch_us=(T0 + 600) / 1e3,
            correlation=72,
            queue=2,
            link="correlation",
            device=9,
            start_ns=T0 + 1000,
            dur_ns=500,
        ),  # fmt: skip
        DeviceOp(
            "void gemm<float>(float*)",
            11,
            (T0 + 1000) / 1e3,
            1.0,
            "kernel",
            launch_us=(T0 + 300) / 1e3,
            correlation=71,
            queue=1,
            link="correlation",
            device=8,
            start_ns=T0 + 1000,
            dur_ns=1000,
        ),  # fmt: skip
        DeviceOp(
            "",
            13,
            (T0 + 3000) / 1e3,
            0.0,
            "kernel",
            correlation=73,
            queue=3,
            device=9,
            start_ns=T0 + 3000,
            dur_ns=0,
        ),  # an RCCL call with the kernel's stack id is no launch  # fmt: skip
    ]
    assert trace.api_calls == {"HIP_RUNTIME_API hipLaunchKernel": 4, "RCCL_API ncclAllReduce": 1}
    assert trace.records == {"KERNEL_DISPATCH": 3, "HIP_RUNTIME_API": 4, "RCCL_API": 1}
    assert trace.apart == [] and trace.without_work == [] and trace.duplicates == {}


def test_the_same_database_through_uuid_tables_and_their_views_reads_the_same(tmp_path):
    plain = one(two_gpus(tmp_path / "plain.db"))
    db = Db(tmp_path / "views.db", suffix=UUID, views=True).strings()
    src = sqlite3.connect(tmp_path / "plain.db")
    for t in COLUMNS:
        for row in src.execute(f'SELECT * FROM "{t}"'):
            db.add(t, *row)
    src.close()
    assert one(db.close()).ops == plain.ops


def test_without_an_info_process_table_a_records_pid_column_is_the_pid(tmp_path):
    db = Db(tmp_path / "a.db", skip=("rocpd_info_process",)).strings()
    db.add("rocpd_kernel_dispatch", 1, A, 55, 8, None, 1, 11, T0, T0 + 1, None)
    assert [(t.process, t.ops[0].name, t.ops[0].correlation) for t in rocpd.read_processes(db.close())] == [
        (55, "", None)
    ]


def test_a_process_id_with_no_info_row_in_its_session_keeps_the_records_pid(tmp_path):
    """The info row of id 2 is of another session (guid B): a record of guid A with pid 2 keeps 2."""
    db = Db(tmp_path / "a.db").strings()
    db.add("rocpd_info_process", 2, B, 4321)
    db.add("rocpd_kernel_dispatch", 1, A, 2, 8, None, 1, 11, T0, T0 + 1, None)
    assert [t.process for t in rocpd.read_processes(db.close())] == [2]


# --------------------------------------------------------------------------- copies
def test_a_copy_runs_on_its_gpu_end_named_by_its_direction_and_keeps_its_queue(tmp_path):
    db = Db(tmp_path / "a.db").strings()
    db.add("rocpd_info_process", 1, A, 10)
    db.add("rocpd_kernel_dispatch", 1, A, 1, 8, None, 1, 11, T0, T0 + 100, None)
    db.add("rocpd_memory_copy", 1, A, 1, H2D, 0, 2, 5, 15, T0 + 10, T0 + 20, None)
    db.add("rocpd_memory_copy", 2, A, 1, D2H, 3, 0, 6, 16, T0 + 30, T0 + 40, None)
    db.add("rocpd_memory_copy", 3, A, 1, D2D, 4, None, None, None, T0 + 50, T0 + 50, None)
    db.add(
        "rocpd_memory_copy", 4, A, 1, 99, 6, 7, 7, 17, T0 + 60, T0 + 61, None
    )  # a name not in rocpd_string
    trace = one(db.close())
    copies = [op for op in trace.ops if op.category == "gpu_memcpy"]
    assert [(op.name, op.device, op.queue, op.stream, op.dur_ns) for op in copies] == [
        ("MEMORY_COPY_HOST_TO_DEVICE", 2, 5, 15, 10),  # to a GPU: its destination
        ("MEMORY_COPY_DEVICE_TO_HOST", 3, 6, 16, 10),  # to the host: its source
        ("MEMORY_COPY_DEVICE_TO_DEVICE", 4, None, 0, 0),  # no destination: its source
        ("MEMORY_COPY", 7, 7, 17, 1),
    ]
    assert trace.records == {"KERNEL_DISPATCH": 1, "MEMORY_COPY": 4}


def test_copies_a_day_from_the_kernels_are_left_out_and_counted(tmp_path):
    day = 86_400 * 10**9
    db = Db(tmp_path / "a.db").strings()
    db.add("rocpd_kernel_dispatch", 1, A, 1, 8, None, 1, 11, T0, T0 + 100, None)
    db.add("rocpd_memory_copy", 1, A, 1, H2D, 0, 2, 5, 15, T0 + day, T0 + day + 9, None)
    db.add("rocpd_memory_copy", 2, A, 1, H2D, 0, 2, 5, 15, T0 + day + 20, T0 + day + 29, None)
    trace = one(db.close())
    assert [op.category for op in trace.ops] == ["kernel"]
    assert trace.apart == ["rocpd_memory_copy (2 rows)"]
    assert trace.records == {"KERNEL_DISPATCH": 1, "MEMORY_COPY": 2}


def test_a_process_of_copies_only_is_read_with_no_kernel_records(tmp_path):
    db = Db(tmp_path / "a.db").strings()
    db.add("rocpd_event", 5, A, HIP, 9, 0)
    db.add("rocpd_region", 5, A, 1, 1, T0 + 3 * 86_400 * 10**9, T0 + 3 * 86_400 * 10**9 + 1, LAUNCH, 5)
    db.add("rocpd_event", 6, A, KERNEL, 9, 0)
    db.add("rocpd_memory_copy", 1, A, 1, H2D, 0, 2, 5, 15, T0, T0 + 9, 6)
    trace = one(db.close())
    assert [(op.category, op.launch_us, op.correlation) for op in trace.ops] == [("gpu_memcpy", None, 9)]
    assert trace.apart == ["rocpd_region's HIP_RUNTIME_API calls (1)"]  # the copies are the run's span
    assert trace.records == {"KERNEL_DISPATCH": 0, "HIP_RUNTIME_API": 1, "MEMORY_COPY": 1}


def test_launches_a_day_before_the_kernels_are_left_out_naming_the_hip_calls_only(tmp_path):
    day = 86_400 * 10**9
    db = Db(tmp_path / "a.db").strings()
    db.add("rocpd_event", 5, A, HIP, 9, 0)
    db.add("rocpd_event", 6, A, RCCL, 10, 0)
    db.add("rocpd_event", 7, A, HIP, 11, 0)
    db.add("rocpd_region", 5, A, 1, 1, T0, T0 + 10, LAUNCH, 5)
    db.add("rocpd_region", 7, A, 1, 1, T0 + 20, T0 + 30, LAUNCH, 7)
    db.add("rocpd_region", 6, A, 1, 1, T0 + day, T0 + day, ALLREDUCE, 6)
    db.add("rocpd_event", 8, A, KERNEL, 9, 0)
    db.add("rocpd_kernel_dispatch", 1, A, 1, 8, None, 1, 11, T0 + day, T0 + day + 5, 8)
    db.add("rocpd_string", 31, A, "HIP_COMPILER_API")
    db.add("rocpd_event", 9, A, 31, 12, 0)
    db.add("rocpd_region", 9, A, 1, 1, T0 + 40, T0 + 50, LAUNCH, 9)
    trace = one(db.close())
    assert trace.apart == ["rocpd_region's HIP_RUNTIME_API, HIP_COMPILER_API calls (3)"]
    assert trace.ops[0].launch_us is None and trace.ops[0].correlation == 9


def test_launches_a_second_before_a_long_run_are_of_it(tmp_path):
    """Calls at start-up, 1 s before the first kernel: the same run (``same_run``)."""
    db = Db(tmp_path / "a.db").strings()
    db.add("rocpd_event", 5, A, HIP, 9, 0)
    db.add("rocpd_region", 5, A, 1, 1, T0, T0 + 10, LAUNCH, 5)
    db.add("rocpd_event", 8, A, KERNEL, 9, 0)
    db.add("rocpd_kernel_dispatch", 1, A, 1, 8, None, 1, 11, T0 + 10**9 + 10, T0 + 10**9 + 20, 8)
    trace = one(db.close())
    assert trace.apart == [] and trace.ops[0].launch_us == T0 / 1e3


# --------------------------------------------------------------------------- calls
def test_a_call_with_no_event_is_a_region_linked_by_its_own_id_and_counted_by_category(tmp_path):
    db = Db(tmp_path / "a.db").strings()
    db.add("rocpd_region", 9, A, 1, 1, T0, T0 + 1, LAUNCH, None)  # no event: its category unknown, id 9
    db.add("rocpd_region", 10, A, 1, 1, T0, T0 + 1, 98, None)  # a name not in rocpd_string
    db.add("rocpd_event", 8, A, KERNEL, 9, 0)
    db.add("rocpd_kernel_dispatch", 1, A, 1, 8, None, 1, 11, T0 + 5, T0 + 6, 8)
    trace = one(db.close())
    assert trace.api_calls == {"hipLaunchKernel": 1, "": 1}
    assert trace.records == {"KERNEL_DISPATCH": 1, "REGION": 2}
    assert trace.ops[0].launch_us is None  # a region of no HIP category is no launch


def test_a_call_without_times_is_counted_and_no_launch(tmp_path):
    db = Db(tmp_path / "a.db").strings()
    db.add("rocpd_event", 5, A, HIP, 9, 0)
    db.add("rocpd_region", 5, A, 1, 1, None, T0 + 1, LAUNCH, 5)
    db.add("rocpd_event", 6, A, HIP, 9, 0)
    db.add("rocpd_region", 6, A, 1, 1, T0, 1.5, LAUNCH, 6)
    db.add("rocpd_event", 8, A, KERNEL, 9, 0)
    db.add("rocpd_kernel_dispatch", 1, A, 1, 8, None, 1, 11, T0 + 5, T0 + 6, 8)
    trace = one(db.close())
    assert trace.api_calls == {"HIP_RUNTIME_API hipLaunchKernel": 2} and trace.ops[0].launch_us is None


def test_without_the_string_table_calls_are_not_read(tmp_path):
    db = Db(tmp_path / "a.db", skip=("rocpd_string", "rocpd_memory_copy"))
    db.add("rocpd_event", 5, A, HIP, 9, 0)
    db.add("rocpd_region", 5, A, 1, 1, T0, T0 + 1, LAUNCH, 5)
    db.add("rocpd_kernel_dispatch", 1, A, 1, 8, None, 1, 11, T0 + 5, T0 + 6, 5)
    trace = one(db.close())
    assert (
        trace.api_calls == {} and trace.records == {"KERNEL_DISPATCH": 1} and trace.ops[0].launch_us is None
    )


# --------------------------------------------------------------------------- processes and sessions
def test_processes_come_in_pid_order_and_those_without_work_are_said_on_the_first(tmp_path):
    db = Db(tmp_path / "a.db").strings()
    for proc_id, pid in ((1, 900), (2, 80), (3, 7000), (4, 5)):
        db.add("rocpd_info_process", proc_id, A, pid)
    db.add("rocpd_kernel_dispatch", 1, A, 1, 8, None, 1, 11, T0, T0 + 1, None)  # pid 900
    db.add("rocpd_kernel_dispatch", 2, A, 2, 8, None, 1, 11, T0 + 5, T0 + 9, None)  # pid 80
    db.add("rocpd_event", 5, A, HIP, 9, 0)
    db.add("rocpd_region", 5, A, 3, 1, T0, T0 + 1, LAUNCH, 5)  # pid 7000: calls only
    db.add("rocpd_region", 6, A, 3, 1, T0, T0 + 2, LAUNCH, 5)
    db.add("rocpd_region", 7, A, 4, 1, T0, T0 + 2, LAUNCH, 5)  # pid 5: a call only
    traces = rocpd.read_processes(db.close())
    assert [(t.process, t.ops[0].dur_ns) for t in traces] == [(80, 4), (900, 1)]
    assert traces[0].without_work == [
        "process 5: 1 API calls, no device work",
        "process 7000: 2 API calls, no device work",
    ]
    assert traces[1].without_work == []


def test_a_database_of_calls_only_is_each_process_read(tmp_path):
    db = Db(tmp_path / "a.db").strings()
    db.add("rocpd_info_process", 1, A, 30)
    db.add("rocpd_info_process", 2, A, 20)
    db.add("rocpd_event", 5, A, HIP, 9, 0)
    db.add("rocpd_region", 5, A, 1, 1, T0, T0 + 1, LAUNCH, 5)
    db.add("rocpd_region", 6, A, 2, 1, T0, T0 + 1, LAUNCH, 5)
    traces = rocpd.read_processes(db.close())
    assert [(t.process, t.ops, t.records, t.without_work) for t in traces] == [
        (20, [], {"KERNEL_DISPATCH": 0, "HIP_RUNTIME_API": 1}, []),
        (30, [], {"KERNEL_DISPATCH": 0, "HIP_RUNTIME_API": 1}, []),
    ]


def test_an_empty_database_is_one_trace_of_no_process(tmp_path):
    trace = one(Db(tmp_path / "a.db").close())
    assert (trace.process, trace.ops, trace.records) == (None, [], {"KERNEL_DISPATCH": 0})


def test_two_sessions_of_one_pid_are_two_traces_in_time_order_each_with_its_own_ids(tmp_path):
    """Session B ran first; both sessions number their rows from 1, and each joins only its own."""
    db = Db(tmp_path / "a.db").strings(A).strings(B)
    for guid, start, name in ((A, T0 + 5000, "late"), (B, T0, "early")):  # early ends after late: by start
        db.add("rocpd_info_process", 1, guid, 77)
        db.add("rocpd_info_kernel_symbol", 1, guid, name, None)
        db.add("rocpd_event", 1, guid, KERNEL, 40 if guid == A else 50, 0)
        db.add(
            "rocpd_kernel_dispatch", 1, guid, 1, 8, 1, 1, 11, start, start + (10 if guid == A else 10**6), 1
        )
    traces = rocpd.read_processes(db.close())
    assert [(t.process, t.ops[0].name, t.ops[0].correlation) for t in traces] == [
        (77, "early", 50),
        (77, "late", 40),
    ]


def test_sessions_of_one_pid_with_no_device_work_are_said_in_time_order_too(tmp_path):
    db = Db(tmp_path / "a.db").strings(A).strings(B)
    db.add("rocpd_kernel_dispatch", 1, A, 3, 8, None, 1, 11, T0, T0 + 1, None)
    for guid, calls in ((B, 2), (A, 1)):  # same pid, no rows: by guid
        db.add("rocpd_event", 5, guid, HIP, 9, 0)
        for rid in range(calls):
            db.add("rocpd_region", 5 + rid, guid, 1, 1, T0, T0 + 1, LAUNCH, 5)
    (trace,) = rocpd.read_processes(db.close())
    assert trace.process == 3 and trace.without_work == [
        "process 1: 1 API calls, no device work",
        "process 1: 2 API calls, no device work",
    ]


def test_a_pid_with_a_session_of_work_and_one_of_calls_only_and_records_of_no_pid(tmp_path):
    """Process 1 ran kernels in session A and only calls in session B; records with no pid come first, as
    the CSV's files named without one."""
    db = Db(tmp_path / "a.db", skip=("rocpd_info_process",)).strings(A).strings(B)
    db.add("rocpd_kernel_dispatch", 1, A, 1, 8, None, 1, 11, T0, T0 + 1, None)
    db.add("rocpd_kernel_dispatch", 2, A, None, 8, None, 1, 11, T0 + 5, T0 + 6, None)
    db.add("rocpd_event", 5, B, HIP, 9, 0)
    db.add("rocpd_region", 5, B, 1, 1, T0, T0 + 1, LAUNCH, 5)
    db.add("rocpd_event", 6, A, HIP, 9, 0)
    db.add("rocpd_region", 6, A, None, 1, T0, T0 + 1, LAUNCH, 6)
    db.add("rocpd_region", 7, A, 9, 1, T0, T0 + 1, LAUNCH, 6)
    traces = rocpd.read_processes(db.close())
    assert [(t.process, t.ops[0].start_ns) for t in traces] == [(None, T0 + 5), (1, T0)]
    assert traces[0].without_work == [
        "process 1: 1 API calls, no device work",
        "process 9: 1 API calls, no device work",
    ]


def test_hip_calls_overlapping_from_two_threads_span_from_the_earliest_start(tmp_path):
    """A 100 s call from 0, a launch at 50 s: the calls span 100 s, and a kernel at 180 s is of their run
    (an 80 s gap, under the spans' 101 s together); their span taken from 50 s would leave it out."""
    db = Db(tmp_path / "a.db").strings()
    db.add("rocpd_event", 5, A, HIP, 1, 0)
    db.add("rocpd_event", 6, A, HIP, 9, 0)
    db.add("rocpd_region", 5, A, 1, 1, T0, T0 + 100 * 10**9, LAUNCH, 5)
    db.add("rocpd_region", 6, A, 1, 2, T0 + 50 * 10**9, T0 + 50 * 10**9 + 1, LAUNCH, 6)
    db.add("rocpd_event", 8, A, KERNEL, 9, 0)
    db.add("rocpd_kernel_dispatch", 1, A, 1, 8, None, 1, 11, T0 + 180 * 10**9, T0 + 181 * 10**9, 8)
    trace = one(db.close())
    assert trace.apart == [] and trace.ops[0].launch_us == (T0 + 50 * 10**9) / 1e3


def test_a_folder_of_databases_is_read_in_pid_order(tmp_path):
    for name, pid in (("a_results.db", 300), ("b_results.db", 40), ("c_results.db", None)):
        db = Db(tmp_path / name)
        if pid is not None:
            db.add("rocpd_info_process", 1, A, pid)
        db.add("rocpd_kernel_dispatch", 1, A, 1 if pid else None, 8, None, 1, 11, T0, T0 + 1, None)
        db.close()
    (tmp_path / "notes.txt").write_text("not a database")
    assert [t.process for t in rocpd.read_processes(tmp_path)] == [40, 300, None]


# --------------------------------------------------------------------------- refused
@pytest.mark.parametrize(
    "start, end, why",
    [
        (T0 + 1, T0, f"start {T0 + 1} and end {T0}"),
        (None, T0, f"start None and end {T0}"),
        (T0, 1.5, f"start {T0} and end 1.5"),
        ("7", T0, f"start '7' and end {T0}"),
    ],
)
@pytest.mark.parametrize("table", ["rocpd_kernel_dispatch", "rocpd_memory_copy"])
def test_a_dispatch_or_copy_without_a_span_of_ns_is_refused_naming_the_table_and_row(
    tmp_path, table, start, end, why
):
    db = Db(tmp_path / "a.db")
    if table == "rocpd_kernel_dispatch":
        db.add(table, 1, A, 1, 8, None, 1, 11, T0, T0 + 1, None)
        db.add(table, 42, A, 1, 8, None, 1, 11, start, end, None)
    else:
        db.add(table, 42, A, 1, None, 0, 2, None, None, start, end, None)
    path = db.close()
    assert refusal(path) == f"{path}: table {table}, row id 42: {why} are no span of ns"


def test_a_kernel_without_its_queue_is_refused_and_a_copy_without_one_is_read(tmp_path):
    db = Db(tmp_path / "a.db")
    db.add("rocpd_memory_copy", 3, A, 1, None, 0, 2, None, None, T0, T0, None)
    db.add("rocpd_kernel_dispatch", 42, A, 1, 8, None, "1", 11, T0, T0, None)
    path = db.close()
    assert refusal(path) == (
        f"{path}: table rocpd_kernel_dispatch, row id 42: queue_id '1' (rocprofv3 writes the queue of every dispatch)"
    )


def test_a_database_without_kernel_dispatches_is_refused_saying_what_is_read(tmp_path):
    db = Db(tmp_path / "a.db", skip=("rocpd_kernel_dispatch",))
    path = db.close()
    assert refusal(path).startswith(
        f"{path}: an SQLite database without rocprofv3's rocpd_kernel_dispatch view; read are Kineto"
    )


def test_a_file_that_is_no_database_is_refused_naming_it(tmp_path):
    path = tmp_path / "x.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    assert refusal(path).startswith(f"{path}: not a readable rocpd database (")
    missing = tmp_path / "nowhere" / "y.db"
    assert refusal(missing) == f"{missing}: cannot open the rocpd database (unable to open database file)"


def test_the_file_is_opened_read_only(tmp_path):
    path = two_gpus(tmp_path / "a.db")
    path.chmod(0o444)
    before = path.read_bytes()
    assert len(one(path).ops) == 3 and path.read_bytes() == before
    assert list(tmp_path.iterdir()) == [path]  # no journal written beside it


def test_sessions_tables_without_views_are_read_through_temporary_views_over_every_session(tmp_path):
    """Two sessions' uuid-suffixed tables, no view: both read, the file unchanged; a table whose suffix is no
    uuid is not a session's."""
    other = "_0198c0de_1234_7abc_8def_0123456789ff"
    path = tmp_path / "a.db"
    for suffix, guid, start in ((UUID, A, T0), (other, B, T0 + 10**6)):
        db = Db(path, suffix=suffix)
        db.add("rocpd_info_process", 1, guid, 12)
        db.add("rocpd_kernel_dispatch", 1, guid, 1, 8, None, 1, 11, start, start + 1, None)
        db.close()
    con = sqlite3.connect(path)
    con.execute('CREATE TABLE "rocpd_kernel_dispatch_copy" (id, guid, pid, agent_id, kernel_id, queue_id, '
                'stream_id, start, "end", event_id)')  # fmt: skip
    con.execute("INSERT INTO rocpd_kernel_dispatch_copy VALUES (1, 'x', 1, 8, NULL, 1, 11, 5, 6, NULL)")
    con.commit()
    con.close()
    before = path.read_bytes()
    traces = rocpd.read_processes(path)
    assert [(t.process, t.ops[0].start_ns) for t in traces] == [(12, T0), (12, T0 + 10**6)]
    assert path.read_bytes() == before


def test_a_process_whose_only_device_work_is_copies_is_a_trace_beside_one_of_kernels(tmp_path):
    """Pid 10 ran a kernel, pid 11 only copies (a data loader's process, say): both are traces with device
    work, in pid order; pid 11's copies are not dropped as "no device work", and pid 12, calls only, is said."""
    db = Db(tmp_path / "a.db").strings()
    for proc_id, pid in ((1, 10), (2, 11), (3, 12)):
        db.add("rocpd_info_process", proc_id, A, pid)
    db.add("rocpd_kernel_dispatch", 1, A, 1, 8, None, 1, 11, T0, T0 + 100, None)
    db.add("rocpd_memory_copy", 1, A, 2, H2D, 0, 2, 5, 15, T0 + 10, T0 + 30, None)
    db.add("rocpd_event", 5, A, HIP, 9, 0)
    db.add("rocpd_region", 5, A, 3, 1, T0, T0 + 1, LAUNCH, 5)
    traces = rocpd.read_processes(db.close())
    assert [(t.process, [(op.category, op.dur_ns) for op in t.ops]) for t in traces] == [
        (10, [("kernel", 100)]),
        (11, [("gpu_memcpy", 20)]),
    ]
    assert traces[0].without_work == ["process 12: 1 API calls, no device work"]
