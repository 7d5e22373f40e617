"""The gate's fresh-run children die with the gate, and a child killed by a signal is named (issue 38, cases 6
and 9). The child here is a stand-in for ``python -m pytest`` (a shell script as ``sys.executable``): what is
tested is how ``run_children`` starts and reads it, in well under a second a case."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from signal_defaults import default_stop_signals

from aorta.gate.runs import fresh_runs
from aorta.processes.child_process import ended, exit_status

REPO = Path(__file__).resolve().parents[2]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")


def alive(pid: int) -> bool:
    """Running, not a zombie (an orphan's zombie may wait for a PID 1 that never reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def fake_python(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "fake-python"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return script


def test_a_child_killed_by_a_signal_gives_128_plus_n_and_says_which_signal(tmp_path):
    sys_executable = sys.executable
    try:
        sys.executable = str(fake_python(tmp_path, "kill -9 $$"))
        lines: list[str] = []
        (run,) = fresh_runs.run_children(["t.py"], cwd=tmp_path, out_dir=tmp_path, count=1, say=lines.append)
    finally:
        sys.executable = sys_executable
    assert run.exit_code == 137 and not run.ok
    assert "run 1/1: FAILED (killed by signal 9 (SIGKILL), exit 137, no JSON)" in lines[0]
    assert (exit_status(-15), ended(-15)) == (143, "killed by signal 15 (SIGTERM), exit 143")
    assert (exit_status(3), ended(3)) == (3, "exit 3")


PARENT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from aorta.gate.runs import fresh_runs
    sys.executable = sys.argv[1]
    out = Path(sys.argv[2])
    fresh_runs.run_children(["t.py"], cwd=out, out_dir=out, count=1)
    """
)


@linux_only
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_a_gate_killed_outright_takes_its_fresh_run_child_with_it(tmp_path, sig):
    pid_file = tmp_path / "child.pid"
    child_python = fake_python(
        tmp_path, f"echo $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}; exec sleep 60"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(child_python), str(tmp_path)],
        env=env,
        preexec_fn=default_stop_signals,
    )
    child = None
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(pid_file.read_text())
        assert alive(child)
        parent.send_signal(sig)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 5
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child), f"the fresh-run child {child} outlived the gate killed by {sig.name}"
    finally:
        parent.kill()
        parent.wait()
        if child is not None and alive(child):
            os.kill(child, signal.SIGKILL)


def test_gate_options_in_pytest_addopts_do_not_reach_the_children(tmp_path, monkeypatch):
    """Issue 38, case 11: each child would save (or compare) too and the baseline get each run twice."""
    seen = tmp_path / "addopts.txt"
    monkeypatch.setenv(
        "PYTEST_ADDOPTS",
        "--aorta-save-baseline base --aorta-runs=3 -x --benchmark-json 'out dir/all.json' "
        "--aorta-replace-baseline --aorta-streams=1",
    )
    sys_executable = sys.executable
    try:
        sys.executable = str(fake_python(tmp_path, f'printf "%s" "$PYTEST_ADDOPTS" > {seen}'))
        fresh_runs.run_children(["t.py"], cwd=tmp_path, out_dir=tmp_path, count=1, say=lambda line: None)
    finally:
        sys.executable = sys_executable
    assert seen.read_text() == "-x --aorta-streams=1"
