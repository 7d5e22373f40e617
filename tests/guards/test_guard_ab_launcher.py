"""``aorta ab``'s launcher check at unit level (aorta/gate/ab_cli.py ``check_launcher``, issue 58): the side's
Python is asked to import aorta under the side's own settings (a launcher whose settings break its Python must
not pass), a check that hangs is cut at its limit with its whole tree ended, and each refusal names the option
and says why. The side's "Python" here is a shell script standing in for it."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from aorta.gate import ab_cli
from aorta.gate.runs.ab import AbError, parse_launcher


def launcher(script: str, settings: str = ""):
    """A side whose Python is ``sh -c SCRIPT`` (the check appends ``-c 'import aorta'``, which sh ignores)."""
    return parse_launcher("--b", f"{settings} sh -c '{script}' sh".strip(), "B")


def test_the_check_runs_under_the_sides_settings():
    side = launcher('test "$AORTA_CHECK_ME" = yes || { echo "setting lost"; exit 1; }', "AORTA_CHECK_ME=yes")
    assert side.env == {"AORTA_CHECK_ME": "yes"}
    ab_cli.check_launcher("--b", "text", side)  # passes only where the setting reached the check
    broken = launcher('test "$AORTA_CHECK_ME" = yes || { echo "setting lost"; exit 1; }')
    with pytest.raises(AbError, match="setting lost"):
        ab_cli.check_launcher("--b", "text", broken)


def test_a_python_that_cannot_import_aorta_is_refused_naming_the_option_and_its_last_line():
    side = launcher('echo "Traceback"; echo "ModuleNotFoundError: No module named aorta"; exit 1')
    with pytest.raises(AbError) as exc:
        ab_cli.check_launcher("--b", "the text", side)
    assert str(exc.value).startswith("--b='the text': sh -c ")
    assert "cannot import aorta (ModuleNotFoundError: No module named aorta); install aorta" in str(exc.value)


def test_a_python_killed_during_the_check_is_refused_saying_how_it_ended():
    with pytest.raises(AbError, match=r"cannot import aorta \(killed by signal 9 \(SIGKILL\), exit 137\)"):
        ab_cli.check_launcher("--b", "t", launcher("kill -9 $$"))


def test_this_python_is_not_asked():
    ab_cli.check_launcher("--a", "", parse_launcher("--a", "", "A"))  # no command: nothing started


def test_a_check_that_hangs_is_cut_at_its_limit_and_its_tree_ended(tmp_path, monkeypatch):
    pid_file = tmp_path / "sleeper.pid"
    monkeypatch.setattr(ab_cli, "LAUNCHER_CHECK_S", 0.5)
    side = launcher(f"sleep 30 & echo $! > {pid_file}; wait")
    t0 = time.monotonic()
    with pytest.raises(AbError, match=r"'import aorta' did not finish in 0 s"):
        ab_cli.check_launcher("--b", "t", side)
    assert time.monotonic() - t0 < 15.0
    sleeper = int(Path(pid_file).read_text())
    deadline = time.monotonic() + 3
    while _alive(sleeper) and time.monotonic() < deadline:
        time.sleep(0.02)
    if _alive(sleeper):
        os.kill(sleeper, signal.SIGKILL)
        pytest.fail("the hung check's child outlived the refusal")


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, IndexError):
        return False
