"""Cheap fresh runs (issue 45): a gate's or ``aorta ab``'s run of this Python's pytest is forked from a server
that imported torch once (aorta/processes/fork_server.py). Each forked run still is a process of its own: its
own environment, folder, output and exit status, a session of its own that ends with its parent, and a record
of how it was started. ``AORTA_RUN_START=exec`` starts every run from nothing; a wrong value is refused before
any run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from aorta.processes import child_process, fork_server

REPO = Path(__file__).resolve().parents[2]

# A test that writes what its process sees, then does what $AORTA_TEST_DO says.
PROBE = textwrap.dedent(
    """\
    import json, os, signal, sys, time

    def test_probe():
        with open(os.environ["AORTA_TEST_OUT"], "w") as fh:
            json.dump({"pid": os.getpid(), "sid": os.getsid(0), "cwd": os.getcwd(), "env": dict(os.environ),
                       "aorta_first": "aorta" in sys.modules}, fh)
        print("probe ran")
        do = os.environ.get("AORTA_TEST_DO", "")
        if do == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if do == "sleep":
            time.sleep(60)
        assert do != "fail"
    """
)


@pytest.fixture
def probe(tmp_path) -> Path:
    (tmp_path / "test_probe.py").write_text(PROBE)
    return tmp_path


@pytest.fixture(autouse=True)
def _no_servers_left():
    fork_server.close_servers()  # another test's, in this process
    yield
    fork_server.close_servers()


def _env(probe: Path, **extra: str) -> dict:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "AORTA_TEST_OUT": str(probe / "seen.json"),
        **extra,
    }


def _run(probe: Path, env: dict, name: str = "r") -> tuple[int, str, dict]:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_probe.py"]
    log = probe / f"{name}.log"
    with open(log, "w") as fh:
        raw, _ = child_process.call_to_end(
            cmd,
            done_file=str(probe / f"{name}.done"),
            env=env,
            cwd=probe,
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    seen = json.loads((probe / "seen.json").read_text()) if (probe / "seen.json").exists() else {}
    return raw, log.read_text(), seen


def test_a_forked_run_has_its_own_environment_folder_output_and_session(probe):  # fast tier: about 7 s
    first = _run(probe, _env(probe, AORTA_FRESH_RUN="run 1/2"), "r1")
    second = _run(probe, _env(probe, AORTA_FRESH_RUN="run 2/2"), "r2")
    for (raw, log, seen), label in zip((first, second), ("run 1/2", "run 2/2"), strict=True):
        assert raw == 0 and "1 passed" in log
        assert seen["env"]["AORTA_FRESH_RUN"] == label  # what differs run to run reaches the run
        assert seen["env"][fork_server.START_KEY] == "fork"
        assert seen["cwd"] == str(probe)
        assert seen["sid"] == seen["pid"]  # a session of its own: its tree ends as one
        assert "PytestAssertRewriteWarning" not in log  # aorta is imported afresh, as pytest's plugin
        assert "Warning" not in log  # pytest started as `python -m pytest` is (console_main warns from 9.1)
    assert first[2]["pid"] != second[2]["pid"]
    assert len(fork_server._SERVERS) == 1  # one server for both: their environments differ per run only


@pytest.mark.slow
def test_a_different_environment_gets_a_server_of_its_own(probe):
    _run(probe, _env(probe, NCCL_MAX_NCHANNELS="4"), "a")
    _run(probe, _env(probe), "b")
    assert len(fork_server._SERVERS) == 2  # aorta ab's sides: each imports under its own settings


@pytest.mark.slow
@pytest.mark.parametrize(("do", "raw"), [("fail", 1), ("kill", -signal.SIGKILL)])
def test_a_forked_run_s_exit_status_is_its_own(probe, do, raw):
    code, log, _ = _run(probe, _env(probe, AORTA_TEST_DO=do))
    assert code == raw
    assert child_process.ended(code) == (
        "exit 1" if do == "fail" else "killed by signal 9 (SIGKILL), exit 137"
    )


@pytest.mark.slow
def test_exec_starts_a_run_from_nothing(probe):
    raw, _, seen = _run(probe, _env(probe, AORTA_RUN_START="exec"))
    assert raw == 0 and fork_server.START_KEY not in seen["env"]
    assert fork_server._SERVERS == {}


def _sleeping_run(probe: Path):
    """(server, child): a forked run whose test sleeps, once it is running."""
    env = _env(probe, AORTA_TEST_DO="sleep")
    server = fork_server.server_for(env, str(probe))
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_probe.py"]
    with open(probe / "s.log", "w") as fh:
        child = child_process.start_run(cmd, env, {"stdout": fh, "stderr": subprocess.STDOUT, "cwd": probe})
    deadline = time.monotonic() + 60
    while not (probe / "seen.json").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return server, child


@pytest.mark.slow
def test_a_forked_run_ends_with_its_tree(probe):
    server, child = _sleeping_run(probe)
    assert isinstance(child, fork_server.ForkedChild)
    pid = json.loads((probe / "seen.json").read_text())["pid"]
    assert child.pid == pid and child.poll() is None
    child_process.end_tree(child, grace_s=5.0)
    assert child.returncode == -signal.SIGTERM
    server.close()


@pytest.mark.slow
def test_a_forked_run_dies_with_its_server(probe):
    server, child = _sleeping_run(probe)
    server.close()
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{child.pid}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{child.pid}")


def test_a_run_of_a_closed_server_reads_as_ended_with_it_not_as_an_error():
    # a stop line polls every live run; a run whose server was closed (and it with it) is over, not a crash
    import socket

    server = object.__new__(fork_server.ForkServer)
    server.sock, other = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    other.close()
    server.sock.close()
    child = fork_server.ForkedChild(server, 12345)
    assert child.poll() == -signal.SIGKILL
    assert child.wait(timeout=0) == -signal.SIGKILL


def test_only_this_python_s_pytest_is_forked():
    py = sys.executable
    assert fork_server.forkable([py, "-m", "pytest", "-q", "x"]) == ["-q", "x"]
    assert fork_server.forkable([py, "-m", "torch.distributed.run", "x"]) is None
    assert fork_server.forkable(["/opt/other/python", "-m", "pytest"]) is None
    assert fork_server.forkable([py, "-c", "pass"]) is None


def test_the_server_s_environment_is_the_run_s_less_what_differs_run_to_run():
    env = {"PATH": "/bin", "AORTA_FRESH_RUN": "run 1/3", "AORTA_CHILD_DONE_FILE": "/x", "NCCL_X": "1"}
    assert fork_server.server_env(env) == {"PATH": "/bin", "NCCL_X": "1"}


@pytest.mark.parametrize(("value", "mode"), [("", "fork"), ("fork", "fork"), (" EXEC ", "exec")])
def test_aorta_run_start_takes_fork_or_exec(value, mode):
    assert fork_server.start_mode({"AORTA_RUN_START": value}) == mode


def test_a_wrong_aorta_run_start_names_the_variable_and_what_is_allowed():
    with pytest.raises(ValueError, match=r"AORTA_RUN_START='spawn'.*fork, exec"):
        fork_server.start_mode({"AORTA_RUN_START": "spawn"})


@pytest.mark.slow
def test_a_gate_refuses_a_wrong_aorta_run_start_before_any_run(tmp_path, probe):
    env = _env(probe, AORTA_RUN_START="spawn")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_probe.py", "--aorta-runs=2"],
        cwd=probe,
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == pytest.ExitCode.USAGE_ERROR
    assert "AORTA_RUN_START='spawn'" in out.stderr
    assert not (probe / "seen.json").exists()


def test_aorta_ab_refuses_a_wrong_aorta_run_start_before_any_run(tmp_path, capsys):
    from aorta.cli import main

    code = main(["ab", "--a", "AORTA_RUN_START=spawn", "--b", "", "--out", str(tmp_path / "ab"), "--", "x"])
    assert code == 2
    assert "AORTA_RUN_START='spawn'" in capsys.readouterr().err
    assert not (tmp_path / "ab").exists()


@pytest.mark.slow
def test_a_gate_run_records_how_it_was_started(tmp_path, saved_stream_gate):
    from stream_gate import STREAM_GATE

    fork = saved_stream_gate  # the default start, AORTA_RUN_START=fork: the gate shared with test_slowdown.py
    assert fork["code"] == 0, fork["output"]
    runs = tmp_path / "exec"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *STREAM_GATE]
        + ["--aorta-save-baseline", "x", "--aorta-baseline-dir", str(tmp_path / "bl-exec")]
        + ["--aorta-runs=2", "--aorta-runs-dir", str(runs)],
        cwd=REPO,
        env={**os.environ, "AORTA_RUN_START": "exec"},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    for mode, folder in (("fork", fork["folder"] / "runs"), ("exec", runs)):
        starts = {json.loads(p.read_text())["aorta_run"]["start"] for p in folder.glob("*/run*.json")}
        assert starts == {mode}


@pytest.mark.slow
def test_aorta_ab_forks_each_side_from_its_own_server_and_ends_them(tmp_path, monkeypatch, capsys):
    from aorta.cli import main

    monkeypatch.chdir(REPO)
    out = tmp_path / "ab"
    code = main(
        [
            "ab",
            "--runs",
            "2",
            "--a",
            "",
            "--b",
            "AORTA_TEST_SIDE=b",
            "--out",
            str(out),
            "--",
            "benchmarks/hw_queue",
        ]
        + ["-k", "stream_concurrency and streams1", "-p", "no:cacheprovider"]
    )
    assert code in (0, 15), capsys.readouterr()
    starts = {json.loads(p.read_text())["aorta_run"]["start"] for p in out.glob("[AB]*.json")}
    assert starts == {"fork"}
    assert fork_server._SERVERS == {}  # both sides' servers ended with the command
