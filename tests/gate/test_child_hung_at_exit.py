"""A child that ended its session but hangs at exit (seen on an H100: 9 minutes after writing its results)
is killed after a grace period and its session's exit status kept; a child that exits is waited for."""

from __future__ import annotations

import sys

import pytest

from aorta.processes import child_process
from aorta.record import child_status

HANG_AFTER_DONE = (
    "import os, sys, time\n"
    "from aorta.record.child_status import write_done\n"
    "write_done(int(sys.argv[1]))\n"
    "time.sleep(60)\n"
)


def test_a_child_hung_after_its_session_is_killed_and_its_status_kept(tmp_path):
    for status in (0, 10):
        raw, note = child_process.call_to_end(
            [sys.executable, "-c", HANG_AFTER_DONE, str(status)],
            done_file=str(tmp_path / "x.done"),
            grace_s=0.5,
        )
        assert raw == status
        assert f"ended its session (exit {status})" in note and "hung at exit" in note


@pytest.mark.parametrize(
    ("code", "stale"),
    [(3, False), (0, True)],  # a stale status file from an earlier run is removed first, never taken
    ids=["its-own-code", "stale-status-file"],
)
def test_a_child_that_exits_is_waited_for_and_never_cut_short(tmp_path, code, stale):
    done = tmp_path / "c.done"
    if stale:
        done.write_text("0\n")
    raw, note = child_process.call_to_end(
        [sys.executable, "-c", f"import sys, time; time.sleep(0.5); sys.exit({code})"],  # 5 graces long
        done_file=str(done),
        grace_s=0.1,
    )
    assert (raw, note) == (code, "")


def test_only_rank_0_writes_the_status(tmp_path):
    path = tmp_path / "r.done"
    child_status.write_done(5, {child_status.DONE_ENV: str(path), "RANK": "1"})
    assert not path.exists()
    child_status.write_done(5, {child_status.DONE_ENV: str(path), "RANK": "0"})
    assert child_status.read_done(str(path)) == 5


def test_a_pytest_session_writes_its_final_exit_status(pytester, monkeypatch):
    """The plugin's part, in a pytest of this process: what a child's session writes as its last act."""
    pytester.makepyfile(test_one="def test_fails():\n    assert False\n")
    done = pytester.path / "p.done"
    monkeypatch.setenv(child_status.DONE_ENV, str(done))
    monkeypatch.delenv("RANK", raising=False)
    assert pytester.runpytest("-q", "-p", "no:cacheprovider").ret == 1
    assert child_status.read_done(str(done)) == 1


@pytest.mark.slow  # a real child process: its exit code; the status it writes: the test above, in process
def test_a_pytest_child_writes_its_final_exit_status(tmp_path):
    import os
    import subprocess

    (tmp_path / "test_one.py").write_text("def test_fails():\n    assert False\n")
    done = tmp_path / "p.done"
    env = {**os.environ, child_status.DONE_ENV: str(done)}
    env.pop("RANK", None)
    code = subprocess.call(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_one.py")],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
    )
    assert code == 1
    assert child_status.read_done(str(done)) == 1
