"""A run the history could not keep is no passing run: ``--aorta-history`` on a store that breaks during the
run (a damaged file, a lost server) ends a pytest that passed with exit 3 and the line that says why."""

from __future__ import annotations

from test_gate_plugin import run

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
    assert result.ret == 3, result.stdout.str()
    result.stdout.fnmatch_lines(["aorta history: this run was NOT kept: *"])
