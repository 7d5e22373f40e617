"""The history tells the truth about its state (issue 46, class 5): locked, read-only, missing and damaged are
four different messages, a read command creates nothing, and a run is one row however it reaches the history."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest
from history_docs import run_doc

from aorta.cli import main
from aorta.exit_codes import EXIT_USAGE, EXIT_WRITE_FAILED
from aorta.gate.baselines.baseline import combine_runs, save_baseline
from aorta.history import store as store_module
from aorta.history.store import open_store


@pytest.fixture
def history(tmp_path):
    path = tmp_path / "history.db"
    open_store(str(path)).close()
    return path


def _said(capsys) -> str:
    return capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- missing
@pytest.mark.parametrize(
    "action", [["show"], ["page", "out.html"], ["baseline", "S", "out.json"], ["prune", "--keep", "1d"]]
)
def test_a_read_command_on_a_mistyped_history_creates_nothing_and_says_so(
    tmp_path, monkeypatch, capsys, action
):
    monkeypatch.chdir(tmp_path)
    code = main(["history", "--history", "typo/histroy.db", *action])
    err = _said(capsys)
    assert code == EXIT_USAGE
    assert "typo/histroy.db: no history here (no such file): nothing created" in err
    assert "-k" not in err
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------- locked
def _hold(path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('BEGIN IMMEDIATE')\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n",
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_locked_history_says_who_holds_it_waits_then_exits_3_never_damaged(
    history, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 600)
    run = tmp_path / "run.json"
    run.write_text(json.dumps(run_doc()))
    holder = _hold(history)
    try:
        assert main(["history", "--history", str(history), "show"]) == 0  # a reader is not held up
        _said(capsys)
        code = main(["history", "--history", str(history), "add", str(run)])
        err = _said(capsys)
    finally:
        holder.kill()
        holder.wait()
    assert code == EXIT_WRITE_FAILED
    assert f"is held by another writer (pid {holder.pid} (" in err and "waiting up to 1 s" in err
    assert "held by another writer" in err.splitlines()[-1] and "not damaged" in err
    assert "damaged file" not in err and "move it aside" not in err


# ---------------------------------------------------------------------------------------------- read-only
def test_a_read_only_history_is_read_only_not_damaged_and_can_still_be_read(
    history, tmp_path, monkeypatch, capsys
):
    """What SQLite says on a read-only mount ("attempt to write a readonly database"), made here by opening the
    file read-only (root writes anywhere else)."""
    real = sqlite3.connect

    def read_only(path, *a, **kw):
        kw.pop("uri", None)
        return real(
            f"file:{path}?mode=ro" if not str(path).startswith("file:") else str(path), *a, uri=True, **kw
        )

    monkeypatch.setattr(store_module.sqlite3, "connect", read_only)
    run = tmp_path / "run.json"
    run.write_text(json.dumps(run_doc()))
    code = main(["history", "--history", str(history), "add", str(run)])
    err = _said(capsys)
    assert code == EXIT_USAGE
    assert f"{history}: is read-only here" in err and "not damaged" in err
    assert "damaged file" not in err and "move it aside" not in err


def test_a_history_on_a_read_only_place_is_read_as_it_is(history, monkeypatch, capsys):
    monkeypatch.setattr(store_module.os, "access", lambda path, mode: False)
    assert main(["history", "--history", str(history), "show"]) == 0


# ---------------------------------------------------------------------------------------------- damaged
def test_four_states_four_messages(tmp_path, history, monkeypatch, capsys):
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"not a database at all, just bytes" * 100)
    assert main(["history", "--history", str(damaged), "show"]) == EXIT_USAGE
    assert "a damaged file, or not a database" in _said(capsys)
    main(["history", "--history", str(tmp_path / "missing.db"), "show"])
    assert "no history here" in _said(capsys)


# ---------------------------------------------------------------------------------------------- labels, --keep
def test_an_error_of_history_baseline_is_labelled_history_baseline(history, tmp_path, capsys):
    (tmp_path / "a_file").write_text("")
    assert (
        main(["history", "--history", str(history), "baseline", "S", str(tmp_path / "a_file" / "b.json")])
        == 2
    )
    assert _said(capsys).startswith("aorta history baseline: error: OUT.json ")


@pytest.mark.parametrize("keep", ["99999999d", "1000000000d", "99999999999h"])
def test_a_keep_past_any_date_is_refused_naming_the_largest(history, capsys, keep):
    with pytest.raises(SystemExit) as stop:
        main(["history", "--history", str(history), "prune", "--keep", keep])
    assert stop.value.code == 2
    assert ("at most 36500d (100 years)" if keep.endswith("d") else "at most 876000h (100 years)") in _said(
        capsys
    )


# ---------------------------------------------------------------------------------------------- one row
def test_a_run_is_one_row_however_it_reaches_the_history(history, tmp_path, capsys):
    """Kept from its own JSON, then from the gate's combined document (which adds ``saved_at``), then from a
    baseline made of the same runs: two runs, two rows."""
    docs = [run_doc(f"2026-11-2{i}T08:00:00+00:00", 10.0 + i) for i in (1, 2)]
    paths = []
    for i, doc in enumerate(docs):
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(doc))
    combined = tmp_path / "all.json"
    combined.write_text(json.dumps(combine_runs(docs, ["run1", "run2"])))
    base, _ = save_baseline(combine_runs(docs, ["run1", "run2"]), tmp_path / "baselines", "b", {})
    for p in [*paths, combined, base]:
        assert main(["history", "--history", str(history), "add", str(p)]) == 0
    with open_store(str(history)) as store:
        assert store.count()[0] == 2
    assert "2 already kept" in capsys.readouterr().out
