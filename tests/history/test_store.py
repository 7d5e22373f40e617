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


# -- what each reading and writing call gives back, worked out by hand (issue 58) ----------------------------------


def _with(run, **changes):
    return type(run)(**{**run.__dict__, **changes})


def test_verdicts_go_in_with_their_run_and_come_back_by_run_benchmark_and_figure(history_url):
    from aorta.history.run_rows import VerdictRow

    run = _with(
        rows(run_doc())[0],
        verdicts=(
            VerdictRow("test_a.py::test_a[streams1]", "device_ms", "SLOWER", 0.25),
            VerdictRow("test_a.py::test_a[streams1]", "busbw_gbps", "UNSURE", None),
        ),
    )
    with open_store(history_url) as store:
        (run_id,) = add_runs(store, [run], NOW)
        assert store.verdicts() == {
            (run_id, "test_a.py::test_a[streams1]", "device_ms"): ("SLOWER", 0.25),
            (run_id, "test_a.py::test_a[streams1]", "busbw_gbps"): ("UNSURE", None),
        }


def test_a_gate_s_verdicts_are_attached_to_every_run_of_its_source_and_never_replace_one(history_url):
    from aorta.history.run_rows import VerdictRow

    bench = "test_a.py::test_a[streams1]"
    with open_store(history_url) as store:
        first = add_runs(store, rows(run_doc("2026-11-26T08:00:00+00:00"), "pytest"), NOW)[0]
        second = add_runs(store, rows(run_doc("2026-11-26T09:00:00+00:00"), "pytest"), NOW)[0]
        other = add_runs(store, rows(run_doc("2026-11-26T10:00:00+00:00"), "other.json"), NOW)[0]
        assert store.add_verdicts("pytest", [VerdictRow(bench, "device_ms", "SLOWER", 0.3)]) == 2
        again = [VerdictRow(bench, "device_ms", "FASTER", -0.1), VerdictRow(bench, "busbw_gbps", "SAME", 0.0)]
        assert store.add_verdicts("pytest", again) == 2
        assert store.add_verdicts("nobody.json", again) == 0
        assert store.verdicts() == {
            (first, bench, "device_ms"): ("SLOWER", 0.3),
            (first, bench, "busbw_gbps"): ("SAME", 0.0),
            (second, bench, "device_ms"): ("SLOWER", 0.3),
            (second, bench, "busbw_gbps"): ("SAME", 0.0),
        }
        assert other not in {k[0] for k in store.verdicts()}


def test_prune_deletes_each_old_run_with_its_figures_and_verdicts_and_keeps_the_rest(history_url):
    from aorta.history.run_rows import VerdictRow

    verdict = (VerdictRow("test_a.py::test_a[streams1]", "device_ms", "SAME", 0.0),)
    with open_store(history_url) as store:
        for when in ("2026-01-01T00:00:00+00:00", "2026-02-01T00:00:00+00:00", "2026-06-01T00:00:00+00:00"):
            add_runs(store, [_with(rows(run_doc(when))[0], verdicts=verdict)], NOW)
        kept = store.runs()[-1].id
        assert store.prune("2026-06-01T00:00:00+00:00") == 2  # the run at the bound itself is kept
        assert [r.id for r in store.runs()] == [kept]
        assert store.count() == (1, 2)
        assert {f.run_id for f in store.figures()} == {kept}
        assert {k[0] for k in store.verdicts()} == {kept}
        assert store.prune("2026-01-01T00:00:00+00:00") == 0


def test_runs_are_chosen_by_machine_model_and_stack_together(history_url):
    other_gpu = with_stack(gpu_name="NVIDIA H200")
    new_torch = with_stack(torch="2.12.0+cu130")
    with open_store(history_url) as store:
        add_runs(store, rows(run_doc("2026-11-26T08:00:00+00:00", host="host-8")), NOW)
        add_runs(store, rows(run_doc("2026-11-26T09:00:00+00:00", machine=other_gpu)), NOW)
        add_runs(store, rows(run_doc("2026-11-26T10:00:00+00:00", machine=new_torch)), NOW)
        h100 = "nvidia-h100-80gb-hbm3-x1"
        by_model = store.runs(machine_model=h100)
        assert [r.recorded_at[11:13] for r in by_model] == ["08", "10"]
        both = store.runs(machine_model=h100, stack_label=f"{h100}-cuda13.0-torch2.11.0")
        assert [(r.recorded_at[11:13], r.machine_id, r.source) for r in both] == [
            ("08", "host-8", "run.json")
        ]
        assert store.runs(machine_model="cpu", stack_label=f"{h100}-cuda13.0-torch2.11.0") == []
        assert len(store.runs()) == 3


def test_runs_that_ran_at_the_same_time_come_back_in_the_order_they_were_added(history_url):
    with open_store(history_url) as store:
        a = add_runs(store, rows(run_doc(device_ms=20.0)), NOW)[0]
        b = add_runs(store, rows(run_doc(device_ms=10.0)), NOW)[0]
        assert [r.id for r in store.runs()] == [a, b]


def test_figures_come_back_for_the_runs_asked_in_run_benchmark_figure_order(history_url):
    benches = ("test_b.py::test_b[2]", "test_a.py::test_a[1]")
    with open_store(history_url) as store:
        a = add_runs(store, rows(run_doc("2026-11-26T08:00:00+00:00", benchmarks=benches)), NOW)[0]
        b = add_runs(store, rows(run_doc("2026-11-26T09:00:00+00:00", 20.0)), NOW)[0]
        assert [(f.run_id, f.benchmark, f.figure) for f in store.figures()] == [
            (a, "test_a.py::test_a[1]", "busbw_gbps"),
            (a, "test_a.py::test_a[1]", "device_ms"),
            (a, "test_b.py::test_b[2]", "busbw_gbps"),
            (a, "test_b.py::test_b[2]", "device_ms"),
            (b, "test_a.py::test_a[streams1]", "busbw_gbps"),
            (b, "test_a.py::test_a[streams1]", "device_ms"),
        ]
        assert {f.run_id for f in store.figures([b])} == {b}
        assert store.figures([]) == []
        (device,) = [f for f in store.figures([b]) if f.figure == "device_ms"]
        assert (device.value, device.samples) == (20.0, (19.8, 20.0, 20.0, 20.2, 20.0))


# -- a PostgreSQL history that cannot be used: said with the server's words, its password never -------------------


def test_a_server_that_cannot_be_reached_is_refused_naming_it_without_its_password():
    url = "postgresql://u:hunter2@127.0.0.1:1/db"
    with pytest.raises(HistoryError) as exc:
        open_store(url)
    said = str(exc.value)
    assert said.startswith("postgresql://u:***@127.0.0.1:1/db: cannot connect: connection failed: ")
    assert "hunter2" not in said and not said.endswith("%40 in a URL")


def test_a_password_holding_an_at_sign_gets_the_hint_to_write_it_as_percent_40():
    with pytest.raises(HistoryError) as exc:
        open_store("postgresql://u:p@ss@127.0.0.1:1/db")  # libpq reads the host as ss@127.0.0.1
    said = str(exc.value)
    assert said.startswith("postgresql://u:***@127.0.0.1:1/db: cannot connect: ")
    assert said.endswith("; a password that holds @ is written %40 in a URL")
    assert "p@ss" not in said
    with pytest.raises(HistoryError) as exc:
        open_store("host=127.0.0.1 port=1 dbname=db user=u password=hunter2")
    assert str(exc.value).startswith("host=127.0.0.1 port=1 dbname=db user=u password=***: cannot connect: ")


def test_without_psycopg_a_postgresql_history_is_refused_saying_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(HistoryError) as exc:
        open_store("postgresql://u:hunter2@h/db")
    assert str(exc.value) == (
        "postgresql://u:***@h/db: a PostgreSQL history needs psycopg 3: pip install 'aorta[postgresql]'"
    )


def test_a_server_that_refuses_the_schema_is_refused_with_its_words(postgres_url):
    url = f"{postgres_url}?options=-csearch_path%3Dno_such_schema"
    with pytest.raises(HistoryError) as exc:
        open_store(url)
    assert str(exc.value).startswith(f"{url}: the schema could not be read or created: ")
    assert "no schema has been selected to create in" in str(exc.value)


def test_a_postgresql_store_is_named_by_its_url_and_hides_its_password_in_what_the_server_says(postgres_url):
    url = postgres_url.replace("postgres@", "postgres:hunter2@")  # trust auth: any password is taken
    with open_store(url) as store:
        assert (store.dialect, store.where) == ("postgresql", url.replace("hunter2", "***"))
        assert store.said(RuntimeError(" the server quoted hunter2 back ")) == "the server quoted *** back"


def test_a_run_added_after_a_read_is_kept_each_write_commits_on_its_own(history_url):
    with open_store(history_url) as store:
        assert store.runs() == [] and store.count() == (0, 0)  # a read first: no transaction left open by it
        add_runs(store, rows(run_doc()), NOW)
    with open_store(history_url) as store:
        assert store.count() == (1, 2)


def test_what_a_driver_quotes_back_of_the_url_is_hidden(monkeypatch):
    import psycopg

    def quoting(url, **kw):
        raise psycopg.OperationalError(f'invalid connection string "{url}"')

    monkeypatch.setattr(psycopg, "connect", quoting)
    with pytest.raises(HistoryError) as exc:
        open_store("postgresql://u:hunter2@h/db")
    assert str(exc.value) == (
        'postgresql://u:***@h/db: cannot connect: invalid connection string "postgresql://u:***@h/db"'
    )


def test_a_password_a_driver_quotes_back_alone_is_hidden_too(monkeypatch):
    import psycopg

    def quoting(url, **kw):
        raise psycopg.OperationalError('password "hunter2" was refused')

    monkeypatch.setattr(psycopg, "connect", quoting)
    with pytest.raises(HistoryError) as exc:
        open_store("host=h dbname=db user=u password=hunter2")
    assert str(exc.value) == (
        'host=h dbname=db user=u password=***: cannot connect: password "***" was refused'
    )
