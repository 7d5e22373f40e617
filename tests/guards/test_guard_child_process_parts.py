"""The child starter's parts word for word (aorta/processes/child_process.py, issue 58), each against a real small
child or a recorder: the death signal every child is started with, a run handed to the fork server with its own
environment, folder and output (and a plain process with all of its settings where the server cannot fork it),
a wait that is not cut short, a hung child's note, a stop signal while a child runs, and every ended child
forgotten."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from aorta.processes import child_process, fork_server

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG, /proc")
READ_DEATH_SIGNAL = (
    "import ctypes, sys; v = ctypes.c_int(); ctypes.CDLL(None).prctl(2, ctypes.byref(v), 0, 0, 0); "
    "sys.exit(v.value)"
)


@pytest.fixture(autouse=True)
def _no_children_left():
    child_process._LIVE.clear()
    child_process._ENDED.clear()
    yield
    for proc in list(child_process._LIVE.values()):
        if hasattr(proc, "kill") and isinstance(proc, subprocess.Popen) and proc.poll() is None:
            proc.kill()
            proc.wait()
    child_process._LIVE.clear()
    child_process._ENDED.clear()


@linux_only
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_every_child_started_gets_its_death_signal(sig):
    kw = {} if sig == signal.SIGKILL else {"die_signal": sig}  # SIGKILL unless asked
    proc = child_process.start_child([sys.executable, "-S", "-c", READ_DEATH_SIGNAL], **kw)
    assert proc.wait(timeout=30) == int(sig)
    assert child_process._LIVE[proc.pid] is proc  # known to end_children until ended


class Recorder:
    def __init__(self):
        self.asked: list[dict] = []

    def start(self, args, **kw):
        self.asked.append({"args": args, **kw})
        return fork_server.ForkedChild(self, 5)


@pytest.mark.parametrize("cwd", [None, "given"])
def test_a_forked_run_gets_its_own_environment_folder_and_output(monkeypatch, tmp_path, cwd):
    rec, servers = Recorder(), []
    monkeypatch.setattr(fork_server, "server_for", lambda env, where: servers.append((env, where)) or rec)
    monkeypatch.chdir(tmp_path)
    env = {"AORTA_FRESH_RUN": "run 1/2", "A": "1"}
    with open(tmp_path / "run.log", "w") as out:
        popen = {"stdout": out, "stderr": subprocess.STDOUT, **({"cwd": tmp_path / "w"} if cwd else {})}
        child = child_process.start_run([sys.executable, "-m", "pytest", "-q"], env, popen)
        where = str(tmp_path / "w") if cwd else os.getcwd()
        assert servers == [(env, where)]
        assert rec.asked == [{"args": ["-q"], "env": env, "cwd": where, "out_fd": out.fileno()}]
    assert child_process._LIVE.pop(5) is child  # registered, and not left for another test's end_children


def test_a_run_the_server_cannot_take_starts_plain_with_every_setting_it_was_given(monkeypatch, tmp_path):
    started = []
    monkeypatch.setattr(child_process, "start_child", lambda cmd, **kw: started.append((cmd, kw)) or "plain")
    with open(tmp_path / "run.log", "w") as out:
        popen = {"stdout": out, "stderr": subprocess.STDOUT, "cwd": tmp_path, "text": True}
        assert child_process.start_run([sys.executable, "-m", "pytest"], {"A": "1"}, popen) == "plain"
        assert started == [([sys.executable, "-m", "pytest"], {"env": {"A": "1"}, **popen})]


def test_a_child_that_writes_its_status_and_exits_is_waited_for_not_killed(tmp_path):
    done = tmp_path / "c.done"
    script = 'echo 3 > "$AORTA_CHILD_DONE_FILE"; sleep 0.5; exit 3'
    assert child_process.call_to_end(
        ["sh", "-c", script], done_file=str(done), grace_s=10.0, poll_s=0.05
    ) == (3, "")
    assert child_process._LIVE == {}  # ended: forgotten


def test_a_hung_child_is_killed_and_its_written_status_kept_in_words(tmp_path):
    script = 'echo 4 > "$AORTA_CHILD_DONE_FILE"; exec sleep 30'
    raw, note = child_process.call_to_end(
        ["sh", "-c", script], done_file=str(tmp_path / "d"), grace_s=0.2, poll_s=0.05
    )
    assert raw == 4
    assert (
        note
        == "ended its session (exit 4) but was still running 0 s later (hung at exit): killed, its results kept"
    )


def test_a_hung_child_whose_status_cannot_be_read_is_reported_as_killed_without_a_note(tmp_path):
    script = 'echo garbage > "$AORTA_CHILD_DONE_FILE"; exec sleep 30'
    raw, note = child_process.call_to_end(
        ["sh", "-c", script], done_file=str(tmp_path / "d"), grace_s=0.2, poll_s=0.05
    )
    assert (raw, note) == (-signal.SIGKILL, "")


class Exited(Exception):
    def __init__(self, code):
        self.code = code


@linux_only
def test_sighup_while_a_child_runs_ends_its_tree_and_the_gate_in_one_line(tmp_path, monkeypatch, capsys):
    before = signal.signal(signal.SIGHUP, signal.SIG_DFL)

    def exit_(code):
        raise Exited(code)

    monkeypatch.setattr(child_process.os, "_exit", exit_)
    real_wait = child_process._wait_to_end

    def hangup_while_waiting(proc, done_file, grace_s, poll_s):  # the child runs, the handlers are set
        os.kill(os.getpid(), signal.SIGHUP)
        return real_wait(proc, done_file, grace_s, poll_s)

    monkeypatch.setattr(child_process, "_wait_to_end", hangup_while_waiting)
    try:
        with pytest.raises(Exited) as exc:
            child_process.call_to_end(["sleep", "30"], done_file=str(tmp_path / "d"), poll_s=0.05)
    finally:
        signal.signal(signal.SIGHUP, before)
    assert exc.value.code == 129
    assert (
        capsys.readouterr().err == "aorta gate: stopped by SIGHUP; 1 child process tree(s) ended; exit 129\n"
    )
    assert signal.getsignal(signal.SIGHUP) is before  # put back on the way out
    assert child_process._LIVE == {}


def test_ctrl_c_raised_in_the_body_ends_the_children_and_exits_130(monkeypatch, capsys):
    monkeypatch.setattr(child_process, "end_children", lambda grace_s=0.0: 0)

    def body():
        raise KeyboardInterrupt

    assert child_process.run_until_stopped("aorta sweep", body) == 130
    assert capsys.readouterr().err == "aorta sweep: stopped by SIGINT; exit 130\n"
    assert str(child_process.Stop(signal.SIGTERM)) == "stopped by SIGTERM"


@linux_only
def test_end_children_gives_each_child_the_grace_asked_not_the_default(tmp_path):
    ready = tmp_path / "ready"
    proc = child_process.start_child(["sh", "-c", f"trap '' TERM; touch {ready}; exec sleep 30"])
    deadline = time.monotonic() + 10
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    t0 = time.monotonic()
    assert child_process.end_children(grace_s=0.3) == 1
    assert time.monotonic() - t0 < 5.0 and proc.returncode == -signal.SIGKILL


def test_a_child_already_gone_or_never_known_is_ended_and_forgotten_without_error():
    gone = child_process.start_child(["true"])
    gone.wait()  # reaped: its process group no longer exists
    child_process.end_tree(gone, grace_s=0.1)
    assert gone.pid not in child_process._LIVE
    alone = child_process.start_child(["sleep", "30"])  # dies on SIGTERM, its group then empty for SIGKILL
    child_process.end_tree(alone, grace_s=5.0)
    assert alone.returncode == -signal.SIGTERM and alone.pid not in child_process._LIVE
    unknown = subprocess.Popen(["sleep", "30"], start_new_session=True)  # never in _LIVE
    child_process.end_tree(unknown, grace_s=5.0)
    assert unknown.returncode == -signal.SIGTERM


def test_a_child_that_cannot_be_signalled_is_still_waited_for(monkeypatch):
    def refused(pid, sig):
        raise PermissionError

    class Child:
        pid, waited = 4321, []

        def poll(self):
            return None

        def wait(self, timeout=None):
            self.waited.append(timeout)
            return 0

    monkeypatch.setattr(os, "killpg", refused)
    child = Child()
    child_process.end_tree(child, grace_s=0.1)
    assert child.waited == [None]  # not left running unawaited
