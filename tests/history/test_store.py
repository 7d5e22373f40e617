"""The history store, on SQLite and on a real PostgreSQL server: what goes in comes back, the schema is
versioned (an older history migrated, a newer one refused), and no run is ever half-written."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from history_docs import run_doc, with_stack

from aorta.history.run_rows import run_rows
from aorta.history.schema import SCHEMA_VERSION, statements
from aorta.history.store import HistoryError, HistoryWriteError, add_runs, open_store, parse_history_url

NOW = "2026-11-27T00:00:00+00:00"
REPO = Path(__file__).resolve().parents[2]


def rows(doc, source="run.json"):
    return run_rows(doc, source, NOW)


def test_a_run_comes_back_with_its_figures_machine_and_stack(history_url):
    with open_store(history_url) as store:
        (run_id,) = add_runs(store, rows(run_doc(device_ms=10.0)), NOW)
        (run,) = store.runs()
        figs = {(f.benchmark, f.figure): f for f in store.figures()}
    assert run.id == run_id
    assert run.recorded_at == "2026-11-26T08:00:00+00:00"
    assert run.machine_model == "nvidia-h100-80gb-hbm3-x1"
    assert run.stack_label == "nvidia-h100-80gb-hbm3-x1-cuda13.0-torch2.11.0"
    assert run.fingerprint["versions"]["torch"] == "2.11.0+cu130"
    assert run.fingerprint["settings"] == {"CUDA_DEVICE_MAX_CONNECTIONS": "8"}
    assert run.commit_id == "abc123"
    device = figs[("test_a.py::test_a[streams1]", "device_ms")]
    assert device.value == 10.0  # the median of 9.9, 10, 10, 10.1, 10
    assert device.samples == (9.9, 10.0, 10.0, 10.1, 10.0)
    assert (device.unit, device.higher_is_better) == ("ms", False)
    busbw = figs[("test_a.py::test_a[streams1]", "busbw_gbps")]
    assert (busbw.value, busbw.higher_is_better) == (300.0, True)


def test_the_same_run_added_twice_is_kept_once(history_url):
    with open_store(history_url) as store:
        first = add_runs(store, rows(run_doc()), NOW)
        again = add_runs(store, rows(run_doc(), "copy.json"), NOW)
        assert first[0] is not None and again == [None]
        assert store.count() == (1, 2)


def test_runs_come_back_in_the_order_they_ran_and_by_stack(history_url):
    new_torch = with_stack(torch="2.12.0+cu130")
    with open_store(history_url) as store:
        add_runs(store, rows(run_doc("2026-11-26T10:00:00+00:00", machine=new_torch)), NOW)
        add_runs(store, rows(run_doc("2026-11-26T09:00:00+00:00")), NOW)
        assert [r.recorded_at[11:13] for r in store.runs()] == ["09", "10"]
        (only,) = store.runs(stack_label="nvidia-h100-80gb-hbm3-x1-cuda13.0-torch2.12.0")
        assert only.recorded_at.startswith("2026-11-26T10")


def test_prune_deletes_old_runs_and_their_figures(history_url):
    with open_store(history_url) as store:
        add_runs(store, rows(run_doc("2026-01-01T00:00:00+00:00")), NOW)
        add_runs(store, rows(run_doc("2026-11-01T00:00:00+00:00")), NOW)
        assert store.prune("2026-06-01T00:00:00+00:00") == 1
        assert store.count() == (1, 2)


def test_an_older_schema_is_migrated_and_keeps_its_runs(history_url):
    with open_store(history_url) as store:  # build a version-1 history by hand
        with store.transaction():
            for table in ("verdicts", "figures", "runs", "aorta_schema"):
                store.execute(f"DROP TABLE {table}")
            for stmt in statements(store.dialect, 0, 1):
                store.execute(stmt)
            store.execute("INSERT INTO aorta_schema (version) VALUES (1)")
            store.execute(
                "INSERT INTO runs (run_key, recorded_at, added_at, machine_model, machine_id, host, stack_label, "
                "fingerprint, source) VALUES ('k1', '2026-01-01T00:00:00+00:00', '', 'cpu', 'h', 'h', 'cpu-torch2.11.0', "
                "'{}', 'old.json')"
            )
    with open_store(history_url) as store:
        assert store.version() == SCHEMA_VERSION
        (old,) = store.runs()
        assert (old.source, old.commit_id, old.settings) == ("old.json", "", {})
        add_runs(store, rows(run_doc()), NOW)
        assert store.count()[0] == 2


def test_a_newer_schema_is_refused_and_left_alone(history_url):
    with open_store(history_url) as store:
        with store.transaction():
            store.execute("UPDATE aorta_schema SET version = ?", (SCHEMA_VERSION + 1,))
    with pytest.raises(
        HistoryError, match=rf"schema version {SCHEMA_VERSION + 1} was written by a newer aorta"
    ):
        open_store(history_url)


def test_a_failure_inside_a_run_keeps_nothing_of_it(history_url):
    """The figures' insert fails after the run's row went in: the transaction takes the row back too."""
    doc = run_doc()
    bad = rows(doc)[0]
    bad = type(bad)(**{**bad.__dict__, "figures": bad.figures + bad.figures[:1]})  # a duplicate figure row
    with open_store(history_url) as store:
        add_runs(store, rows(run_doc("2026-11-25T00:00:00+00:00")), NOW)
        with pytest.raises(HistoryWriteError, match="nothing of it was kept, the runs before it are"):
            add_runs(store, [bad], NOW)
        assert store.count() == (1, 2)


def test_a_full_disk_keeps_nothing_of_the_run_and_says_so(tmp_path):
    """SQLite's page limit stands in for a full disk: the same SQLITE_FULL error."""
    path = str(tmp_path / "h.db")
    with open_store(path) as store:
        add_runs(store, rows(run_doc("2026-11-25T00:00:00+00:00")), NOW)
        pages = store.execute("PRAGMA page_count").fetchone()[0]
        store.execute(f"PRAGMA max_page_count = {pages + 1}")
        big = run_doc(benchmarks=tuple(f"test_b.py::test_b[{'x' * 200}{i}]" for i in range(300)))
        with pytest.raises(HistoryWriteError, match="full.*free disk space and add it again"):
            add_runs(store, rows(big), NOW)
        assert store.count() == (1, 2)


@pytest.mark.parametrize(
    "content", [b"this is not a database at all, just text" * 100, b"SQLite format 3\x00" + b"\xff" * 4000]
)
def test_a_damaged_file_is_refused_with_its_name(tmp_path, content):
    path = tmp_path / "history.db"
    path.write_bytes(content)
    with pytest.raises(HistoryError, match=rf"{path}: .*damaged file, or not a database"):
        open_store(str(path))
    assert path.read_bytes() == content


def test_a_database_of_another_program_is_refused(tmp_path):
    path = tmp_path / "other.db"
    sqlite3.connect(path).execute("CREATE TABLE customers (id INTEGER)").connection.commit()
    with pytest.raises(HistoryError, match="not an aorta history"):
        open_store(str(path))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ftp://host/x", "unknown scheme 'ftp'; allowed: a file path, sqlite:///PATH or postgresql://"),
        ("", "give a SQLite file"),
    ],
)
def test_a_bad_history_url_is_refused_with_what_is_allowed(text, message):
    with pytest.raises(ValueError, match=message):
        parse_history_url(text)


def test_history_urls_name_the_engine(tmp_path):
    assert parse_history_url("postgresql://u@h/db") == "postgresql://u@h/db"
    assert parse_history_url("sqlite:///rel/h.db") == "rel/h.db"
    assert parse_history_url("sqlite:////abs/h.db") == "/abs/h.db"
    with pytest.raises(ValueError, match="is a folder"):
        parse_history_url(str(tmp_path))


KILLED_WRITER = """
import os, signal, sys
sys.path[:0] = [{tests!r}]
from history_docs import run_doc
from aorta.history.run_rows import run_rows
from aorta.history.store import open_store, HistoryStore
store = open_store({url!r})
class Dying:  # the connection, but the process dies between the run's row and its figures
    def __init__(self, conn): self.conn = conn
    def __getattr__(self, name): return getattr(self.conn, name)
    def cursor(self): return Cursor(self.conn.cursor())
class Cursor:
    def __init__(self, cur): self.cur = cur
    def __getattr__(self, name): return getattr(self.cur, name)
    def executemany(self, *a): os.kill(os.getpid(), signal.SIGKILL)
store.conn = Dying(store.conn)
store.add_run(run_rows(run_doc("2026-11-26T12:00:00+00:00"), "dying", "now")[0], "now")
"""


@pytest.mark.slow  # a Python subprocess that imports aorta (about 2 s)
def test_a_writer_killed_mid_run_leaves_no_half_run(history_url):
    with open_store(history_url) as store:
        add_runs(store, rows(run_doc("2026-11-25T00:00:00+00:00")), NOW)
    code = KILLED_WRITER.format(tests=str(Path(__file__).parent), url=history_url)
    proc = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60
    )
    assert proc.returncode == -signal.SIGKILL
    with open_store(history_url) as store:
        assert store.count() == (1, 2)  # the killed run left nothing; the one before it is whole
        add_runs(store, rows(run_doc("2026-11-26T13:00:00+00:00")), NOW)  # and the history takes the next
        assert store.count() == (2, 4)


def _two_writers(url: str, tries: int) -> None:
    """Two writer processes, each with its own connection; ``tries`` times both add a run at the same moment
    (a barrier before each add); every run is kept."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(url, barrier, tries, w)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
    assert [p.exitcode for p in procs] == [0, 0], "a writer failed"
    with open_store(url) as store:
        assert store.count() == (2 * tries, 4 * tries)


def _writer(url: str, barrier, tries: int, w: int) -> None:
    store = open_store(url)
    for k in range(tries):
        barrier.wait(60)
        add_runs(store, rows(run_doc(f"2026-11-26T{k // 60:02d}:{k % 60:02d}:0{w}+00:00", host=f"h{w}")), NOW)
    store.close()


def test_two_concurrent_writers_lose_nothing(history_url):
    _two_writers(history_url, 5)


@pytest.mark.slow  # 100 tries
def test_two_concurrent_writers_lose_nothing_in_100_of_100_tries(history_url):
    _two_writers(history_url, 100)
