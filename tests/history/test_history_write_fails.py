"""A run the history could not keep is no success: ``--aorta-history`` on a store that breaks during the run (a
damaged file, a lost server) ends a pytest that passed with exit 3 and the line that says why; ``aorta history
add`` whose write fails exits 3 naming the run not kept."""

from __future__ import annotations

import json
import sqlite3

from history_docs import run_doc
from test_gate_plugin import run

from aorta.cli import main
from aorta.exit_codes import EXIT_WRITE_FAILED
from aorta.history.store import open_store

DAMAGE = """
from pathlib import Path


def test_the_store_is_damaged_while_the_benchmarks_run():
    db = Path({db!r})
    for leftover in (Path(str(db) + "-wal"), Path(str(db) + "-shm")):
        leftover.unlink(missing_ok=True)
    db.write_bytes(b"this is no database " * 256)
"""


def test_a_run_the_history_could_not_keep_exits_3_and_says_so(bench_dir):
    db = bench_dir.path / "history.db"
    bench_dir.makepyfile(test_damage=DAMAGE.format(db=str(db)))
    result = run(bench_dir, f"--aorta-history={db}")
    assert result.ret == EXIT_WRITE_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(["aorta history: this run was NOT kept: *"])


def test_history_add_whose_write_fails_exits_3_naming_the_run_not_kept(tmp_path, capsys):
    db = tmp_path / "h.db"
    open_store(str(db)).close()
    with sqlite3.connect(db) as con:  # every insert of a run fails, as on a disk gone read-only
        con.execute(
            "CREATE TRIGGER no_room BEFORE INSERT ON runs BEGIN SELECT RAISE(FAIL, 'disk I/O error'); END"
        )
    run_file = tmp_path / "run.json"
    run_file.write_text(json.dumps(run_doc("2026-11-25T08:00:00+00:00")))
    assert main(["history", "--history", str(db), "add", str(run_file)]) == EXIT_WRITE_FAILED
    assert capsys.readouterr().err == (
        f"aorta history add: error: {db}: the run of 2026-11-25T08:00:00+00:00 ({run_file}) could not be written: "
        "disk I/O error; nothing of it was kept, the runs before it are\n"
    )
