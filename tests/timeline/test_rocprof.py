"""rocprofv3's outputs: the CSV samples rocprofiler-sdk ships with its docs (../shared/amd_traces/rocprofv3, read in
place; skipped where absent) and rocpd SQLite databases built here from the documented schema.

No public ``.db`` recording exists, so the databases are written in the tests with the standard library's
sqlite3, table by table as rocprofiler-sdk's ``source/share/rocprofiler-sdk-rocpd/rocpd_tables.sql`` defines
them (per-session tables, suffixed by a uuid) and ``rocpd_views.sql`` (the unsuffixed views over them), with
the columns the reader uses; the rows are the CSV samples' own records, so both must give the same figures.
Expected values are counted here with the csv module, never with aorta's reader.
"""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

import amd_traces
import pytest

from aorta.cli import main
from aorta.report import trace_figures
from aorta.report.errors import ReportInputError

SAMPLES = amd_traces.folder() / "rocprofv3"
UUID = "_00000000_0000_4000_8000_000000000037"  # rocpd's {{uuid}} table suffix, one session


@pytest.fixture(scope="module")
def samples() -> Path:
    if not (SAMPLES / "kernel_trace.csv").is_file():
        pytest.skip(
            f"{SAMPLES} is absent: the rocprofv3 samples live beside the checkout (../shared/amd_traces)"
        )
    return SAMPLES


def rows(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def union_ms(intervals_ns) -> float:
    total, end = 0, None
    for s, e in sorted(intervals_ns):
        if end is None or s > end:
            total, end = total + (e - s), e
        elif e > end:
            total, end = total + (e - end), e
    return total / 1e6


def test_every_record_of_the_csv_samples_is_read_and_counted(samples, tmp_path):
    # the samples' folder holds their rocpd database too (a folder of two formats is refused, issue 64): the
    # kernel trace is named, and its siblings of the same prefix are read with it
    result = trace_figures.figures([samples / "kernel_trace.csv"])
    (rank,) = result["ranks"]
    expected = {"KERNEL_DISPATCH": len(rows(samples / "kernel_trace.csv"))}
    expected["MEMORY_COPY"] = len(rows(samples / "memory_copy_trace.csv"))
    for name in ("hip_runtime_trace.csv", "rccl_trace.csv"):
        for r in rows(samples / name):
            expected[r["Domain"]] = expected.get(r["Domain"], 0) + 1
    assert (
        rank["records"]
        == expected
        == {"KERNEL_DISPATCH": 9, "MEMORY_COPY": 4, "HIP_RUNTIME_API": 8, "RCCL_API": 21}
    )
    # the samples are from different runs: the copies' and calls' times are far from the kernels', so those
    # files are counted but left out of the figures and the links, and the note says so
    assert rank["kernels"] == 9 and rank["ops"] == 9 and rank["linked_by"] == {"none": 9}
    for name in ("memory_copy_trace.csv", "hip_runtime_trace.csv", "rccl_trace.csv"):
        assert name in rank["note"]
    assert rank["api_calls"]["RCCL_API ncclAllReduce"] == 5
    assert rank["reader"] == "rocprofv3-csv" and rank["note"].startswith("no ProfilerStep#N ranges")


def test_per_queue_figures_on_kernel_trace_csv_are_exact(samples):
    ks = rows(samples / "kernel_trace.csv")
    queues = sorted({int(r["Queue_Id"]) for r in ks})
    expected = [
        {
            "queue": q,
            "kernels": sum(int(r["Queue_Id"]) == q for r in ks),
            "busy_ms": union_ms(
                (int(r["Start_Timestamp"]), int(r["End_Timestamp"])) for r in ks if int(r["Queue_Id"]) == q
            ),
            "streams": sorted({int(r["Stream_Id"]) for r in ks if int(r["Queue_Id"]) == q}),
        }
        for q in queues
    ]
    (rank,) = trace_figures.figures([samples / "kernel_trace.csv"])["ranks"]
    assert len(queues) == 4
    # busy to 1e-9 ms: the ns timestamps' own resolution is 1e-6 ms
    assert rank["hardware_queues"] == [
        dict(q, busy_ms=pytest.approx(q["busy_ms"], abs=1e-9)) for q in expected
    ]
    (step,) = rank["steps"]
    every = [(int(r["Start_Timestamp"]), int(r["End_Timestamp"])) for r in ks]
    assert step["compute_busy_ms"] == pytest.approx(
        union_ms(every), abs=1e-6
    )  # absolute ms near 1.5e9: ulp 2e-7


def test_the_terminal_table_says_how_many_queues_the_streams_used(samples, capsys):
    assert main(["trace", "figures", str(samples / "kernel_trace.csv")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1].strip() == "hardware queues used: 4"
    assert [line.split(":")[0].strip() for line in out if line.strip().startswith("queue ")] == [
        "queue 1",
        "queue 2",
        "queue 3",
        "queue 4",
    ]


# --------------------------------------------------------------------------- rocpd databases
SCHEMA = f"""
CREATE TABLE `rocpd_string{UUID}` ("id" INTEGER PRIMARY KEY, "guid" TEXT, "string" TEXT NOT NULL UNIQUE);
CREATE TABLE `rocpd_info_kernel_symbol{UUID}` ("id" INTEGER PRIMARY KEY, "guid" TEXT, "nid" INTEGER,
    "pid" INTEGER, "code_object_id" INTEGER, "kernel_name" TEXT, "display_name" TEXT);
CREATE TABLE `rocpd_event{UUID}` ("id" INTEGER PRIMARY KEY, "guid" TEXT, "category_id" INTEGER,
    "stack_id" INTEGER, "parent_stack_id" INTEGER, "correlation_id" INTEGER);
CREATE TABLE `rocpd_region{UUID}` ("id" INTEGER PRIMARY KEY, "guid" TEXT, "nid" INTEGER, "pid" INTEGER,
    "tid" INTEGER, "start" BIGINT NOT NULL, "end" BIGINT NOT NULL, "name_id" INTEGER NOT NULL, "event_id" INTEGER);
CREATE TABLE `rocpd_kernel_dispatch{UUID}` ("id" INTEGER PRIMARY KEY, "guid" TEXT, "nid" INTEGER,
    "pid" INTEGER, "tid" INTEGER, "agent_id" INTEGER, "kernel_id" INTEGER NOT NULL, "dispatch_id" INTEGER,
    "queue_id" INTEGER NOT NULL, "stream_id" INTEGER NOT NULL, "start" BIGINT NOT NULL, "end" BIGINT NOT NULL,
    "workgroup_size_x" INTEGER, "workgroup_size_y" INTEGER, "workgroup_size_z" INTEGER, "grid_size_x" INTEGER,
    "grid_size_y" INTEGER, "grid_size_z" INTEGER, "event_id" INTEGER);
CREATE TABLE `rocpd_memory_copy{UUID}` ("id" INTEGER PRIMARY KEY, "guid" TEXT, "nid" INTEGER, "pid" INTEGER,
    "tid" INTEGER, "start" BIGINT NOT NULL, "end" BIGINT NOT NULL, "name_id" INTEGER NOT NULL,
    "dst_agent_id" INTEGER, "src_agent_id" INTEGER, "size" INTEGER, "queue_id" INTEGER, "stream_id" INTEGER,
    "event_id" INTEGER);
""" + "".join(
    f"CREATE VIEW `{t}` AS SELECT * FROM `{t}{UUID}`;\n"
    for t in (
        "rocpd_string",
        "rocpd_info_kernel_symbol",
        "rocpd_event",
        "rocpd_region",
        "rocpd_kernel_dispatch",
        "rocpd_memory_copy",
    )
)


def build_db(path: Path, samples: Path) -> Path:
    """The CSV samples' records written into a rocpd database of the documented schema."""
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    strings: dict[str, int] = {}

    def string(s: str) -> int:
        if s not in strings:
            strings[s] = len(strings) + 1
            con.execute(f"INSERT INTO `rocpd_string{UUID}` (id, string) VALUES (?, ?)", (strings[s], s))
        return strings[s]

    def event(category: str, corr: str) -> int:
        # as rocprofv3's writer fills it: the internal correlation id (the CSV's Correlation_Id) is stack_id and
        # parent_stack_id; correlation_id is the external id, 0 in a plain run
        cur = con.execute(
            f"INSERT INTO `rocpd_event{UUID}` (category_id, stack_id, parent_stack_id, correlation_id) "
            "VALUES (?, ?, ?, 0)",
            (string(category), int(corr), int(corr)),
        )
        return cur.lastrowid  # type: ignore[return-value]

    for name in ("hip_runtime_trace.csv", "rccl_trace.csv"):
        for r in rows(samples / name):
            con.execute(
                f"INSERT INTO `rocpd_region{UUID}` (pid, tid, start, end, name_id, event_id) VALUES (?,?,?,?,?,?)",
                (1, r["Thread_Id"], int(r["Start_Timestamp"]), int(r["End_Timestamp"]),
                 string(r["Function"]), event(r["Domain"], r["Correlation_Id"])),
            )  # fmt: skip
    symbols: dict[str, int] = {}
    for r in rows(samples / "kernel_trace.csv"):
        if r["Kernel_Name"] not in symbols:
            symbols[r["Kernel_Name"]] = len(symbols) + 1
            con.execute(
                f"INSERT INTO `rocpd_info_kernel_symbol{UUID}` (id, kernel_name) VALUES (?, ?)",
                (symbols[r["Kernel_Name"]], r["Kernel_Name"]),
            )
        con.execute(
            f"INSERT INTO `rocpd_kernel_dispatch{UUID}` (pid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, "
            "start, end, workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, "
            "grid_size_z, event_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (1, 4, symbols[r["Kernel_Name"]], int(r["Dispatch_Id"]), int(r["Queue_Id"]), int(r["Stream_Id"]),
             int(r["Start_Timestamp"]), int(r["End_Timestamp"]), *(int(r[f"Workgroup_Size_{a}"]) for a in "XYZ"),
             *(int(r[f"Grid_Size_{a}"]) for a in "XYZ"), event("KERNEL_DISPATCH", r["Correlation_Id"])),
        )  # fmt: skip
    for r in rows(samples / "memory_copy_trace.csv"):
        con.execute(
            f"INSERT INTO `rocpd_memory_copy{UUID}` (pid, start, end, name_id, dst_agent_id, src_agent_id, size, "
            "stream_id, event_id) VALUES (?,?,?,?,?,?,?,?,?)",
            (1, int(r["Start_Timestamp"]), int(r["End_Timestamp"]), string(r["Direction"]),
             int(r["Destination_Agent_Id"]), int(r["Source_Agent_Id"]), 0, int(r["Stream_Id"]),
             event("MEMORY_COPY", r["Correlation_Id"])),
        )  # fmt: skip
    con.commit()
    con.close()
    return path


def test_a_rocpd_database_gives_the_same_figures_as_the_same_records_written_as_csv(samples, tmp_path):
    db = build_db(tmp_path / "results.db", samples)
    (from_db,) = trace_figures.figures([db])["ranks"]
    (from_csv,) = trace_figures.figures([samples / "kernel_trace.csv"])["ranks"]
    assert from_db["reader"] == "rocpd"
    for key in ("ops", "kernels", "linked_by", "steps", "hardware_queues", "api_calls", "records"):
        assert from_db[key] == from_csv[key], key
    # (the samples come from different runs, so which correlation ids meet a HIP call is the samples' accident:
    # only the equality of both readers is asserted on it)


def test_a_rocpd_database_read_twice_through_the_cli_is_not_changed(samples, tmp_path, capsys):
    db = build_db(tmp_path / "results.db", samples)
    before = db.read_bytes()
    assert main(["trace", "figures", str(db), "--json", str(tmp_path / "f.json")]) == 0
    assert db.read_bytes() == before  # opened read-only
    assert "hardware queues used: 4" in capsys.readouterr().out


@pytest.mark.parametrize(
    "name, content, said",
    [
        ("run.pftrace", b"\x0a\x02\x08\x01", "a Perfetto protobuf trace (rocprofv3 --output-format pftrace) is not read"),
        ("run.otf2", b"OTF2", "an OTF2 archive (rocprofv3 --output-format otf2) is not read"),
        ("results.json", b'{"rocprofiler-sdk-tool": [{"metadata": {}}]}',
         "rocprofv3's JSON output (--output-format json) is not read"),
        ("other.db", None, "an SQLite database without rocprofv3's rocpd_kernel_dispatch view"),
        ("blob.bin", b"\x00\x01\x02binary", "not a trace aorta reads"),
    ],
)  # fmt: skip
def test_a_format_not_read_is_refused_in_one_sentence_naming_it_and_what_is_read(
    tmp_path, name, content, said
):
    p = tmp_path / name
    if content is None:
        sqlite3.connect(p).execute("CREATE TABLE t (x)").connection.commit()
    else:
        p.write_bytes(content)
    with pytest.raises(ReportInputError) as err:
        trace_figures.figures([p])
    assert str(err.value) == (
        f"{p}: {said}; read are Kineto Chrome traces (torch.profiler .json / .json.gz), rocprofv3 CSV (a .csv "
        "file or a folder of them) and the rocpd SQLite database (.db)"
    )
