"""No child outlives a stopped command (issue 46, class 2): every command that starts children is signalled
while its child (and the child's own child) runs, and the processes left alive are listed. Every child starts
through one helper (aorta/processes/child_process.py, ``start_child``); a command stopped by SIGINT, SIGTERM or SIGHUP
ends its children's trees and exits 128 + N with one line (sweeps and aorta torchrun too: 128 + N, issue 65).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from signal_defaults import default_stop_signals

REPO = Path(__file__).resolve().parents[2]

# A stand-in for a child's work: records its pid and its own child's, then waits (as a benchmark or a rank).
SLEEPER = textwrap.dedent(
    """\
    #!/bin/sh
    if [ "$1" = "-c" ]; then exec PYTHON "$@"; fi      # aorta ab's launcher check: this Python answers it
    sleep 300 &
    echo $! >> "$AORTA_TEST_PIDS"
    (setsid sleep 300 & echo $! >> "$AORTA_TEST_PIDS")  # a grandchild in a session of its own, an orphan
    echo $$ >> "$AORTA_TEST_PIDS"
    exec sleep 300
    """
).replace("PYTHON", sys.executable)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


def _survivors(pids_file: Path) -> list[int]:
    pids = [int(p) for p in pids_file.read_text().split()] if pids_file.exists() else []
    return [p for p in pids if _alive(p)]


def _start_and_stop(cmd: list[str], tmp_path: Path, sig: int, children: int = 3, env: dict | None = None):
    pids = tmp_path / "pids"
    full_env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "AORTA_TEST_PIDS": str(pids),
        **(env or {}),
    }
    proc = subprocess.Popen(
        cmd,
        cwd=tmp_path,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_stop_signals,
    )
    try:
        deadline = time.monotonic() + 120
        while (
            time.monotonic() < deadline and len(pids.read_text().split() if pids.exists() else []) < children
        ):
            if proc.poll() is not None:
                raise AssertionError(f"ended before its children started: {proc.communicate()}")
            time.sleep(0.2)
        assert len(pids.read_text().split()) >= children, "the children never started"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(0.5)  # the kernel's death signals are delivered
    left = _survivors(pids)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return proc.returncode, out, err, left


@pytest.fixture
def sleeper(tmp_path) -> Path:
    path = tmp_path / "fake-python"
    path.write_text(SLEEPER)
    path.chmod(0o755)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_aorta_ab_stopped_ends_its_runs_and_exits_128_plus_n_in_one_line(tmp_path, sleeper, sig):
    code, out, err, left = _start_and_stop(
        [sys.executable, "-m", "aorta", "ab", "--a", str(sleeper), "--b", str(sleeper), "--", "benchmarks"],
        tmp_path,
        sig,
    )
    assert left == []
    assert code == 128 + sig
    assert err.strip().splitlines() == [
        f"aorta ab: stopped by {sig.name}; 1 child process tree(s) ended; exit {128 + sig}"
    ]


@pytest.mark.slow
def test_aorta_ab_killed_outright_leaves_nothing_running(tmp_path, sleeper):
    """SIGKILL: aorta ab runs no code of its own; the keeper above each run ends the run's whole tree, the
    grandchild that left the launcher's session included (issue 56, class 3)."""
    code, out, err, left = _start_and_stop(
        [sys.executable, "-m", "aorta", "ab", "--a", str(sleeper), "--b", str(sleeper), "--", "benchmarks"],
        tmp_path,
        signal.SIGKILL,
    )
    assert (code, left) == (-signal.SIGKILL, [])


@pytest.mark.slow
def test_the_proof_driver_stopped_ends_its_run(tmp_path, sleeper):
    """Ctrl-C left the driver's run going with parent 1 (its own session, never told)."""
    driver = textwrap.dedent(
        f"""\
        import sys
        from scripts.gpu import prove
        from scripts.gpu.proof import Proof, Run
        prove.PROOFS["sleep"] = Proof(
            name="sleep", what="-", gpus=0, fills="x",
            runs=lambda k, w: [Run("r", ({str(sleeper)!r}, "run"))], table=lambda w, k: [],
        )
        sys.exit(prove.main(["sleep", "--out", {str(tmp_path / "out")!r}, "--budget", "600"]))
        """
    )
    code, out, err, left = _start_and_stop([sys.executable, "-c", driver], tmp_path, signal.SIGINT)
    assert left == []
    assert code == 130
    assert (
        err.strip().splitlines()[-1]
        == "prove sleep: stopped by SIGINT; 1 child process tree(s) ended; exit 130"
    )


@pytest.mark.slow
def test_a_sweep_stopped_ends_its_cell(tmp_path, sleeper):
    (tmp_path / "test_x.py").write_text(SLEEPING_TEST)
    code, out, err, left = _start_and_stop(
        [sys.executable, "-m", "aorta", "sweep", "--grid", "A=1", "--output", "sw", "--"]
        + [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_x.py"],
        tmp_path,
        signal.SIGTERM,
        children=4,
        env={"AORTA_TEST_SLEEPER": str(sleeper)},
    )
    assert left == []
    assert code == 128 + signal.SIGTERM  # 143, as every command (issue 65)


# A pytest run whose test records its own pid, then runs the sleeper (in a gate: in the fresh runs only).
SLEEPING_TEST = textwrap.dedent(
    """\
    import os, subprocess

    def test_x(benchmark):
        benchmark.pedantic(lambda: None, rounds=1, iterations=1)  # a run that ends writes its JSON
        if os.environ.get("AORTA_FRESH_RUN") or not os.environ.get("AORTA_TEST_GATE"):
            runs = os.environ.get("AORTA_TEST_RUNS")  # where given: the first run ends at once
            if runs:
                with open(runs, "a") as fh:
                    fh.write("run\\n")
                if len(open(runs).read().split()) < 2:
                    return
            with open(os.environ["AORTA_TEST_PIDS"], "a") as fh:
                fh.write(f"{os.getpid()}\\n")
            subprocess.run([os.environ["AORTA_TEST_SLEEPER"], "run"])
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_gate_stopped_during_its_second_run_ends_it_in_one_line(tmp_path, sleeper, sig):
    """Ctrl-C of a gate during its second run once ended in pytest's KeyboardInterrupt banner and a verdict on what had
    run ("NOTHING COMPARED", exit 2); SIGTERM at a fork server's start in exit 143 and no line (issue 56)."""
    (tmp_path / "test_x.py").write_text(SLEEPING_TEST)
    code, out, err, left = _start_and_stop(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "test_x.py",
            "--aorta-runs=2",
            "--aorta-confirm=0",
        ],
        tmp_path,
        sig,
        children=4,
        env={
            "AORTA_TEST_SLEEPER": str(sleeper),
            "AORTA_TEST_GATE": "1",
            "AORTA_TEST_RUNS": str(tmp_path / "runs"),
        },
    )
    assert (tmp_path / "runs").read_text().split() == ["run", "run"]
    assert left == []
    assert code == 128 + sig
    assert err.strip().splitlines() == [
        f"aorta gate: stopped by {sig.name}; 1 child process tree(s) ended; exit {128 + sig}"
    ]
    assert "KeyboardInterrupt" not in out and "NOTHING COMPARED" not in out
