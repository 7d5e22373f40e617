"""rocprofv3's shared pieces (aorta/timeline/rocprof.py, issue 58): the format told from the first bytes (each
refusal word for word), a folder's format, when two files' spans are one run (gaps just under, at and over the
bound), the rank's note, the launch link, and the figures per hardware queue on ops of two queues and two
streams whose spans overlap, touch and nest, with copies and queue-less ops beside them."""

from __future__ import annotations

import gzip
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from aorta.timeline import rocprof
from aorta.timeline.device_op import DeviceOp
from aorta.timeline.op_table import OpTable
from aorta.timeline.rocprof import CSV, KINETO, ROCPD, RocprofFileError, RocprofTrace
from aorta.timeline.trace_source import open_source

READ = (
    "Kineto Chrome traces (torch.profiler .json / .json.gz), rocprofv3 CSV (a .csv file or a folder of them) "
    "and the rocpd SQLite database (.db)"
)


def sniffed(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    with open_source(path) as source:
        return rocprof.sniff(source)


def refused(path: Path, data: bytes) -> str:
    with pytest.raises(RocprofFileError) as exc:
        sniffed(path, data)
    return str(exc.value)


# --------------------------------------------------------------------------- formats
@pytest.mark.parametrize(
    "name, data, kind",
    [
        ("t.json", b'  \n{"traceEvents": []}', KINETO),
        ("t.json", b"[]", KINETO),
        ("t.txt", b'"Kind","Agent_Id"\n', CSV),
        ("t.txt", b'"Domain","Function"\n', CSV),
        ("t.txt", b"Kind,Agent_Id\n", CSV),
        ("t.txt", b"Domain,Function\n", CSV),
        ("t.csv", b"anything,at,all\n", CSV),
        ("t.CSV.GZ", gzip.compress(b"x,y\n", mtime=0), CSV),
        ("t.bin", b"SQLite format 3\x00rest", ROCPD),
    ],
)
def test_a_format_is_told_from_the_first_bytes_and_the_name(tmp_path, name, data, kind):
    assert sniffed(tmp_path / name, data) == kind


@pytest.mark.parametrize(
    "name, what",
    [
        ("t.pftrace", "a Perfetto protobuf trace (rocprofv3 --output-format pftrace)"),
        ("t.PERFETTO-TRACE", "a Perfetto protobuf trace"),
        ("t.otf2", "an OTF2 archive (rocprofv3 --output-format otf2)"),
        ("t.nsys-rep", "an Nsight Systems report"),
        ("t.qdrep", "an Nsight Systems report"),
    ],
)
def test_a_format_not_read_is_named_by_its_suffix_whatever_it_holds(tmp_path, name, what):
    path = tmp_path / name
    assert refused(path, b'{"traceEvents": []}') == f"{path}: {what} is not read; read are {READ}"


def test_each_other_refusal_word_for_word(tmp_path):
    db = tmp_path / "t.db.gz"
    assert refused(db, gzip.compress(b"SQLite format 3\x00" + b"\x00" * 100)) == (
        f"{db}: a gzipped SQLite database: decompress it first (gunzip)"
    )
    j = tmp_path / "results.json"
    assert refused(j, b'{"rocprofiler-sdk-tool": []}') == (
        f"{j}: rocprofv3's JSON output (--output-format json) is not read; read are {READ}"
    )
    empty = tmp_path / "empty.json"
    assert refused(empty, b" \n\t") == f"{empty}: an empty file; read are {READ}"
    other = tmp_path / "x.bin"
    assert refused(other, b"PK\x03\x04") == f"{other}: not a trace aorta reads; read are {READ}"
    kind = tmp_path / "k.txt"
    assert refused(kind, b"Kinds,x\n") == f"{kind}: not a trace aorta reads; read are {READ}"


def test_a_sqlite_file_in_a_gzip_is_told_from_its_decompressed_bytes_not_its_name(tmp_path):
    assert sniffed(tmp_path / "t.db", b"SQLite format 3\x00") == ROCPD
    assert "gzipped SQLite" in refused(tmp_path / "t.csv", gzip.compress(b"SQLite format 3\x00"))


@pytest.mark.parametrize(
    "files, kind",
    [
        (["a.csv", "agent_info.csv"], CSV),
        (["a.csv.gz"], CSV),
        (["b.db", "notes.txt"], ROCPD),
        (["rank0.json", "rank1.json.gz"], rocprof.KINETO),
    ],
)
def test_a_folder_is_read_in_the_one_format_it_holds(tmp_path, files, kind):
    for f in files:
        (tmp_path / f).write_bytes(b"")
    assert rocprof.folder_format(tmp_path) == kind == rocprof.format_of(tmp_path)


@pytest.mark.parametrize("files", [["1_kernel_trace.csv", "1_results.db"], ["rank0.json", "1_results.db"]])
def test_a_folder_of_two_formats_is_refused_naming_what_it_cannot_combine(tmp_path, files):
    """Issue 64: before, the CSVs were read and the database dropped without a word (or the Kineto trace)."""
    for f in files:
        (tmp_path / f).write_bytes(b"")
    message = str(pytest.raises(RocprofFileError, rocprof.folder_format, tmp_path).value)
    assert message.startswith(f"{tmp_path}: a folder of traces in 2 formats (")
    assert all(f in message for f in files) and "cannot be combined" in message


def test_a_folder_of_neither_is_refused_and_a_file_is_sniffed(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    assert str(pytest.raises(RocprofFileError, rocprof.format_of, tmp_path).value) == (
        f"{tmp_path}: a folder with no .csv, .db or .json trace; read are {READ}"
    )
    db = tmp_path / "a.db"
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.commit()
    assert rocprof.format_of(db) == ROCPD
    with pytest.raises(RocprofFileError, match="notes.txt: not a trace aorta reads"):
        rocprof.format_of(tmp_path / "notes.txt")
    (tmp_path / "k.csv").write_text("Kind\n")
    assert rocprof.format_of(tmp_path / "k.csv") == CSV


# --------------------------------------------------------------------------- one run or two
S = 10**9  # ns


@pytest.mark.parametrize(
    "a, b, one",
    [
        ((0, 10), (5, 20), True),  # overlapping
        ((0, 10), (10 + S, 11 + S), True),  # a gap of exactly 1 s
        ((0, 10), (11 + S, 12 + S), False),  # 1 ns more
        ((11 + S, 12 + S), (0, 10), False),  # either order
        ((0, 3 * S), (5 * S, 5 * S + 2 * S), True),  # a gap of 2 s under the spans' 5 s together
        ((0, 2 * S), (5 * S + 1, 6 * S), False),  # a gap of 3 s + 1 ns, the spans' 3 s - 1 ns together
        ((0, 3 * S), (6 * S, 6 * S + 0), True),  # a gap of 3 s, the spans' 3 s together: at the bound
        ((0, 3 * S), (6 * S + 1, 6 * S + 1), False),
        ((0, 1), (3 * S, 6 * S), True),  # the second's length counts: a 3 s gap, spans of 1 ns and 3 s
        ((9 * S // 10 + 1, 14 * S // 10 + 1), (0, 1), True),  # the first starts 0.9 s after the second ends
    ],
)
def test_two_spans_are_one_run_within_1_s_or_within_their_lengths_together(a, b, one):
    assert rocprof.same_run(a, b) is one
    assert rocprof.ONE_RUN_GAP_NS == S


# --------------------------------------------------------------------------- the rank's note and the link
def trace(**fields) -> RocprofTrace:
    return RocprofTrace(Path("t"), CSV, [], **fields)


def test_the_note_names_the_files_left_out_then_the_records_in_no_figure_then_the_idle_processes():
    t = trace(
        apart=["a.csv (1 to 2 ms)", "b.csv (3 to 4 ms)"],
        not_in_figures={"SCRATCH_MEMORY": 2, "MEMORY_ALLOCATION": 1},
        without_work=["process 5: 1 records, no device work"],
    )
    assert rocprof.apart_note(t) == (
        "left out of the figures and the launch links, their times apart from the kernels' (another run's "
        "records?): a.csv (1 to 2 ms); b.csv (3 to 4 ms); records read but in no figure: MEMORY_ALLOCATION 1, "
        "SCRATCH_MEMORY 2; process 5: 1 records, no device work"
    )
    assert rocprof.apart_note(trace(not_in_figures={"X": 1})) == "records read but in no figure: X 1"
    assert rocprof.apart_note(trace()) is None


def test_a_launch_is_linked_by_its_correlation_id_and_id_0_is_an_id():
    ops = OpTable.of([DeviceOp("k", 0, 1.0, 1.0, correlation=c) for c in (7, 0, 8, None)])
    ids, starts_ns = np.array([0, 7, 7]), np.array([5_000, 9_600, 9_500])  # id 7 called twice: the earliest
    linked = rocprof.with_launches(ops, ids, starts_ns)
    assert [(op.launch_us, op.link) for op in linked] == [
        (9.5, "correlation"),
        (5.0, "correlation"),
        (None, None),
        (None, None),  # no correlation id: never linked, not even to a call of id 0
    ]


# --------------------------------------------------------------------------- per hardware queue
def op(queue, stream, start_ns, end_ns, category="kernel") -> DeviceOp:
    return DeviceOp("k", stream, start_ns / 1e3, (end_ns - start_ns) / 1e3, category, queue=queue)


def test_queue_figures_count_each_queues_kernels_and_the_union_of_their_spans():
    """Queue 2: [0, 10) and [5, 20) overlap (20 ns), [20, 30) touches (10 more), [40, 41) alone (1): 31 ns.
    Queue 1 (listed first), on streams 7 and "s": [100, 1100) nesting [200, 300): 1000 ns. A copy on queue 1
    and a kernel of no queue are in no figure. Times near 1.5e12 µs: each span still a whole number of ns."""
    base = 1_500_000_000_000_000  # ns
    ops = [
        op(2, 3, base, base + 10),
        op(2, 3, base + 5, base + 20),
        op(2, 4, base + 20, base + 30),
        op(2, 3, base + 40, base + 41),
        op(1, "s", base + 200, base + 300),
        op(1, 7, base + 100, base + 1100),
        op(1, 9, base, base + 5000, category="gpu_memcpy"),
        op(None, 3, base, base + 5000),
    ]
    assert rocprof.queue_figures(ops) == [
        {"queue": 1, "kernels": 2, "busy_ms": 1000 / 1e6, "streams": [7, "s"]},
        {"queue": 2, "kernels": 4, "busy_ms": 31 / 1e6, "streams": [3, 4]},
    ]
    assert rocprof.queue_figures([op(None, 1, 0, 5)]) == []
