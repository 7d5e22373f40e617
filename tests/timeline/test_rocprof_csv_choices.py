"""rocprofv3's CSV reader (aorta/timeline/rocprof_csv.py) on small files written here whose values tell each
choice apart (issue 58): two GPUs and two hardware queues of one process, queue, stream, agent and correlation
ids that never share a number, rows out of time order, a copy's two ends on different agents, ops that begin
where another ends, launches of one id at two times, processes whose pids sort differently as text and as
numbers. Expected values are written from the rows themselves."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from aorta.timeline import rocprof_csv
from aorta.timeline.device_op import DeviceOp
from aorta.timeline.rocprof import CSV, RocprofFileError

KERNEL_COLUMNS = (
    "Kind,Agent_Id,Queue_Id,Stream_Id,Thread_Id,Dispatch_Id,Kernel_Name,Correlation_Id,Start_Timestamp,"
    "End_Timestamp,Workgroup_Size_X,Workgroup_Size_Y,Workgroup_Size_Z,Grid_Size_X,Grid_Size_Y,Grid_Size_Z"
)
COPY_COLUMNS = "Kind,Direction,Stream_Id,Source_Agent_Id,Destination_Agent_Id,Correlation_Id,Start_Timestamp,End_Timestamp"  # fmt: skip
API_COLUMNS = "Domain,Function,Process_Id,Thread_Id,Correlation_Id,Start_Timestamp,End_Timestamp"
T0 = 5_000_000_000  # ns: 5 s on the host's clock


def kernel(agent: str, queue: int, stream: int, name: str, corr: int, start: int, end: int, dispatch: int = 1,
           block=(64, 2, 1), grid=(1024, 8, 3)) -> str:  # fmt: skip
    return (
        f'"KERNEL_DISPATCH","{agent}",{queue},{stream},77,{dispatch},"{name}",{corr},{start},{end},'
        f"{','.join(map(str, block))},{','.join(map(str, grid))}"
    )


def csv_file(path: Path, header: str, *rows: str, end: str = "\n") -> Path:
    path.write_text(header + "\n" + "\n".join(rows) + end)
    return path


def read_one(path: Path) -> rocprof_csv.RocprofTrace:
    (trace,) = rocprof_csv.read_processes(path)
    return trace


def refusal(path: Path) -> str:
    with pytest.raises(RocprofFileError) as exc:
        rocprof_csv.read_processes(path)
    return str(exc.value)


# --------------------------------------------------------------------------- each field from its own column
def test_a_process_on_two_gpus_keeps_each_op_on_its_own_agent_queue_and_stream(tmp_path):
    """Rows out of time order; kernel b starts where a ends, c starts with b and ends later."""
    f = csv_file(
        tmp_path / "300_kernel_trace.csv",
        KERNEL_COLUMNS,
        kernel("Agent 6", 2, 13, "c", 31, T0 + 2000, T0 + 5000, block=(0, 0, 0), grid=(0, 0, 0)),
        kernel("Agent 4", 1, 11, "a", 21, T0, T0 + 2000),
        kernel("Agent 4", 3, 12, "b", 22, T0 + 2000, T0 + 2500, block=(32, 1, 1), grid=(7, 0, 0)),
    )
    trace = read_one(f)
    assert trace.process == 300 and trace.source == CSV and trace.path == f
    assert trace.ops == [
        DeviceOp(
            "a",
            11,
            (T0) / 1e3,
            2.0,
            "kernel",
            (1024, 8, 3),
            (64, 2, 1),
            correlation=21,
            queue=1,
            device=4,
            start_ns=T0,
            dur_ns=2000,
        ),  # fmt: skip
        DeviceOp(
            "b",
            12,
            (T0 + 2000) / 1e3,
            0.5,
            "kernel",
            (7, 0, 0),
            (32, 1, 1),
            correlation=22,
            queue=3,
            device=4,
            start_ns=T0 + 2000,
            dur_ns=500,
        ),  # fmt: skip
        DeviceOp(
            "c",
            13,
            (T0 + 2000) / 1e3,
            3.0,
            "kernel",
            None,
            None,
            correlation=31,
            queue=2,
            device=6,
            start_ns=T0 + 2000,
            dur_ns=3000,
        ),  # fmt: skip
    ]
    assert trace.records == {"KERNEL_DISPATCH": 3} and trace.duplicates == {} and trace.apart == []
    assert trace.api_calls == {} and trace.not_read == [] and trace.not_in_figures == {}


def test_a_copy_runs_on_its_gpu_end_and_is_named_by_its_direction(tmp_path):
    f = csv_file(
        tmp_path / "copies.csv",
        COPY_COLUMNS,
        f'"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",5,"Agent 0","Agent 2",41,{T0},{T0 + 10}',
        f'"MEMORY_COPY","MEMORY_COPY_DEVICE_TO_HOST",0,"Agent 3","Agent 0",42,{T0 + 20},{T0 + 20}',
        f'"MEMORY_COPY","MEMORY_COPY_DEVICE_TO_DEVICE",6,"Agent 3","",43,{T0 + 30},{T0 + 35}',
        f'"MEMORY_COPY","MEMORY_COPY_DEVICE_TO_HOST",6,"","Agent 5",45,{T0 + 36},{T0 + 37}',
        f'"MEMORY_COPY","",6,"7","cpu",44,{T0 + 40},{T0 + 41}',
    )
    ops = read_one(f).ops
    assert [(op.name, op.device, op.stream, op.queue, op.category) for op in ops] == [
        ("MEMORY_COPY_HOST_TO_DEVICE", 2, 5, None, "gpu_memcpy"),  # to a GPU: its destination
        ("MEMORY_COPY_DEVICE_TO_HOST", 3, 0, None, "gpu_memcpy"),  # to the host: its source
        ("MEMORY_COPY_DEVICE_TO_DEVICE", 3, 6, None, "gpu_memcpy"),  # no destination: the source
        ("MEMORY_COPY_DEVICE_TO_HOST", 5, 6, None, "gpu_memcpy"),  # to the host with no source: the other end
        (
            "MEMORY_COPY",
            "cpu",
            6,
            None,
            "gpu_memcpy",
        ),  # no direction: its kind; an agent with no number as written
    ]
    assert [(op.dur_ns, op.correlation) for op in ops] == [(10, 41), (0, 42), (5, 43), (1, 45), (1, 44)]
    assert ops[1].dur_us == 0.0 and ops[0].grid is None and ops[0].block is None


def test_an_agent_written_as_a_bare_index_and_a_kernel_with_no_agent(tmp_path):
    f = csv_file(
        tmp_path / "kernel_trace.csv",
        KERNEL_COLUMNS,
        kernel("5", 1, 11, "k", 1, T0, T0 + 1),
        kernel("", 1, 11, "k", 2, T0 + 1, T0 + 2),
    )
    assert [op.device for op in read_one(f).ops] == [5, None]


def test_a_launch_dimension_absent_or_no_integer_is_zero_and_the_others_are_kept(tmp_path):
    f = csv_file(
        tmp_path / "kernel_trace.csv",
        "Kind,Agent_Id,Queue_Id,Kernel_Name,Start_Timestamp,End_Timestamp,Grid_Size_X,Grid_Size_Z,"
        "Workgroup_Size_X,Workgroup_Size_Y,Workgroup_Size_Z",
        f'"KERNEL_DISPATCH","Agent 4",2,"k",{T0},{T0 + 9},96,x,1,2,',
    )
    (op,) = read_one(f).ops
    assert op.grid == (96, 0, 0) and op.block == (1, 2, 0)
    assert op.stream == 0 and op.correlation is None and op.queue == 2  # an older rocprofv3: no Stream_Id


def test_names_and_sizes_repeated_in_a_file_are_held_once_and_different_ones_kept_apart(tmp_path):
    """Kernel names and launch sizes are held once per file: the same value twice is one object, two values
    stay two."""
    f = csv_file(
        tmp_path / "kernel_trace.csv",
        KERNEL_COLUMNS,
        kernel("Agent 4", 1, 11, "same", 1, T0, T0 + 5),
        kernel("Agent 4", 1, 11, "same", 2, T0 + 5, T0 + 9),
        kernel("Agent 4", 1, 11, "other", 3, T0 + 9, T0 + 12, grid=(1, 1, 1)),
    )
    a, b, c = read_one(f).ops
    assert a.name == b.name == "same" and c.name == "other"
    assert a.grid is b.grid and a.grid == (1024, 8, 3) and c.grid == (1, 1, 1)


# --------------------------------------------------------------------------- API calls and launches
def test_a_kernel_is_linked_to_the_first_hip_call_of_its_id_never_to_another_domains(tmp_path):
    folder = tmp_path / "host"
    folder.mkdir()
    csv_file(
        folder / "9_kernel_trace.csv",
        KERNEL_COLUMNS,
        kernel("Agent 4", 1, 11, "a", 7, T0 + 900, T0 + 950),
        kernel("Agent 4", 1, 11, "b", 8, T0 + 960, T0 + 990),
        kernel("Agent 4", 1, 11, "c", 9, T0 + 995, T0 + 999),
    )
    csv_file(
        folder / "9_hip_api_trace.csv",
        API_COLUMNS,
        f'"HIP_RUNTIME_API","hipLaunchKernel",9,91,7,{T0 + 500},{T0 + 510}',
        f'"HIP_RUNTIME_API","hipLaunchKernel",9,92,7,{T0 + 300},{T0 + 310}',  # the same id, earlier, another thread
        f'"HIP_RUNTIME_API","hipLaunchKernel",9,93,7,{T0 + 400},{T0 + 410}',  # and later than that: neither last nor first
        f'"HIP_RUNTIME_API","hipLaunchKernel",9,91,8,{T0 + 600},{T0 + 600}',  # begins and ends at one time
    )
    csv_file(
        folder / "9_rccl_api_trace.csv",
        API_COLUMNS,
        f'"RCCL_API","ncclAllReduce",9,91,9,{T0 + 100},{T0 + 200}',
    )
    trace = read_one(folder)
    assert [(op.name, op.launch_us, op.link) for op in trace.ops] == [
        ("a", (T0 + 300) / 1e3, "correlation"),
        ("b", (T0 + 600) / 1e3, "correlation"),
        ("c", None, None),  # an RCCL call with its id is no launch
    ]
    assert trace.api_calls == {"HIP_RUNTIME_API hipLaunchKernel": 4, "RCCL_API ncclAllReduce": 1}
    assert trace.records == {"KERNEL_DISPATCH": 3, "HIP_RUNTIME_API": 4, "RCCL_API": 1}


def test_launches_of_one_id_in_two_files_take_the_earlier_whichever_file_is_larger(tmp_path):
    folder = tmp_path / "host"
    folder.mkdir()
    csv_file(folder / "9_kernel_trace.csv", KERNEL_COLUMNS, kernel("Agent 4", 1, 11, "a", 7, T0 + 900, T0 + 950),
             kernel("Agent 4", 1, 11, "b", 8, T0 + 960, T0 + 990))  # fmt: skip
    csv_file(
        folder / "9_hip_api_trace.csv",
        API_COLUMNS,
        f'"HIP_RUNTIME_API","hipLaunchKernel",9,91,7,{T0 + 500},{T0 + 510}',
        f'"HIP_RUNTIME_API","hipMemcpy",9,91,3,{T0 + 100},{T0 + 110}',
        f'"HIP_RUNTIME_API","hipLaunchKernel",9,93,8,{T0 + 700},{T0 + 701}',
    )
    csv_file(
        folder / "9_hip_compiler_api_trace.csv",
        API_COLUMNS,
        f'"HIP_COMPILER_API","__hipPushCallConfiguration",9,92,7,{T0 + 400},{T0 + 401}',
    )
    csv_file(  # read after the one above: its later call must not win
        folder / "9_hip_more_api_trace.csv",
        API_COLUMNS,
        f'"HIP_RUNTIME_API","hipLaunchKernel",9,94,7,{T0 + 450},{T0 + 451}',
    )
    ops = read_one(folder).ops
    assert [(op.name, op.launch_us) for op in ops] == [("a", (T0 + 400) / 1e3), ("b", (T0 + 700) / 1e3)]


def test_an_api_call_is_read_from_its_own_columns_and_one_ending_before_it_starts_is_refused(tmp_path):
    bad = csv_file(
        tmp_path / "hip_api_trace.csv", API_COLUMNS, f'"HIP_RUNTIME_API","hipFree",1,1,3,{T0 + 1},{T0}'
    )
    assert refusal(bad) == f"{bad}: line 2: the HIP_RUNTIME_API call hipFree ends before it starts"
    late = csv_file(
        tmp_path / "hip_api_trace.csv", API_COLUMNS, f'"HIP_RUNTIME_API","hipFree",1,1,3,{T0},late'
    )
    assert refusal(late) == f"{late}: line 2: End_Timestamp 'late' is not an integer of ns"
    early = csv_file(tmp_path / "hip_api_trace.csv", API_COLUMNS, f'"HIP_RUNTIME_API","hipFree",1,1,3,,{T0}')
    assert refusal(early) == f"{early}: line 2: Start_Timestamp '' is not an integer of ns"
    corr = csv_file(
        tmp_path / "hip_api_trace.csv", API_COLUMNS, f'"HIP_RUNTIME_API","hipFree",1,1,x3,{T0},{T0}'
    )
    assert refusal(corr) == f"{corr}: line 2: Correlation_Id 'x3' is not an integer"


# --------------------------------------------------------------------------- rows refused, naming the line
@pytest.mark.parametrize(
    "row, why",
    [
        (kernel("Agent 4", 1, 11, "k", 1, T0 + 1, T0), f"the kernel_dispatch ends before it starts ({T0} < {T0 + 1} ns)"),
        (kernel("Agent 4", 1, 11, "k", 1, "1.5e9", T0), "Start_Timestamp '1.5e9' is not an integer of ns"),
        (kernel("Agent 4", 1, 11, "k", 1, T0, ""), "End_Timestamp '' is not an integer of ns"),
        (kernel("Agent 4", "q", 11, "k", 1, T0, T0), "a kernel dispatch with Queue_Id 'q' (rocprofv3 writes the hardware queue of every dispatch)"),
        (kernel("Agent 4", 1, "s", "k", 1, T0, T0), "a kernel_dispatch with Stream_Id 's'"),
        (kernel("Agent 4", 1, 11, "k", "c", T0, T0), "Correlation_Id 'c' is not an integer"),
        (kernel("Agent 4", 1, 11, "k", 1, T0, T0).replace("KERNEL_DISPATCH", "Kernel"), "Kind 'Kernel' is no record kind rocprofv3 writes (a damaged line?)"),
        (kernel("Agent 4", 1, 11, "k", 1, T0, T0) + ",9", "17 fields where the header has 16 (the line is cut short or has extra fields)"),
        (KERNEL_COLUMNS, "the header again (two outputs joined into one file?)"),
    ],
)  # fmt: skip
def test_a_row_rocprofv3_would_not_write_is_refused_naming_its_line(tmp_path, row, why):
    f = csv_file(
        tmp_path / "kernel_trace.csv", KERNEL_COLUMNS, kernel("Agent 4", 1, 11, "k", 1, T0, T0 + 1), "", row
    )
    assert refusal(f) == f"{f}: line 4: {why}"  # the blank line is no record, yet a line


def test_a_copy_ending_before_it_starts_is_refused_as_a_copy(tmp_path):
    f = csv_file(
        tmp_path / "c.csv", COPY_COLUMNS, f'"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",5,0,2,41,{T0},{T0 - 1}'
    )
    assert refusal(f) == f"{f}: line 2: the memory_copy ends before it starts ({T0 - 1} < {T0} ns)"


def test_a_copy_needs_no_queue_and_is_on_none(tmp_path):
    """Hardware queues are the kernels' (``queue_figures``): a copy's Queue_Id, written or not, is not kept."""
    f = csv_file(
        tmp_path / "c.csv",
        "Kind,Queue_Id,Start_Timestamp,End_Timestamp",
        f'"MEMORY_COPY",,{T0},{T0}',
        f'"MEMORY_COPY",3,{T0 + 1},{T0 + 2}',
    )
    ops = read_one(f).ops
    assert [(op.queue, op.device, op.name) for op in ops] == [(None, None, "MEMORY_COPY")] * 2


def test_a_row_of_no_record_is_refused_naming_its_first_columns(tmp_path):
    f = csv_file(tmp_path / "x.csv", "Domain,Name,A,B,C", '"HIP_RUNTIME_API","hipFree",1,2,3')
    assert refusal(f) == (
        f"{f}: line 2: a row that is no record of rocprofv3 (no Kind, no Domain and Function: columns "
        "Domain, Name, A, B ...)"
    )
    g = csv_file(tmp_path / "y.csv", API_COLUMNS, f'"","hipFree",1,1,3,{T0},{T0}')
    assert "line 2: a row that is no record of rocprofv3" in refusal(g)


def test_a_line_the_csv_module_cannot_read_is_refused_naming_that_line(tmp_path):
    """A field past the csv module's limit (128 KiB) on line 3: the line named is 3, the one the reader stopped
    in (it was named as 4, the line after)."""
    f = tmp_path / "kernel_trace.csv"
    f.write_text(
        KERNEL_COLUMNS + "\n" + kernel("Agent 4", 1, 11, "k", 1, T0, T0 + 1) + "\n" + "x" * 140_000 + "\n"
    )
    assert refusal(f) == f"{f}: line 3: not a readable CSV line (field larger than field limit (131072))"


def test_bytes_that_are_no_utf8_and_a_damaged_gzip_are_refused_naming_the_file(tmp_path):
    f = tmp_path / "kernel_trace.csv"
    f.write_bytes(KERNEL_COLUMNS.encode() + b"\n\xff\xfe\n")
    assert refusal(f).startswith(f"{f}: not a readable CSV file ('utf-8' codec can't decode")
    g = tmp_path / "g" / "kernel_trace.csv.gz"
    g.parent.mkdir()
    body = (
        KERNEL_COLUMNS
        + "\n"
        + "".join(kernel("Agent 4", 1, 11, "k", i, T0 + i, T0 + i) + "\n" for i in range(4000))
    )
    packed = gzip.compress(body.encode())
    g.write_bytes(packed[: len(packed) // 2])  # a gzip cut short, past its first 4 KiB of text
    assert refusal(g).startswith(f"{g}: a damaged gzip file (EOFError: ")


# --------------------------------------------------------------------------- a last line without its newline
@pytest.mark.parametrize(
    "last, cut",
    [
        (kernel("Agent 4", 1, 11, "k", 2, T0 + 10, T0 + 20), False),  # every field: complete
        (kernel("Agent 4", 1, 11, "k", 2, T0 + 10, T0 + 20, grid=(1, 1, 1)), False),  # a size of fewer digits
        (kernel("Agent 4", 1, 11, "k", 2, T0 + 10, T0 + 20)[:-4], True),  # fewer fields
    ],
)
def test_a_kernel_line_without_its_newline_is_cut_only_when_fields_are_missing(tmp_path, last, cut):
    """The kernel trace ends with Grid_Size_Z, no timestamp: a line with every field is whole."""
    first = kernel("Agent 4", 1, 11, "k", 1, T0, T0 + 1, grid=(1024, 8, 12))
    f = csv_file(tmp_path / "kernel_trace.csv", KERNEL_COLUMNS, first, last, end="")
    if cut:
        assert refusal(f) == f"{f}: line 3: the file ends inside it (no newline at its end: cut short)"
    else:
        assert len(read_one(f).ops) == 2


@pytest.mark.parametrize(
    "end, line_end, cut",
    [
        (str(T0 + 30), "", False),  # as many digits as the line before: complete
        (str(T0 + 30)[:-1], "", True),  # a digit fewer: cut inside the timestamp
        (
            str(T0 + 30)[:-1],
            "\n",
            False,
        ),  # with its newline: whole (refused only if it ends before it starts)
        (str(T0 + 30)[:-1], "\r", False),
    ],
)
def test_an_api_line_without_its_newline_is_cut_when_its_last_timestamp_lost_digits(
    tmp_path, end, line_end, cut
):
    rows = [
        f'"HIP_RUNTIME_API","hipFree",1,1,3,{T0},{T0 + 20}',
        f'"HIP_RUNTIME_API","hipMalloc",1,1,4,1,{end}',
    ]
    f = csv_file(tmp_path / "hip_api_trace.csv", API_COLUMNS, *rows, end=line_end)
    if cut:
        assert refusal(f) == f"{f}: line 3: the file ends inside it (no newline at its end: cut short)"
    else:
        assert read_one(f).api_calls == {"HIP_RUNTIME_API hipFree": 1, "HIP_RUNTIME_API hipMalloc": 1}


def test_a_last_line_whose_last_column_is_no_timestamp_is_whole_with_every_field(tmp_path):
    """The last column is a count, the one before it a timestamp: a count of fewer digits is no cut."""
    header = "Domain,Function,Start_Timestamp,End_Timestamp,Calls"
    rows = [
        f'"HIP_RUNTIME_API","hipFree",{T0},{T0 + 20},12345',
        f'"HIP_RUNTIME_API","hipMalloc",{T0},{T0 + 20},1',
    ]
    f = csv_file(tmp_path / "hip_api_trace.csv", header, *rows, end="")
    assert read_one(f).api_calls == {"HIP_RUNTIME_API hipFree": 1, "HIP_RUNTIME_API hipMalloc": 1}


def test_a_single_row_without_its_newline_is_complete_when_it_has_every_field(tmp_path):
    f = csv_file(
        tmp_path / "hip_api_trace.csv",
        API_COLUMNS,
        f'"HIP_RUNTIME_API","hipFree",1,1,3,{T0},{T0 + 1}',
        end="",
    )
    assert read_one(f).api_calls == {"HIP_RUNTIME_API hipFree": 1}


# --------------------------------------------------------------------------- repeated rows
OP_FIELDS = ["Kind", "Kernel_Name", "Direction", "Agent_Id", "Queue_Id", "Stream_Id", "Correlation_Id",
             "Start_Timestamp", "End_Timestamp"]  # fmt: skip
ALL_OP = OP_FIELDS + ["Dispatch_Id"]
ROW = {"Kind": "KERNEL_DISPATCH", "Kernel_Name": "k", "Direction": "", "Agent_Id": "Agent 4", "Queue_Id": "1",
       "Stream_Id": "11", "Correlation_Id": "5", "Start_Timestamp": str(T0), "End_Timestamp": str(T0 + 9),
       "Dispatch_Id": "1"}  # fmt: skip
CHANGED = {"Kind": "MEMORY_COPY", "Kernel_Name": "k2", "Direction": "D", "Agent_Id": "Agent 5", "Queue_Id": "2",
           "Stream_Id": "12", "Correlation_Id": "6", "Start_Timestamp": str(T0 + 1), "End_Timestamp": str(T0 + 10),
           "Dispatch_Id": "2"}  # fmt: skip


def table(header: list[str], *rows: dict) -> str:
    return ",".join(header) + "\n" + "".join(",".join(r[c] for c in header) + "\n" for r in rows)


@pytest.mark.parametrize("column", OP_FIELDS)
def test_two_device_ops_differing_in_one_field_of_their_identity_are_both_kept(tmp_path, column):
    f = tmp_path / "kernel_trace.csv"
    f.write_text(table(ALL_OP, ROW, dict(ROW, **{column: CHANGED[column]})))
    trace = read_one(f)
    assert len(trace.ops) == 2 and trace.duplicates == {}


def test_device_ops_differing_in_no_field_of_their_identity_are_one_and_counted_by_kind(tmp_path):
    f = tmp_path / "kernel_trace.csv"
    f.write_text(table(ALL_OP, ROW, dict(ROW, Dispatch_Id="2"), ROW, dict(ROW, Kind="MEMORY_COPY"),
                       dict(ROW, Kind="MEMORY_COPY", Dispatch_Id="3")))  # fmt: skip
    trace = read_one(f)
    assert len(trace.ops) == 2 and trace.duplicates == {"KERNEL_DISPATCH": 2, "MEMORY_COPY": 1}
    assert trace.records == {"KERNEL_DISPATCH": 1, "MEMORY_COPY": 1}


CALL = {"Domain": "HIP_RUNTIME_API", "Function": "hipFree", "Process_Id": "1", "Thread_Id": "2",
        "Correlation_Id": "3", "Start_Timestamp": str(T0), "End_Timestamp": str(T0 + 1)}  # fmt: skip


@pytest.mark.parametrize("column", list(CALL))
def test_two_api_calls_differing_in_one_field_are_both_kept(tmp_path, column):
    f = tmp_path / "hip_api_trace.csv"
    other = dict(
        CALL, **{column: "HIP_X" if column == "Domain" else "hipMalloc" if column == "Function" else "4"}
    )
    if column == "Start_Timestamp":
        other[column] = str(T0 + 1)
    if column == "End_Timestamp":
        other[column] = str(T0 + 2)
    f.write_text(table(list(CALL), CALL, other, CALL))
    trace = read_one(f)
    assert sum(trace.api_calls.values()) == 2 and trace.duplicates == {"HIP_RUNTIME_API": 1}


def test_records_of_other_kinds_are_one_only_when_every_field_is_the_same(tmp_path):
    f = tmp_path / "memory_allocation_trace.csv"
    alloc = {"Kind": "MEMORY_ALLOCATION", "Agent_Id": "Agent 4", "Allocation_Size": "4096",
             "Start_Timestamp": str(T0), "End_Timestamp": str(T0 + 1)}  # fmt: skip
    f.write_text(table(list(alloc), alloc, dict(alloc, Allocation_Size="8192"), alloc))
    trace = read_one(f)
    assert trace.records == {"MEMORY_ALLOCATION": 2} == trace.not_in_figures
    assert trace.duplicates == {"MEMORY_ALLOCATION": 1} and trace.ops == []


def test_a_row_repeated_in_another_file_of_the_process_is_a_duplicate_and_a_row_of_another_process_is_not(
    tmp_path,
):
    row = kernel("Agent 4", 1, 11, "k", 1, T0, T0 + 1)
    for name in ("1_kernel_trace.csv", "1_kernel_trace (copy).csv", "2_kernel_trace.csv"):
        csv_file(tmp_path / name, KERNEL_COLUMNS, row)
    one, two = rocprof_csv.read_processes(tmp_path)
    assert (one.process, len(one.ops), one.duplicates) == (1, 1, {"KERNEL_DISPATCH": 1})
    assert (two.process, len(two.ops), two.duplicates) == (2, 1, {})


# --------------------------------------------------------------------------- a host's folder, by process
def test_a_hosts_processes_come_in_pid_order_as_numbers(tmp_path):
    for pid, name in ((10, "k10"), (9, "k9"), (100, "k100")):
        csv_file(
            tmp_path / f"{pid}_kernel_trace.csv",
            KERNEL_COLUMNS,
            kernel("Agent 4", 1, 11, name, 1, T0, T0 + pid),
        )
    traces = rocprof_csv.read_processes(tmp_path)
    assert [(t.process, t.ops[0].name, t.ops[0].dur_ns, t.path) for t in traces] == [
        (9, "k9", 9, tmp_path),
        (10, "k10", 10, tmp_path),
        (100, "k100", 100, tmp_path),
    ]


def test_a_hosts_processes_without_device_work_are_said_on_the_first_process_with_work(tmp_path):
    csv_file(tmp_path / "5_hip_api_trace.csv", API_COLUMNS, f'"HIP_RUNTIME_API","hipInit",5,5,1,{T0},{T0 + 1}',
             f'"HIP_RUNTIME_API","hipFree",5,5,2,{T0},{T0 + 1}')  # fmt: skip
    csv_file(tmp_path / "6_kernel_trace.csv", KERNEL_COLUMNS, kernel("Agent 4", 1, 11, "k", 1, T0, T0 + 1))
    csv_file(
        tmp_path / "7_hip_api_trace.csv", API_COLUMNS, f'"HIP_RUNTIME_API","hipInit",7,7,1,{T0},{T0 + 1}'
    )
    csv_file(tmp_path / "8_kernel_trace.csv", KERNEL_COLUMNS, kernel("Agent 5", 1, 11, "k", 1, T0, T0 + 1))
    six, eight = rocprof_csv.read_processes(tmp_path)
    assert (six.process, eight.process) == (6, 8)
    assert six.without_work == [
        "process 5: 2 records, no device work",
        "process 7: 1 records, no device work",
    ]
    assert eight.without_work == []


def test_a_hosts_processes_none_with_device_work_are_each_read(tmp_path):
    csv_file(
        tmp_path / "5_hip_api_trace.csv", API_COLUMNS, f'"HIP_RUNTIME_API","hipInit",5,5,1,{T0},{T0 + 1}'
    )
    csv_file(
        tmp_path / "7_hip_api_trace.csv", API_COLUMNS, f'"HIP_RUNTIME_API","hipInit",7,7,1,{T0},{T0 + 1}'
    )
    traces = rocprof_csv.read_processes(tmp_path)
    assert [(t.process, t.without_work) for t in traces] == [(5, []), (7, [])]


def test_one_process_and_a_file_named_without_a_pid_are_refused(tmp_path):
    for name in ("20_kernel_trace.csv", "kernel_trace.csv"):
        csv_file(tmp_path / name, KERNEL_COLUMNS, kernel("Agent 4", 1, 11, "k", 1, T0, T0 + 1))
    assert refusal(tmp_path).startswith(
        f"{tmp_path}: files of processes 20 beside files named without a process id (kernel_trace.csv)"
    )


def test_files_named_without_a_pid_beside_processes_are_refused_naming_three_of_them(tmp_path):
    for name in ("20_kernel_trace.csv", "3_kernel_trace.csv", "a.csv", "b.csv", "c.csv", "d.csv"):
        csv_file(tmp_path / name, KERNEL_COLUMNS, kernel("Agent 4", 1, 11, "k", 1, T0, T0 + 1))
    assert refusal(tmp_path) == (
        f"{tmp_path}: files of processes 3, 20 beside files named without a process id (a.csv, b.csv, c.csv): "
        "which process they belong to cannot be told; move them apart"
    )


def test_a_folder_of_files_named_without_a_pid_is_one_process_and_files_of_no_record_are_listed(tmp_path):
    csv_file(tmp_path / "kernel_trace.csv", KERNEL_COLUMNS, kernel("Agent 4", 1, 11, "k", 1, T0, T0 + 1))
    (tmp_path / "agent_info.csv").write_text("Node_Id,Agent_Type\n4,GPU\n")
    (tmp_path / "kernel_stats.csv").write_text("Name,Domain,Calls\nk,KERNEL,1\n")  # a Domain and no Function
    calls = f"Function,Domain,Start_Timestamp,End_Timestamp\nf,D,{T0},{T0 + 1}\n"
    (tmp_path / "x_api_trace.csv.gz").write_bytes(gzip.compress(calls.encode()))
    (tmp_path / "broken.csv").write_bytes(b"\xff\xfe")
    trace = read_one(tmp_path)
    assert trace.process is None and len(trace.ops) == 1
    assert trace.not_read == ["agent_info.csv", "broken.csv", "kernel_stats.csv"]
    assert trace.api_calls == {"D f": 1}


def test_a_file_of_the_domain_and_function_columns_alone_is_a_record_file(tmp_path):
    """It is read (and refused: a call without its times), not listed as a file of no record."""
    csv_file(tmp_path / "kernel_trace.csv", KERNEL_COLUMNS, kernel("Agent 4", 1, 11, "k", 1, T0, T0 + 1))
    csv_file(tmp_path / "calls.csv", "Domain,Function", '"HIP_RUNTIME_API","hipFree"')
    assert (
        refusal(tmp_path) == f"{tmp_path / 'calls.csv'}: line 2: Start_Timestamp None is not an integer of ns"
    )


def test_a_lone_file_of_no_record_is_read_and_refused_rather_than_listed(tmp_path):
    f = tmp_path / "agent_info.csv"
    f.write_text("Node_Id,Agent_Type\n4,GPU\n")
    assert "line 2: a row that is no record of rocprofv3" in refusal(f)


def test_a_kernel_trace_file_is_read_with_the_files_of_its_own_prefix(tmp_path):
    csv_file(
        tmp_path / "12_kernel_trace.csv", KERNEL_COLUMNS, kernel("Agent 4", 1, 11, "k", 7, T0 + 100, T0 + 200)
    )
    csv_file(
        tmp_path / "12_hip_api_trace.csv",
        API_COLUMNS,
        f'"HIP_RUNTIME_API","hipLaunchKernel",12,1,7,{T0},{T0 + 5}',
    )
    csv_file(
        tmp_path / "123_hip_api_trace.csv", API_COLUMNS, f'"HIP_RUNTIME_API","hipX",123,1,7,{T0},{T0 + 1}'
    )
    csv_file(tmp_path / "hip_api_trace.csv", API_COLUMNS, f'"HIP_RUNTIME_API","hipY",1,1,7,{T0},{T0 + 1}')
    trace = read_one(tmp_path / "12_kernel_trace.csv")
    assert trace.process == 12 and trace.ops[0].launch_us == T0 / 1e3
    assert trace.api_calls == {"HIP_RUNTIME_API hipLaunchKernel": 1}


def test_an_unprefixed_kernel_trace_file_is_read_with_the_unprefixed_files_only(tmp_path):
    csv_file(
        tmp_path / "kernel_trace.csv", KERNEL_COLUMNS, kernel("Agent 4", 1, 11, "k", 7, T0 + 100, T0 + 200)
    )
    csv_file(
        tmp_path / "hip_api_trace.csv",
        API_COLUMNS,
        f'"HIP_RUNTIME_API","hipLaunchKernel",1,1,7,{T0},{T0 + 5}',
    )
    csv_file(
        tmp_path / "12_hip_api_trace.csv", API_COLUMNS, f'"HIP_RUNTIME_API","hipX",12,1,7,{T0 + 1},{T0 + 2}'
    )
    trace = read_one(tmp_path / "kernel_trace.csv")
    assert trace.process is None and trace.api_calls == {"HIP_RUNTIME_API hipLaunchKernel": 1}
    assert trace.ops[0].launch_us == T0 / 1e3


def test_a_gzipped_kernel_trace_file_is_read_with_its_siblings(tmp_path):
    body = KERNEL_COLUMNS + "\n" + kernel("Agent 4", 1, 11, "k", 7, T0 + 100, T0 + 200) + "\n"
    (tmp_path / "4_kernel_trace.csv.gz").write_bytes(gzip.compress(body.encode()))
    csv_file(
        tmp_path / "4_hip_api_trace.csv",
        API_COLUMNS,
        f'"HIP_RUNTIME_API","hipLaunchKernel",4,1,7,{T0},{T0 + 5}',
    )
    trace = read_one(tmp_path / "4_kernel_trace.csv.gz")
    assert trace.process == 4 and trace.ops[0].launch_us == T0 / 1e3


def test_another_file_is_read_alone(tmp_path):
    csv_file(
        tmp_path / "hip_api_trace.csv", API_COLUMNS, f'"HIP_RUNTIME_API","hipMemcpy",4,1,7,{T0},{T0 + 5}'
    )
    csv_file(
        tmp_path / "4_copies.csv",
        COPY_COLUMNS,
        f'"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",5,0,2,7,{T0},{T0 + 1}',
    )
    csv_file(
        tmp_path / "4_hip_api_trace.csv", API_COLUMNS, f'"HIP_RUNTIME_API","hipMemcpy",4,1,7,{T0},{T0 + 5}'
    )
    trace = read_one(tmp_path / "4_copies.csv")
    assert trace.process is None and trace.api_calls == {} and trace.ops[0].launch_us is None


def test_a_kernel_trace_opened_already_is_read_with_its_siblings_another_file_from_its_stream(tmp_path):
    from aorta.timeline.trace_source import open_source

    csv_file(
        tmp_path / "4_kernel_trace.csv", KERNEL_COLUMNS, kernel("Agent 4", 1, 11, "k", 7, T0 + 100, T0 + 200)
    )
    csv_file(
        tmp_path / "4_hip_api_trace.csv",
        API_COLUMNS,
        f'"HIP_RUNTIME_API","hipLaunchKernel",4,1,7,{T0},{T0 + 5}',
    )
    with open_source(tmp_path / "4_kernel_trace.csv") as s:
        (trace,) = rocprof_csv.read_processes(tmp_path / "4_kernel_trace.csv", s)
    assert trace.process == 4 and trace.ops[0].launch_us == T0 / 1e3
    with open_source(tmp_path / "4_hip_api_trace.csv") as s:
        (tmp_path / "4_hip_api_trace.csv").unlink()  # as a pipe: read once, from the stream already open
        (calls,) = rocprof_csv.read_processes(tmp_path / "4_hip_api_trace.csv", s)
    assert calls.process is None and calls.api_calls == {"HIP_RUNTIME_API hipLaunchKernel": 1}
    assert calls.not_read == [] and calls.apart == []
    assert calls.path == tmp_path / "4_hip_api_trace.csv" and calls.source == CSV


# --------------------------------------------------------------------------- files of another run
DAY_NS = 86_400 * 10**9


def test_a_file_whose_times_are_a_day_from_the_kernels_is_left_out_and_named(tmp_path):
    csv_file(
        tmp_path / "1_kernel_trace.csv", KERNEL_COLUMNS, kernel("Agent 4", 1, 11, "k", 7, T0, T0 + 2_000_000)
    )
    csv_file(tmp_path / "1_hip_api_trace.csv", API_COLUMNS,
             f'"HIP_RUNTIME_API","hipLaunchKernel",1,1,7,{T0 + DAY_NS},{T0 + DAY_NS + 500_000}')  # fmt: skip
    csv_file(tmp_path / "1_memory_copy_trace.csv", COPY_COLUMNS,
             f'"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",5,0,2,8,{T0 + 2 * DAY_NS},{T0 + 2 * DAY_NS + 1}')  # fmt: skip
    trace = read_one(tmp_path)
    assert [op.name for op in trace.ops] == ["k"] and trace.ops[0].launch_us is None
    assert trace.apart == [
        "1_hip_api_trace.csv (86405000.000 to 86405000.500 ms; the kernels' 5000.000 to 5002.000 ms)",
        "1_memory_copy_trace.csv (172805000.000 to 172805000.000 ms; the kernels' 5000.000 to 5002.000 ms)",
    ]
    assert trace.records == {"KERNEL_DISPATCH": 1, "HIP_RUNTIME_API": 1, "MEMORY_COPY": 1}  # counted still
    assert trace.api_calls == {"HIP_RUNTIME_API hipLaunchKernel": 1}


def test_with_no_kernels_the_copies_times_are_the_run_and_a_file_with_no_rows_is_kept(tmp_path):
    csv_file(tmp_path / "1_memory_copy_trace.csv", COPY_COLUMNS,
             f'"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",5,0,2,8,{T0},{T0 + 1}')  # fmt: skip
    csv_file(tmp_path / "1_hip_api_trace.csv", API_COLUMNS,
             f'"HIP_RUNTIME_API","hipMemcpy",1,1,8,{T0 + DAY_NS},{T0 + DAY_NS + 1}',
             f'"HIP_RUNTIME_API","hipMemcpy",1,1,9,{T0 + DAY_NS},{T0 + DAY_NS + 1}')  # fmt: skip
    csv_file(tmp_path / "1_rccl_api_trace.csv", API_COLUMNS)
    csv_file(
        tmp_path / "1_marker_api_trace.csv",
        API_COLUMNS,
        f'"MARKER_CORE_API","step",1,1,1,{T0 + 10},{T0 + 20}',
    )
    trace = read_one(tmp_path)
    assert [op.launch_us for op in trace.ops] == [None]
    assert [a.split(" (")[0] for a in trace.apart] == ["1_hip_api_trace.csv"]
    assert "the kernels' 5000.000 to 5000.000 ms" in trace.apart[0]


def test_kernels_of_two_files_make_one_span_a_call_between_them_is_the_same_run(tmp_path):
    """The span is from the first kernel's start to the last's end over every kernel file: a call far from one
    file's kernels but within the whole span is of the run."""
    late = T0 + 3 * DAY_NS
    csv_file(tmp_path / "1_kernel_trace.csv", KERNEL_COLUMNS, kernel("Agent 4", 1, 11, "a", 7, T0, T0 + 1))
    csv_file(
        tmp_path / "1_kernel_trace (2).csv", KERNEL_COLUMNS, kernel("Agent 4", 1, 11, "b", 8, late, late + 1)
    )
    csv_file(tmp_path / "1_hip_api_trace.csv", API_COLUMNS,
             f'"HIP_RUNTIME_API","hipLaunchKernel",1,1,7,{T0 + DAY_NS},{T0 + DAY_NS + 1}')  # fmt: skip
    trace = read_one(tmp_path)
    assert trace.apart == [] and trace.ops[0].launch_us == (T0 + DAY_NS) / 1e3


def test_a_files_span_is_from_its_earliest_start_to_its_latest_end_whatever_the_row_order(tmp_path):
    """Kernel rows: [0, 10 ms), [5, 6 ms) inside it, then one two days later: a call one day in is of the run,
    and the note of a file ten days off names the kernels' whole span."""
    ms = 10**6
    csv_file(
        tmp_path / "1_kernel_trace.csv",
        KERNEL_COLUMNS,
        kernel("Agent 4", 1, 11, "a", 7, T0, T0 + 10 * ms),
        kernel("Agent 4", 1, 11, "b", 8, T0 + 5 * ms, T0 + 6 * ms),
        kernel("Agent 4", 1, 11, "c", 9, T0 + 2 * DAY_NS, T0 + 2 * DAY_NS + ms),
    )
    csv_file(tmp_path / "1_hip_api_trace.csv", API_COLUMNS,
             f'"HIP_RUNTIME_API","hipLaunchKernel",1,1,7,{T0 + DAY_NS},{T0 + DAY_NS + 1}',
             f'"HIP_RUNTIME_API","hipLaunchKernel",1,1,8,{T0 + DAY_NS + 2},{T0 + DAY_NS + 3}',
             f'"HIP_RUNTIME_API","hipMemcpy",1,1,1,{T0 + DAY_NS - 5},{T0 + DAY_NS - 4}')  # fmt: skip
    csv_file(tmp_path / "1_memory_copy_trace.csv", COPY_COLUMNS,
             f'"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",5,0,2,8,{T0 + 10 * DAY_NS},{T0 + 10 * DAY_NS + 1}')  # fmt: skip
    trace = read_one(tmp_path)
    assert [(op.name, op.launch_us) for op in trace.ops] == [
        ("a", (T0 + DAY_NS) / 1e3), ("b", (T0 + DAY_NS + 2) / 1e3), ("c", None)
    ]  # fmt: skip
    assert trace.apart == [
        "1_memory_copy_trace.csv (864005000.000 to 864005000.000 ms; the kernels' 5000.000 to 172805001.000 ms)"
    ]


def test_an_empty_correlation_id_is_none_and_an_empty_file_has_no_records(tmp_path):
    f = csv_file(tmp_path / "kernel_trace.csv", KERNEL_COLUMNS, kernel("Agent 4", 1, 11, "k", "", T0, T0 + 1))
    assert read_one(f).ops[0].correlation is None
    (tmp_path / "x_kernel_trace.csv").write_bytes(b"")
    empty = read_one(tmp_path / "x_kernel_trace.csv")
    assert (empty.ops, empty.records, empty.api_calls) == ([], {}, {})
    folder = tmp_path / "f"
    folder.mkdir()
    csv_file(folder / "kernel_trace.csv", KERNEL_COLUMNS, kernel("Agent 4", 1, 11, "k", 1, T0, T0 + 1))
    (folder / "rccl_api_trace.csv").write_bytes(b"")
    assert read_one(folder).not_read == ["rccl_api_trace.csv"]


def test_api_calls_differing_only_outside_their_identity_are_one(tmp_path):
    """A call is its domain, function, process, thread, correlation id and times: another column (the
    arguments rocprofv3 can add) does not make two calls of one."""
    header = API_COLUMNS + ",Args"
    row = f'"HIP_RUNTIME_API","hipFree",1,1,3,{T0},{T0 + 1}'
    f = csv_file(tmp_path / "hip_api_trace.csv", header, row + ',"p=1"', row + ',"p=2"')
    assert read_one(f).duplicates == {"HIP_RUNTIME_API": 1}


def test_a_bad_row_before_the_last_is_refused_naming_the_file(tmp_path):
    good = kernel("Agent 4", 1, 11, "k", 1, T0, T0 + 1)
    f = csv_file(tmp_path / "kernel_trace.csv", KERNEL_COLUMNS, good, good + ",9", good)
    assert (
        refusal(f)
        == f"{f}: line 3: 17 fields where the header has 16 (the line is cut short or has extra fields)"
    )


def test_a_calls_files_span_runs_from_its_earliest_call_to_its_latest(tmp_path):
    """Its first call launches the kernel, its last is ten days on: the file overlaps the run and is kept."""
    csv_file(tmp_path / "1_kernel_trace.csv", KERNEL_COLUMNS, kernel("Agent 4", 1, 11, "k", 7, T0, T0 + 1))
    csv_file(tmp_path / "1_hip_api_trace.csv", API_COLUMNS,
             f'"HIP_RUNTIME_API","hipLaunchKernel",1,1,7,{T0 - 10},{T0 - 9}',
             f'"HIP_RUNTIME_API","hipFree",1,1,8,{T0 + 10 * DAY_NS},{T0 + 10 * DAY_NS + 1}')  # fmt: skip
    trace = read_one(tmp_path)
    assert trace.apart == [] and trace.ops[0].launch_us == (T0 - 10) / 1e3
