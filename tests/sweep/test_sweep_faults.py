"""A sweep under faults (issue 24: cases 1, 4, 5, 18): cells die with a sweep killed outright or hung up on,
a result written by another attempt is not accepted, a command that cannot start is a failed cell and the
sweep goes on, a full disk stops the sweep with a sentence and exit 3, and a --force run whose re-runs
failed says why it exits 1."""

import errno
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from pathlib import Path

import pytest
from signal_defaults import default_stop_signals
from test_sweep_run import FAKE, sweep

from aorta.cli import main
from aorta.sweep import manifest as mf

REPO = Path(__file__).resolve().parents[2]

# A stand-in for pytest (its name is what the sweep checks): starts a grandchild (as torchrun starts ranks),
# records both pids, then waits; it writes its JSON only if it is still alive after HANG_S.
FAKE_PYTEST = textwrap.dedent(
    """\
    #!{python}
    import os, subprocess, sys, time
    out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--benchmark-json="))
    rank = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with open(os.environ["PIDS"], "w") as f:
        f.write(f"{{os.getpid()}} {{rank.pid}}")
    time.sleep(float(os.environ.get("HANG_S", "60")))
    open(out, "w").write("{{}}")
    """
)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped) counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


class ForkedCli:
    """``python -m aorta ARGS`` in a process forked from this one: ``aorta.cli.main`` in the child, which has
    torch and aorta imported already (a fresh Python spends more than a second importing them for a sweep), its
    stop signals at their defaults (tests/signal_defaults.py), its stdout and stderr in files of its own. The
    calls of ``subprocess.Popen`` the tests make."""

    def __init__(self, args: list[str], env: dict[str, str]):
        self._out, self._err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self.returncode: int | None = None
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns
            code = 70
            try:
                os.dup2(self._out.fileno(), 1)
                os.dup2(self._err.fileno(), 2)
                default_stop_signals()
                os.environ.clear()
                os.environ.update(env)
                sys.stdout = open(1, "w", closefd=False, buffering=1)
                sys.stderr = open(2, "w", closefd=False, buffering=1)
                code = main(args)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, timeout: float = 60) -> tuple[str, str]:
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"aorta (forked, pid {self.pid})", timeout)
            time.sleep(0.02)
        said = []
        for f in (self._out, self._err):
            f.seek(0)
            said.append(f.read().decode(errors="replace"))
        return said[0], said[1]


def start_sweep(tmp_path: Path, how: str = "forked") -> tuple[subprocess.Popen | ForkedCli, Path, Path]:
    """A sweep of one cell whose stand-in pytest hangs: forked from this process (``ForkedCli``), or ``python``:
    a fresh ``python -m aorta sweep``, as users start it."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "pytest"
    fake.write_text(FAKE_PYTEST.format(python=sys.executable))
    fake.chmod(0o755)
    pids, out = tmp_path / "pids", tmp_path / "sw"
    env = {
        **os.environ,
        "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
        "PIDS": str(pids),
        "PYTHONPATH": str(REPO),
    }
    args = ["sweep", "--grid", "NCCL_NTHREADS=256", "--output", str(out), "--", "pytest"]
    proc: subprocess.Popen | ForkedCli
    if how == "forked":
        proc = ForkedCli(args, env)
    else:
        proc = subprocess.Popen(
            [sys.executable, "-m", "aorta", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=default_stop_signals,
        )
    deadline = time.monotonic() + 60
    while not (pids.exists() and pids.read_text()) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids.exists(), proc.communicate()
    return proc, pids, out


def wait_gone(pids: list[int], timeout_s: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


# ------------------------------------------------------------------------------ 1. no orphaned cell
# how the sweep starts: forked from this process in the fast tier, a fresh Python in the slow tier
HOW = pytest.mark.parametrize("how", ["forked", pytest.param("python", marks=pytest.mark.slow)])


@HOW
def test_a_sweep_killed_outright_takes_its_cell_and_the_cells_children_with_it(tmp_path, how):
    proc, pids_file, _ = start_sweep(tmp_path, how)
    pids = [int(p) for p in pids_file.read_text().split()]
    proc.kill()  # SIGKILL: the sweep cannot stop anything itself
    proc.communicate(timeout=30)
    assert wait_gone(pids) == [], "the cell (or its child) outlived the sweep"


@HOW
def test_sighup_stops_the_sweep_like_sigterm(tmp_path, how):
    proc, pids_file, out = start_sweep(tmp_path, how)
    pids = [int(p) for p in pids_file.read_text().split()]
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGHUP, err  # 129 (issue 65)
    assert "interrupted by SIGHUP" in err
    cell = json.loads((out / "sweep.json").read_text())["cells"][0]
    assert cell["status"] == "interrupted"
    assert wait_gone(pids) == []


LATE = FAKE.replace(
    'json.dump({"cell"',
    'json.dump({"machine_info": {"aorta": {"sweep_cell": {"attempt": "0ld0ld0ld0ld"}}}, "cell"',
)


def test_a_result_written_by_another_attempt_is_not_accepted(tmp_path):
    script = tmp_path / "late.py"
    script.write_text(LATE)
    code, doc, out = sweep(
        tmp_path / "sw",
        [sys.executable, str(script)],
        {"FAKE_LOG": str(tmp_path / "l")},
        grid=("NCCL_NTHREADS=64",),
    )
    assert code == 1
    cell = doc["cells"][0]
    assert cell["status"] == "failed"
    assert cell["note"] == "the benchmark JSON was written by attempt 0ld0ld0ld0ld, not this one"


# ------------------------------------------------------------------------------ 5. a command that cannot start
def test_a_cell_whose_command_cannot_start_is_recorded_failed_and_the_sweep_goes_on(tmp_path):
    code, doc, out = sweep(
        tmp_path / "sw", ["pytest"], {}, grid=("PATH=/nowhere/a,/nowhere/b",)
    )  # the grid's PATH hides pytest from both cells
    assert code == 1
    assert [c["status"] for c in doc["cells"]] == ["failed", "failed"]
    for cell in doc["cells"]:
        assert cell["note"].startswith("the command could not start: cannot start 'pytest':"), cell["note"]
        assert cell["exit_code"] == 127
    assert "cell 2 of 2: failed (the command could not start" in out


# ------------------------------------------------------------------------------ 4. disk full
@pytest.fixture
def any_command_runs_pytest(monkeypatch):
    """``aorta sweep`` in-process with the scripted cell command (it checks that a command runs pytest)."""
    import aorta.sweep.cli as cli

    monkeypatch.setattr(cli, "check_command", lambda cmd, axes: None)


def test_a_full_disk_stops_the_sweep_with_a_sentence_and_exit_3(
    tmp_path, monkeypatch, capsys, any_command_runs_pytest
):
    script = tmp_path / "fake.py"
    script.write_text(FAKE)
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "ran"))
    real, calls = mf.write_json_atomic, []

    def full_after_two(path, doc):
        calls.append(path)
        if len(calls) > 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, doc)

    monkeypatch.setattr(mf, "write_json_atomic", full_after_two)
    out = tmp_path / "sw"
    code = main(
        [
            "sweep",
            "--grid",
            "NCCL_NTHREADS=64,128,256",
            "--output",
            str(out),
            "--",
            sys.executable,
            str(script),
        ]
    )
    err = capsys.readouterr().err
    assert code == 3, err
    assert f"aorta sweep: error: stopped: cannot write under --output {out}: No space left on device" in err
    assert "run the same command again to resume" in err and "Traceback" not in err
    doc = json.loads((out / "sweep.json").read_text())  # the last one written whole: the first cell
    assert [c["status"] for c in doc["cells"]] == ["ok", "pending", "pending"]


# ------------------------------------------------------------------------------ 18. --force whose re-runs fail
def test_a_force_run_whose_reruns_fail_says_why_it_exits_1(tmp_path):
    script = tmp_path / "fake.py"
    script.write_text(FAKE)
    env = {"FAKE_LOG": str(tmp_path / "ran")}
    sweep(tmp_path / "sw", [sys.executable, str(script)], env, grid=("NCCL_NTHREADS=64,128",))
    code, _, out = sweep(
        tmp_path / "sw",
        [sys.executable, str(script)],
        {**env, "FAKE_FAIL": "64"},
        force=True,
        grid=("NCCL_NTHREADS=64,128",),
    )
    assert code == 1
    assert "aorta sweep: 2 ok; 1 failed in this run (1 of them re-runs: their earlier ok results kept)" in out


# ------------------------------------------------------------------------------ 4. disk full: report, JSON
def test_a_report_that_cannot_be_written_exits_3_and_keeps_the_earlier_report(tmp_path, monkeypatch, capsys):
    import aorta.report.sweep_figures as figures

    data = Path(__file__).parents[1] / "data" / "sweeps"
    out = tmp_path / "rep"
    args = [
        "report",
        "--sweep",
        str(data / "stack_a"),
        "--sweep",
        str(data / "stack_b"),
        "--output",
        str(out),
    ]
    out.mkdir()
    (out / "report.html").write_text("the earlier report")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(figures, "draw_heatmap", full)
    assert main(args) == 3
    err = capsys.readouterr().err
    assert (
        f"aorta report: error: cannot write the report under --output {out}: no space left on the device (ENOSPC)"
        in err
    )
    assert "Traceback" not in err
    assert (out / "report.html").read_text() == "the earlier report"
    assert [p.name for p in tmp_path.iterdir()] == ["rep"]  # no half-built folder beside it


def test_a_benchmark_json_that_cannot_be_written_leaves_no_partial_file_and_exits_3(pytester, monkeypatch):
    from test_gate_plugin import BASE_ARGS, SPIN_TEST

    import aorta.record.benchmark_json as bj

    monkeypatch.setenv("SPIN_US", "200")
    pytester.makepyfile(test_spin=SPIN_TEST)
    target = pytester.path / "run.json"
    target.write_text("an earlier run")

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(bj, "write_bytes_atomic", full)
    r = pytester.runpytest(*BASE_ARGS, f"--benchmark-json={target}")
    assert r.ret == 3, r.stdout.str()
    r.stdout.fnmatch_lines(
        [f"aorta: --benchmark-json {target}: NOT written: No space left on device; *-> exit 3"]
    )
    assert target.read_text() == "an earlier run"
    assert "benchmark JSON: " not in r.stdout.str()


def test_the_benchmark_json_is_written_whole_by_rename(pytester, monkeypatch):
    from test_gate_plugin import BASE_ARGS, SPIN_TEST

    monkeypatch.setenv("SPIN_US", "200")
    pytester.makepyfile(test_spin=SPIN_TEST)
    target = pytester.path / "run.json"
    r = pytester.runpytest(*BASE_ARGS, f"--benchmark-json={target}")
    assert r.ret == 0, r.stdout.str()
    assert json.loads(target.read_text())["benchmarks"]
    assert sorted(p.name for p in pytester.path.iterdir() if p.name.startswith(".run.json")) == []


# ------------------------------------------------------------------------------ 18. run_suite.sh's JSON line
def test_run_suite_leaves_the_json_path_to_pytest():
    script = (REPO / "scripts" / "run_suite.sh").read_text()
    assert 'echo "benchmark JSON: $out"' not in script  # the plugin prints it: once
    assert "no benchmark JSON written" in script


def test_a_result_is_accepted_from_its_own_attempt_or_a_writer_that_records_none(tmp_path):
    from aorta.sweep.runner import foreign_attempt

    def written_by(attempt):
        p = tmp_path / "benchmark.json"
        cell = {} if attempt is None else {"attempt": attempt}
        p.write_text(json.dumps({"machine_info": {"aorta": {"sweep_cell": cell}}}))
        return p

    assert foreign_attempt(written_by("a1b2c3d4e5f6"), "a1b2c3d4e5f6") is None  # this attempt's own
    assert foreign_attempt(written_by("0ld0ld0ld0ld"), "a1b2c3d4e5f6") == "0ld0ld0ld0ld"
    assert foreign_attempt(written_by(None), "a1b2c3d4e5f6") is None  # not written by aorta's sweep
