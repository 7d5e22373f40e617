"""rocprofv3's outputs as rocprofv3 writes them (issue 49): CSV rows checked (cut lines, duplicates, empty ids,
``--sys-trace`` records), one host's folder read one rank per process, other runs' files left out with the
reason, and rocpd databases joined as rocprofiler-sdk's writer (``generateRocpd.cpp``) fills them:
``rocpd_event.stack_id`` the internal correlation id, ``correlation_id`` the external one (0), uuid-suffixed
tables under unsuffixed views, ``pid`` pointing at ``rocpd_info_process``. Expected values are counted here with
the csv module."""

from __future__ import annotations

import csv
import io
import sqlite3
from pathlib import Path

import amd_traces
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_tiers import examples
from trace_cases import ROCPD_SAMPLES, SAMPLES, refused, rows, write

from aorta.cli import main
from aorta.report import trace_figures
from aorta.report.errors import ReportInputError


# --------------------------------------------------------------------------- CSV rows as rocprofv3 writes them
def test_duplicated_csv_rows_are_dropped_and_counted(kernel_csv, tmp_path):
    lines = kernel_csv.decode().splitlines(keepends=True)
    doubled = write(tmp_path / "kernel_trace.csv", "".join([*lines, lines[1], lines[2]]).encode())
    (rank,) = trace_figures.figures([doubled])["ranks"]
    (once,) = trace_figures.figures([write(tmp_path / "once.csv", kernel_csv)])["ranks"]
    assert rank["kernels"] == 9 and rank["hardware_queues"] == once["hardware_queues"]
    assert rank["duplicates_dropped"] == {"device_ops": 2, "events": 2}
    assert "2 duplicated rows dropped (each kept once)" in rank["note"]


@settings(max_examples=examples(30), deadline=None)
@given(again=st.lists(st.integers(0, 8), max_size=6), order=st.randoms(use_true_random=False))
def test_any_rows_repeated_anywhere_give_the_figures_of_the_rows_once(
    kernel_csv, tmp_path_factory, again, order
):
    header, *body = kernel_csv.decode().splitlines(keepends=True)
    lines = body + [body[i] for i in again]
    order.shuffle(lines)
    once_csv = write(tmp_path_factory.mktemp("once") / "kernel_trace.csv", kernel_csv)
    repeated = write(tmp_path_factory.mktemp("dup") / "kernel_trace.csv", "".join([header, *lines]).encode())
    (once,) = trace_figures.figures([once_csv])["ranks"]
    (rank,) = trace_figures.figures([repeated])["ranks"]
    assert rank["hardware_queues"] == once["hardware_queues"] and rank["steps"] == once["steps"]
    assert rank["duplicates_dropped"]["device_ops"] == len(again)


def test_a_file_copied_beside_itself_in_a_process_folder_is_counted_once(kernel_csv, tmp_path):
    write(tmp_path / "100_kernel_trace.csv", kernel_csv)
    write(tmp_path / "100_kernel_trace (copy).csv", kernel_csv)
    (rank,) = trace_figures.figures([tmp_path])["ranks"]
    assert rank["kernels"] == 9 and rank["duplicates_dropped"]["device_ops"] == 9 and rank["process"] == 100


def test_an_empty_queue_id_cell_is_refused_naming_the_line(kernel_csv, tmp_path, capsys):
    lines = kernel_csv.decode().splitlines(keepends=True)
    cells = lines[3].split(",")
    cells[2] = ""  # Queue_Id
    p = write(tmp_path / "kernel_trace.csv", "".join([*lines[:3], ",".join(cells), *lines[4:]]).encode())
    assert refused([str(p)], capsys) == (
        f"{p}: line 4: a kernel dispatch with Queue_Id '' (rocprofv3 writes the hardware queue of every dispatch)"
    )


def test_blank_lines_are_no_records_and_a_repeated_header_is_refused(kernel_csv, tmp_path, capsys):
    header, *body = kernel_csv.decode().splitlines(keepends=True)
    (plain,) = trace_figures.figures([write(tmp_path / "a.csv", kernel_csv)])["ranks"]
    (blank,) = trace_figures.figures([write(tmp_path / "b.csv", "".join([header, *body[:3], "\n", *body[3:], "\n"]).encode())])["ranks"]  # fmt: skip
    assert blank["hardware_queues"] == plain["hardware_queues"] and blank["kernels"] == 9
    joined = write(tmp_path / "kernel_trace.csv", "".join([header, *body[:4], header, *body[4:]]).encode())
    assert (
        refused([str(joined)], capsys)
        == f"{joined}: line 6: the header again (two outputs joined into one file?)"
    )


def test_a_correlation_id_that_is_no_integer_is_refused_naming_the_line(kernel_csv, tmp_path, capsys):
    header, *body = kernel_csv.decode().splitlines(keepends=True)
    row = next(csv.reader([body[2]]))
    row[8] = "7x"  # Correlation_Id
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n").writerow(row)
    p = write(tmp_path / "kernel_trace.csv", "".join([header, *body[:2], out.getvalue(), *body[3:]]).encode())
    assert refused([str(p)], capsys) == f"{p}: line 4: Correlation_Id '7x' is not an integer"


def test_an_empty_stream_id_cell_is_refused_naming_the_line(kernel_csv, tmp_path, capsys):
    header, *body = kernel_csv.decode().splitlines(keepends=True)
    cells = body[1].split(",")
    cells[3] = ""  # Stream_Id
    p = write(tmp_path / "kernel_trace.csv", "".join([header, body[0], ",".join(cells), *body[2:]]).encode())
    assert refused([str(p)], capsys) == f"{p}: line 3: a kernel_dispatch with Stream_Id ''"


def test_a_damaged_kind_is_refused_naming_the_line_not_counted_as_another_kind(kernel_csv, tmp_path, capsys):
    header, *body = kernel_csv.decode().splitlines(keepends=True)
    p = write(tmp_path / "kernel_trace.csv", "".join([header, body[0], "\0" + body[1], *body[2:]]).encode())
    assert refused([str(p)], capsys) == (
        f"{p}: line 3: Kind '\\x00\"KERNEL_DISPATCH\"' is no record kind rocprofv3 writes (a damaged line?)"
    )


@pytest.mark.parametrize("name, column", [("kernel_trace.csv", "Start_Timestamp"), ("api", "End_Timestamp")])
def test_a_line_cut_inside_a_timestamp_is_refused_as_cut(kernel_csv, tmp_path, capsys, name, column):
    if name == "api":  # a HIP API trace ends each line with its End_Timestamp: the cut keeps every field
        text = (SAMPLES / "hip_runtime_trace.csv").read_text()
        name = "hip_api_trace.csv"
    else:
        text = kernel_csv.decode()
    last = text.rstrip("\n").rsplit("\n", 1)[1]
    value = rows(text.encode())[-1][column]
    cut = text[: text.rindex(last) + last.index(value) + len(value) // 2]  # the file ends mid-timestamp
    p = write(tmp_path / name, cut.encode())
    line = refused([str(p)], capsys)
    n = text.rstrip("\n").count("\n") + 1
    assert line.startswith(f"{p}: line {n}: ") and "cut short" in line and "before it starts" not in line


def test_a_sys_trace_folder_is_read_with_its_other_records_counted(kernel_csv, tmp_path):
    """rocprofv3 --sys-trace: HIP, HSA, marker and RCCL API calls, kernels, copies, memory allocations and
    scratch memory, each in ``<pid>_<kind>.csv``, and agent_info.csv beside them."""
    ks = rows(kernel_csv)
    t0 = int(ks[0]["Start_Timestamp"])
    write(tmp_path / "4242_kernel_trace.csv", kernel_csv)
    api = '"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
    write(
        tmp_path / "4242_hsa_api_trace.csv",
        f'{api}"HSA_CORE_API","hsa_init",4242,4242,90,{t0 - 900},{t0 - 800}\n'.encode(),
    )
    write(
        tmp_path / "4242_marker_api_trace.csv",
        f'{api}"MARKER_CORE_API","step",4242,4242,91,{t0 - 50},{t0 + 10}\n'.encode(),
    )
    write(
        tmp_path / "4242_memory_allocation_trace.csv",
        '"Kind","Operation","Agent_Id","Allocation_Size","Address","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
        f'"MEMORY_ALLOCATION","MEMORY_ALLOCATION_ALLOCATE","Agent 4",4096,"0x7f00",92,{t0 - 700},{t0 - 600}\n'.encode(),
    )
    write(
        tmp_path / "4242_scratch_memory_trace.csv",
        '"Kind","Operation","Agent_Id","Queue_Id","Thread_Id","Alloc_Flags","Start_Timestamp","End_Timestamp"\n'
        f'"SCRATCH_MEMORY","SCRATCH_MEMORY_ALLOC","Agent 4",1,4242,"NONE",{t0 - 500},{t0 - 400}\n'.encode(),
    )
    write(tmp_path / "4242_agent_info.csv", b'"Node_Id","Logical_Node_Id","Agent_Type"\n4,4,"GPU"\n')  # fmt: skip
    (rank,) = trace_figures.figures([tmp_path])["ranks"]
    assert rank["kernels"] == len(ks) and rank["files_not_read"] == ["4242_agent_info.csv"]
    assert rank["records"]["MEMORY_ALLOCATION"] == rank["records"]["SCRATCH_MEMORY"] == 1
    assert rank["api_calls"] == {"HSA_CORE_API hsa_init": 1, "MARKER_CORE_API step": 1}
    assert "records read but in no figure: MEMORY_ALLOCATION 1, SCRATCH_MEMORY 1" in rank["note"]
    assert "left out" not in rank["note"]  # hsa_init ran before the first kernel: the same run, not another's


# --------------------------------------------------------------------------- one folder per host
def two_processes(folder: Path, kernel_csv: bytes) -> tuple[list[dict], list[dict]]:
    """A host's folder: process 100 ran the sample's first five kernels, process 200 the rest, 1 s later."""
    ks = rows(kernel_csv)
    later = [dict(k, Start_Timestamp=int(k["Start_Timestamp"]) + 10**9, End_Timestamp=int(k["End_Timestamp"]) + 10**9)
             for k in ks[5:]]  # fmt: skip
    for name, part in (("100_kernel_trace.csv", ks[:5]), ("200_kernel_trace.csv", later)):
        out = io.StringIO()
        w = csv.DictWriter(out, fieldnames=list(ks[0]), quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
        w.writeheader()
        w.writerows(part)
        write(folder / name, out.getvalue().encode())
    return ks[:5], ks[5:]


def test_a_hosts_folder_is_read_one_rank_per_process_with_its_own_queues(kernel_csv, tmp_path, capsys):
    first, second = two_processes(tmp_path, kernel_csv)
    result = trace_figures.figures([tmp_path])
    assert [(r["process"], r["kernels"]) for r in result["ranks"]] == [(100, 5), (200, 4)]
    for rank, ks in zip(result["ranks"], (first, second)):
        queues = sorted({int(k["Queue_Id"]) for k in ks})
        assert [q["queue"] for q in rank["hardware_queues"]] == queues
        assert [q["kernels"] for q in rank["hardware_queues"]] == [
            sum(int(k["Queue_Id"]) == q for k in ks) for q in queues
        ]
        window_ms = (
            max(int(k["End_Timestamp"]) for k in ks) - min(int(k["Start_Timestamp"]) for k in ks)
        ) / 1e6
        assert rank["steps"][0]["window_ms"] == pytest.approx(window_ms, abs=1e-6)  # not the 1 s between them
    assert "one rank per process, in pid order" in result["ranks_from"]


def test_a_hosts_folder_with_files_of_no_process_is_refused_naming_the_pids(kernel_csv, tmp_path, capsys):
    two_processes(tmp_path, kernel_csv)
    write(tmp_path / "kernel_trace.csv", kernel_csv)
    line = refused([str(tmp_path)], capsys)
    assert line.startswith(f"{tmp_path}: files of processes 100, 200 beside files named without a process id")


def test_a_file_of_another_run_in_the_folder_is_left_out_with_the_reason(kernel_csv, tmp_path):
    write(tmp_path / "kernel_trace.csv", kernel_csv)
    (alone,) = trace_figures.figures([tmp_path / "kernel_trace.csv"])["ranks"]
    (SAMPLES / "memory_copy_trace.csv").is_file() or pytest.skip(amd_traces.absent(SAMPLES))
    write(tmp_path / "memory_copy_trace.csv", (SAMPLES / "memory_copy_trace.csv").read_bytes())
    (rank,) = trace_figures.figures([tmp_path])["ranks"]
    assert rank["steps"] == alone["steps"] and rank["ops"] == 9  # idle is not the hours between the runs
    assert rank["records"]["MEMORY_COPY"] == 4
    assert "memory_copy_trace.csv (2414192684.609 to 2414192706.692 ms; the kernels' " in rank["note"]


# --------------------------------------------------------------------------- rocpd as rocprofv3 writes it


def test_the_rocpd_samples_are_not_linked_by_the_external_correlation_id():
    """Every event of rocprofv3's database has correlation_id 0 (the external id): joined on it, every op was
    'linked' to the first HIP call. The kernels' own launches are in another process (pid 238), another run."""
    if not ROCPD_SAMPLES.is_file():
        pytest.skip(amd_traces.absent(ROCPD_SAMPLES))
    con = sqlite3.connect(f"file:{ROCPD_SAMPLES}?mode=ro", uri=True)
    assert con.execute("SELECT DISTINCT correlation_id FROM rocpd_event").fetchall() == [(0,)]
    con.close()
    (rank,) = trace_figures.figures([ROCPD_SAMPLES])["ranks"]
    assert rank["linked_by"] == {"none": 9} and rank["process"] == 1
    assert [q["kernels"] for q in rank["hardware_queues"]] == [4, 2, 2, 1]
    assert "process 238: 8 API calls, no device work" in rank["note"]


UUID = "_0198c0de_1234_7abc_8def_0123456789ab"
GUID = UUID[1:].replace("_", "-")
TABLES = {
    "rocpd_string": '"id" INTEGER, "guid" TEXT, "string" TEXT',
    "rocpd_info_process": '"id" INTEGER, "guid" TEXT, "nid" INTEGER, "ppid" INTEGER, "pid" INTEGER',
    "rocpd_info_kernel_symbol": '"id" INTEGER, "guid" TEXT, "kernel_name" TEXT, "display_name" TEXT',
    "rocpd_event": '"id" INTEGER, "guid" TEXT, "category_id" INTEGER, "stack_id" INTEGER, '
    '"parent_stack_id" INTEGER, "correlation_id" INTEGER',
    "rocpd_region": '"id" INTEGER, "guid" TEXT, "pid" INTEGER, "tid" INTEGER, "start" BIGINT, "end" BIGINT, '
    '"name_id" INTEGER, "event_id" INTEGER',
    "rocpd_kernel_dispatch": '"id" INTEGER, "guid" TEXT, "pid" INTEGER, "agent_id" INTEGER, "kernel_id" INTEGER, '
    '"queue_id" INTEGER, "stream_id" INTEGER, "start" BIGINT, "end" BIGINT, "event_id" INTEGER',
}


def rocpd(
    path: Path,
    kernels: list[dict],
    processes: dict[int, list[int]],
    launch_lead_ns: int = 5000,
    guid: str = GUID,
) -> Path:
    """A rocpd database as rocprofv3 writes one: uuid-suffixed tables under unsuffixed views, every row with
    its session's guid, the internal correlation id in ``stack_id``, ``correlation_id`` 0, ``pid`` columns
    pointing at ``rocpd_info_process.id``; each kernel's hipLaunchKernel ``launch_lead_ns`` before it, with
    the same internal id. ``processes``: os pid -> the indices of ``kernels`` it ran. Row ids count down
    from 1000, so an id is never a correlation id by accident."""
    con = sqlite3.connect(path)
    for t, cols in TABLES.items():
        con.execute(f"CREATE TABLE `{t}{UUID}` ({cols})")
        con.execute(f"CREATE VIEW `{t}` AS SELECT * FROM `{t}{UUID}`")
    ins = lambda t, **v: con.execute(  # noqa: E731
        f"INSERT INTO `{t}{UUID}` (guid, {', '.join(v)}) VALUES (?, {', '.join('?' * len(v))})",
        (guid, *v.values()),
    )
    for s, text in ((1, "KERNEL_DISPATCH"), (2, "HIP_RUNTIME_API"), (3, "hipLaunchKernel")):
        ins("rocpd_string", id=s, string=text)
    rid = 1000
    for proc_id, (pid, indices) in enumerate(sorted(processes.items()), start=1):
        ins("rocpd_info_process", id=proc_id, nid=1, ppid=1, pid=pid)
        for i in indices:
            k, corr = kernels[i], int(kernels[i]["Correlation_Id"]) + 100 * proc_id
            start, end = int(k["Start_Timestamp"]), int(k["End_Timestamp"])
            ins("rocpd_info_kernel_symbol", id=rid, kernel_name=k["Kernel_Name"])
            ins("rocpd_event", id=rid, category_id=1, stack_id=corr, parent_stack_id=corr, correlation_id=0)
            ins("rocpd_kernel_dispatch", id=rid, pid=proc_id, agent_id=4, kernel_id=rid, queue_id=int(k["Queue_Id"]),
                stream_id=int(k["Stream_Id"]), start=start, end=end, event_id=rid)  # fmt: skip
            ins(
                "rocpd_event",
                id=rid - 1,
                category_id=2,
                stack_id=corr,
                parent_stack_id=corr,
                correlation_id=0,
            )
            ins("rocpd_region", id=rid - 1, pid=proc_id, tid=pid, start=start - launch_lead_ns,
                end=start - launch_lead_ns + 100, name_id=3, event_id=rid - 1)  # fmt: skip
            rid -= 2
    con.commit()
    con.close()
    return path


def test_rocpd_kernels_are_linked_to_their_own_launch_by_stack_id(kernel_csv, tmp_path):
    ks = rows(kernel_csv)
    db = rocpd(tmp_path / "host_results.db", ks, {777: list(range(len(ks)))})
    (trace,) = trace_figures.read_traces(db)
    launches = sorted(op.launch_us for op in trace.ops)
    assert launches == sorted((int(k["Start_Timestamp"]) - 5000) / 1e3 for k in ks)  # each its own, not one
    assert len(set(launches)) == len(ks) and all(op.link == "correlation" for op in trace.ops)
    assert trace.process == 777 and trace.source == "rocpd"


def test_a_rocpd_database_without_its_views_is_read_from_the_uuid_suffixed_tables(kernel_csv, tmp_path):
    ks = rows(kernel_csv)
    with_views = rocpd(tmp_path / "a.db", ks, {5: list(range(len(ks)))})
    (expected,) = trace_figures.figures([with_views])["ranks"]
    bare = rocpd(tmp_path / "b.db", ks, {5: list(range(len(ks)))})
    con = sqlite3.connect(bare)
    for t in TABLES:
        con.execute(f"DROP VIEW `{t}`")
    con.commit()
    con.close()
    before = bare.read_bytes()
    (rank,) = trace_figures.figures([bare])["ranks"]
    assert {k: rank[k] for k in ("steps", "hardware_queues", "linked_by", "process")} == {
        k: expected[k] for k in ("steps", "hardware_queues", "linked_by", "process")
    }
    assert rank["linked_by"] == {"correlation": 9} and bare.read_bytes() == before


def test_a_rocpd_kernel_without_its_queue_is_refused_naming_the_table_and_row(kernel_csv, tmp_path, capsys):
    db = rocpd(tmp_path / "q.db", rows(kernel_csv), {9: [0, 1, 2]})
    con = sqlite3.connect(db)
    con.execute(f"UPDATE `rocpd_kernel_dispatch{UUID}` SET queue_id = NULL WHERE id = 998")
    con.commit()
    con.close()
    assert refused([str(db)], capsys) == (
        f"{db}: table rocpd_kernel_dispatch, row id 998: queue_id None (rocprofv3 writes the queue of every dispatch)"
    )


def test_a_rocpd_database_of_two_processes_is_two_ranks_with_their_own_queues(kernel_csv, tmp_path):
    ks = rows(kernel_csv)
    db = rocpd(tmp_path / "merged.db", ks, {31: [0, 1, 2, 3, 4], 47: [5, 6, 7, 8]})
    result = trace_figures.figures([db])
    assert [(r["process"], r["kernels"], r["linked_by"]) for r in result["ranks"]] == [
        (31, 5, {"correlation": 5}),
        (47, 4, {"correlation": 4}),
    ]
    for rank, part in zip(result["ranks"], (ks[:5], ks[5:])):
        assert sum(q["kernels"] for q in rank["hardware_queues"]) == len(part)
        assert {q["queue"] for q in rank["hardware_queues"]} == {int(k["Queue_Id"]) for k in part}
    with pytest.raises(ReportInputError, match=r"holds 2 processes \(pids 31, 47\): read each as a rank"):
        trace_figures.read_trace(db)


def test_a_rocpd_database_merged_from_two_sessions_keeps_them_apart(kernel_csv, tmp_path):
    """Two runs of pid 5 merged into one database: the same row ids, told apart by their sessions' guids."""
    ks = rows(kernel_csv)
    merged = rocpd(tmp_path / "merged.db", ks, {5: [0, 1, 2, 3, 4]})
    other = rocpd(tmp_path / "other.db", ks, {5: [5, 6, 7, 8]}, guid="0198c0de-0000-7abc-8def-000000000002")
    con = sqlite3.connect(merged)
    con.execute("ATTACH DATABASE ? AS other", (str(other),))
    for t in TABLES:
        con.execute(f"INSERT INTO `{t}{UUID}` SELECT * FROM other.`{t}{UUID}`")
    con.commit()
    con.close()
    result = trace_figures.figures([merged])
    assert [(r["process"], r["kernels"], r["linked_by"]) for r in result["ranks"]] == [
        (5, 5, {"correlation": 5}),
        (5, 4, {"correlation": 4}),
    ]


def test_a_hosts_folder_of_rocpd_databases_is_one_rank_per_process(kernel_csv, tmp_path, capsys):
    ks = rows(kernel_csv)
    rocpd(tmp_path / "1000_results.db", ks, {1000: [0, 1, 2]})  # pid order, not the names'
    rocpd(tmp_path / "200_results.db", ks, {200: [3, 4, 5, 6, 7, 8]})
    result = trace_figures.figures([tmp_path])
    assert [(r["process"], r["kernels"]) for r in result["ranks"]] == [(200, 6), (1000, 3)]
    assert main(["trace", "figures", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"rank 0: process 200 of {tmp_path / '200_results.db'}" in out


# --------------------------------------------------------------------------- one timeline per GPU
def _span_ms(ks: list[dict]) -> float:
    return (max(int(k["End_Timestamp"]) for k in ks) - min(int(k["Start_Timestamp"]) for k in ks)) / 1e6


def test_a_csv_of_two_agents_gives_one_timeline_per_gpu_named_in_the_output(kernel_csv, tmp_path, capsys):
    ks = rows(kernel_csv)
    text = kernel_csv.decode().splitlines(keepends=True)
    moved = [line.replace('"Agent 4"', '"Agent 2"', 1) if i > 5 else line for i, line in enumerate(text)]
    path = write(tmp_path / "kernel_trace.csv", "".join(moved).encode())
    result = trace_figures.figures([path])
    assert [(r["device"], r["kernels"]) for r in result["ranks"]] == [(2, len(ks[5:])), (4, len(ks[:5]))]
    for rank, part in zip(result["ranks"], (ks[5:], ks[:5])):
        assert rank["steps"][0]["window_ms"] == pytest.approx(_span_ms(part), abs=1e-9)
    assert "one timeline per device" in result["ranks_from"]
    assert main(["trace", "figures", str(path)]) == 0
    out = capsys.readouterr().out
    assert "rank 0: device 2 (one timeline per GPU)" in out and "rank 1: device 4" in out


def test_a_rocpd_database_of_two_agents_gives_one_timeline_per_gpu(kernel_csv, tmp_path):
    ks = rows(kernel_csv)
    db = rocpd(tmp_path / "two.db", ks, {31: list(range(len(ks)))})
    con = sqlite3.connect(db)
    con.execute(
        f"UPDATE `rocpd_kernel_dispatch{UUID}` SET agent_id = 2 WHERE id <= {1000 - 2 * 5}"
    )  # kernels 5..
    con.commit()
    con.close()
    result = trace_figures.figures([db])
    assert [(r["device"], r["kernels"]) for r in result["ranks"]] == [(2, len(ks[5:])), (4, len(ks[:5]))]
    for rank, part in zip(result["ranks"], (ks[5:], ks[:5])):
        assert rank["steps"][0]["window_ms"] == pytest.approx(_span_ms(part), abs=1e-9)


# --------------------------------------------------------------------------- layouts as their tools write them
def test_a_complete_last_line_without_its_newline_is_read_not_cut_short(kernel_csv, tmp_path):
    ks = rows(kernel_csv)
    path = write(
        tmp_path / "kernel_trace.csv", kernel_csv.rstrip(b"\n")
    )  # as the documentation's samples end
    rank = trace_figures.figures([path])["ranks"][0]
    assert rank["kernels"] == len(ks)


def test_a_data_loader_workers_empty_csvs_in_a_host_folder_are_a_note_not_a_failure(
    kernel_csv, tmp_path, capsys
):
    write(tmp_path / "100_kernel_trace.csv", kernel_csv)
    write(tmp_path / "200_kernel_trace.csv", b"")
    write(
        tmp_path / "200_hip_api_trace.csv",
        (SAMPLES / "hip_runtime_trace.csv").read_bytes().split(b"\n")[0] + b"\n",
    )
    result = trace_figures.figures([tmp_path])
    assert [(r["process"], r["kernels"]) for r in result["ranks"]] == [(100, len(rows(kernel_csv)))]
    assert "process 200: 0 records, no device work" in result["ranks"][0]["note"]
    assert main(["trace", "figures", str(tmp_path)]) == 0


def test_dev_stdin_reads_as_the_file_it_carries():
    import subprocess
    import sys

    data = (SAMPLES / "kernel_trace.csv").read_bytes()
    run = subprocess.run(
        [sys.executable, "-m", "aorta", "trace", "figures", "/dev/stdin"], input=data, capture_output=True
    )
    assert run.returncode == 0, run.stderr.decode()
    assert "hardware queues used: 4" in run.stdout.decode()  # the sample's 9 kernels on its 4 queues


def test_a_kineto_trace_and_the_rocpd_database_of_the_same_process_are_not_two_ranks(
    kernel_csv, tmp_path, capsys
):
    import json

    ks = rows(kernel_csv)
    db = rocpd(tmp_path / "31_results.db", ks, {31: list(range(len(ks)))})
    launch = {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 31, "tid": 31, "ts": 1.0,
              "dur": 1.0, "args": {"correlation": 1}}  # fmt: skip
    kernel = {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 5.0, "dur": 1.0,
              "args": {"device": 0, "stream": 7, "correlation": 1}}  # fmt: skip
    kineto = tmp_path / "31.pt.trace.json"
    kineto.write_text(json.dumps({"traceEvents": [launch, kernel]}))
    assert refused([str(kineto), str(db)], capsys) == (
        f"{kineto} and {db} are the same process (pid 31) recorded by two profilers (Kineto and rocprofv3), not two "
        "ranks: give one of them"
    )
    assert len(trace_figures.figures([kineto, rocpd(tmp_path / "47.db", ks, {47: [0]})])["ranks"]) == 2


def test_a_copy_belongs_to_its_gpu_end(tmp_path):
    """rocprofv3's copies name both agents: to a GPU, the destination; to the host (agent 0), the source."""
    head = '"Kind","Direction","Stream_Id","Source_Agent_Id","Destination_Agent_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
    body = (
        '"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",1,"Agent 0","Agent 2",1,1000,2000\n'
        '"MEMORY_COPY","MEMORY_COPY_DEVICE_TO_HOST",1,"Agent 4","Agent 0",2,3000,4000\n'
    )
    path = write(tmp_path / "memory_copy_trace.csv", (head + body).encode())
    assert [(r["device"], r["ops"]) for r in trace_figures.figures([path])["ranks"]] == [(2, 1), (4, 1)]


def test_rocpd_dispatch_rows_written_twice_under_new_ids_are_counted_once(kernel_csv, tmp_path, capsys):
    """Issue 64: duplicates by identity in every format. Before: 2 x the kernels (602 for 301 on a real
    database), no note."""
    ks = rows(kernel_csv)
    db = rocpd(tmp_path / "twice.db", ks, {41: list(range(len(ks)))})
    con = sqlite3.connect(db)
    cols = 'guid, pid, agent_id, kernel_id, queue_id, stream_id, start, "end", event_id'
    con.execute(
        f"INSERT INTO `rocpd_kernel_dispatch{UUID}` (id, {cols}) "
        f"SELECT id + 100000, {cols} FROM `rocpd_kernel_dispatch{UUID}`"
    )
    con.commit()
    con.close()
    (entry,) = trace_figures.figures([db])["ranks"]
    assert entry["kernels"] == len(ks)
    assert entry["duplicates_dropped"] == {"device_ops": len(ks), "events": len(ks)}
    assert f"{len(ks)} duplicated rows dropped (each kept once)" in entry["note"]


def test_a_rocpd_database_with_a_hot_journal_is_refused_naming_it_and_left_unchanged(
    kernel_csv, tmp_path, capsys
):
    """Issue 64: SQLite rolls a hot journal back into the file on opening; a read-only trace gave "not a
    readable rocpd database (attempt to write a readonly database)"."""
    import shutil

    ks = rows(kernel_csv)
    work = rocpd(tmp_path / "work.db", ks, {5: list(range(len(ks)))})
    con = sqlite3.connect(work, isolation_level=None)
    con.execute("PRAGMA cache_size=1")  # spill the change into the file, so the journal is hot
    con.execute("BEGIN")
    con.execute(f"UPDATE `rocpd_kernel_dispatch{UUID}` SET start = start + 1")
    con.execute(f"CREATE TABLE filler AS SELECT * FROM `rocpd_kernel_dispatch{UUID}`")
    db = shutil.copy(work, tmp_path / "crashed.db")
    shutil.copy(f"{work}-journal", tmp_path / "crashed.db-journal")  # as a process killed mid-write left it
    con.execute("ROLLBACK")
    con.close()
    before = {p.name: p.read_bytes() for p in tmp_path.glob("crashed.db*")}
    assert main(["trace", "figures", str(db)]) == 2
    err = capsys.readouterr().err
    assert "a hot rollback journal beside it (crashed.db-journal)" in err and "Traceback" not in err
    assert {p.name: p.read_bytes() for p in tmp_path.glob("crashed.db*")} == before  # nothing written


def test_a_rocpd_database_named_with_a_question_mark_is_read(kernel_csv, tmp_path):
    ks = rows(kernel_csv)
    db = rocpd(tmp_path / "run?1#a.db", ks, {5: list(range(len(ks)))})
    (entry,) = trace_figures.figures([db])["ranks"]
    assert entry["kernels"] == len(ks)


@pytest.mark.parametrize(
    "spell",
    [
        str.lower,
        str.upper,
        lambda c: c.replace("_", " "),
        lambda c: c.replace("_Id", "_ID"),
        lambda c: f" {c} ",
    ],
    ids=["lower", "upper", "spaces", "ID", "padded"],
)
def test_a_csv_header_spelled_another_way_gives_the_same_figures(kernel_csv, tmp_path, spell):
    """Issue 64: before, a header in other case or spacing read no column (no kernel, or a KeyError)."""
    head, rest = kernel_csv.split(b"\n", 1)
    cells = next(csv.reader([head.decode()]))
    respelled = ",".join(f'"{spell(c)}"' for c in cells).encode() + b"\n" + rest
    (once,) = trace_figures.figures([write(tmp_path / "kernel_trace.csv", kernel_csv)])["ranks"]
    (tmp_path / "k").mkdir()
    (other,) = trace_figures.figures([write(tmp_path / "k" / "kernel_trace.csv", respelled)])["ranks"]
    for key in ("kernels", "steps", "hardware_queues", "duplicates_dropped"):
        assert other[key] == once[key], key


def test_queue_busy_is_the_union_of_the_profilers_own_ns_on_any_clock(tmp_path):
    """Issue 64: queue busy was rebuilt from float µs (round(start_us * 1e3)): on an epoch clock in ns
    (1.7e18, a float's step there is 256 ns) two overlapping kernels of 1000 ns, 500 ns apart, read 1536 ns."""
    t = 1_700_000_000_000_000_123
    head = '"Kind","Agent_Id","Queue_Id","Stream_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
    body = "".join(
        f'"KERNEL_DISPATCH","Agent 4",1,1,"k{i}",{i + 1},{t + 500 * i},{t + 500 * i + 1000}\n'
        for i in range(2)
    )
    (entry,) = trace_figures.figures([write(tmp_path / "kernel_trace.csv", (head + body).encode())])["ranks"]
    assert entry["hardware_queues"][0]["busy_ms"] == 1500 / 1e6


def test_a_rocprofv3_launch_that_no_kernel_answers_is_counted_as_in_a_kineto_trace(tmp_path):
    """Issue 64: rocprofv3's launches were linked but never checked: a hipLaunchKernel whose kernel the profiler
    lost read as 0 launches without kernel (a Kineto trace of the same run counts it). A call written twice is
    one call; a call that launches no one kernel (hipMemcpy) is none."""
    head = '"Kind","Agent_Id","Queue_Id","Stream_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
    (tmp_path / "7_kernel_trace.csv").write_text(
        head + '"KERNEL_DISPATCH","Agent 2",1,1,"gemm",1,5000,6000\n'
    )
    calls = (
        '"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
        + "".join(
            f'"HIP_RUNTIME_API","{f}",7,7,{c},{s},{s + 100}\n'
            for f, c, s in (
                ("hipLaunchKernel", 1, 4000),
                ("hipLaunchKernel", 2, 4200),
                ("hipMemcpy", 3, 4400),
            )
        )
    )
    (tmp_path / "7_hip_api_trace.csv").write_text(calls + calls.split("\n", 2)[2])  # the lost launch twice
    (entry,) = trace_figures.figures([tmp_path])["ranks"]
    assert entry["launches_without_kernel"] == 1 == entry["steps"][0]["launches_without_kernel"]
    assert "1 kernel launches with no kernel in the trace" in entry["note"]
