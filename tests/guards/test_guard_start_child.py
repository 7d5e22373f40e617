"""How aorta starts a child and kills its tree now (aorta/processes/process_tree.py, issue 58): under a keeper, the
keeper's own command line (isolated, no site, the grace, the death signal, this pid); without one, a session of
its own and the death signal asked for; a command that cannot run refused before anything starts, as ``Popen``
refuses it (found on the ``PATH`` the child gets, a relative path in the child's folder); and ``kill_now``: a
keeper asked to kill its tree (SIGUSR1) and given 5 s, anything else SIGKILLed with its group. Real small
processes (sh, sleep) and, for the order of signals, a recording stand-in."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time

import pytest
from process_watch import gone_within, wait_for

from aorta.processes import keeper, process_tree

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, prctl and a keeper")

READ_DEATH_SIGNAL = (
    "import ctypes, sys; v = ctypes.c_int(); ctypes.CDLL(None).prctl(2, ctypes.byref(v), 0, 0, 0); "
    "sys.exit(v.value)"  # PR_GET_PDEATHSIG
)
READ_SESSION = "import os, sys; sys.exit(0 if os.getsid(0) == os.getpid() else 1)"


@pytest.fixture(params=["keeper", "plain"])
def how(request, monkeypatch) -> str:
    """Each start both ways: under the keeper (Linux), and as the command itself (elsewhere)."""
    if request.param == "plain":
        monkeypatch.setattr(process_tree, "KEEPER_PYTHON", None)
    elif not process_tree.KEEPER_PYTHON:
        pytest.skip("no keeper off Linux")
    return request.param


# ------------------------------------------------------------------------------------------ start_child
@linux_only
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_the_command_gets_the_death_signal_asked_for_either_way(how, sig):
    proc = process_tree.start_child([sys.executable, "-S", "-c", READ_DEATH_SIGNAL], die_signal=sig)
    assert proc.wait(timeout=30) == int(sig)
    assert proc.kept is (how == "keeper")
    assert process_tree._LIVE.pop(proc.pid) is proc  # known to end_children until ended


@linux_only
def test_the_child_runs_in_a_session_of_its_own_and_keeps_its_popen_settings(how, tmp_path):
    proc = process_tree.start_child(
        ["sh", "-c", 'echo "$WHERE $(pwd)"; exit 4'],
        env={**os.environ, "WHERE": "here"},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
    )
    out, _ = proc.communicate(timeout=30)
    assert (proc.returncode, out) == (4, f"here {tmp_path}\n")
    process_tree._LIVE.pop(proc.pid)
    own = process_tree.start_child([sys.executable, "-S", "-c", READ_SESSION])
    if how == "plain":
        assert own.wait(timeout=30) == 0  # the command leads its own session
    else:
        assert own.wait(timeout=30) == 1  # the keeper leads it; the command has a group of its own beneath
    process_tree._LIVE.pop(own.pid)


@linux_only
def test_a_kept_child_is_the_keeper_isolated_told_the_grace_its_death_signal_and_this_pid():
    proc = process_tree.start_child(["true"], die_signal=signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    process_tree._LIVE.pop(proc.pid)
    grace = f"{process_tree.STOP_GRACE_S - 2.0:g}"
    assert grace == "8"  # the keeper kills the tree 2 s before end_tree would
    assert (
        proc.args
        == [
            process_tree.KEEPER_PYTHON,
            "-I",
            "-S",  # no site: the keeper needs the stdlib only, and no .pth file of the run's environment runs in it
            keeper.__file__,
            grace,
            str(int(signal.SIGTERM)),
            str(os.getpid()),
            "true",
        ]
    )
    assert proc.kept is True


# ----------------------------------------------------------------------- a command that cannot run
def _raises(exc_type, program, **popen):
    with pytest.raises(exc_type) as exc:
        process_tree.start_child([program], **popen)
    assert exc.value.filename == program
    return exc.value


@linux_only
def test_a_command_found_only_on_the_child_s_own_path_starts(how, tmp_path):
    tool = tmp_path / "mytool"
    tool.write_text("#!/bin/sh\nexit 6\n")
    tool.chmod(0o755)
    proc = process_tree.start_child(["mytool"], env={**os.environ, "PATH": str(tmp_path)})
    assert proc.wait(timeout=30) == 6
    process_tree._LIVE.pop(proc.pid)
    err = _raises(FileNotFoundError, "mytool", env={**os.environ, "PATH": "/nonexistent"})
    assert err.errno == errno.ENOENT


@linux_only
def test_a_relative_command_is_found_in_the_child_s_folder(how, tmp_path):
    (tmp_path / "bin").mkdir()
    tool = tmp_path / "bin" / "tool"
    tool.write_text("#!/bin/sh\nexit 7\n")
    tool.chmod(0o755)
    proc = process_tree.start_child(["bin/tool"], cwd=tmp_path)
    assert proc.wait(timeout=30) == 7
    process_tree._LIVE.pop(proc.pid)
    assert _raises(FileNotFoundError, "bin/tool", cwd=tmp_path / "bin").errno == errno.ENOENT


def test_what_cannot_run_is_refused_as_popen_refuses_it(tmp_path, monkeypatch):
    """``_check_runnable``: the keeper would start and then fail; the caller must get Popen's error instead."""
    check = process_tree._check_runnable
    plain = tmp_path / "plain"
    plain.write_text("not executable")
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    check(str(tool), None, None)  # absolute and runnable: no error
    for program, exc_type, code in [
        (str(tmp_path / "missing"), FileNotFoundError, errno.ENOENT),
        (str(plain), PermissionError, errno.EACCES),
        (str(tmp_path), PermissionError, errno.EACCES),  # a folder
    ]:
        with pytest.raises(exc_type) as exc:
            check(program, None, "/")
        assert (exc.value.errno, exc.value.strerror, exc.value.filename) == (code, os.strerror(code), program)
    monkeypatch.chdir(tmp_path)
    check("./tool", None, None)  # relative, no folder given: the working folder
    with pytest.raises(FileNotFoundError):
        check("./tool", None, "/")
    check("tool", {"PATH": str(tmp_path)}, None)
    monkeypatch.setenv("PATH", str(tmp_path))
    check("tool", None, None)  # no environment given: this process's PATH
    with pytest.raises(FileNotFoundError) as exc:
        check("tool", {"PATH": "/nonexistent"}, None)
    assert (exc.value.errno, exc.value.strerror, exc.value.filename) == (
        errno.ENOENT,
        os.strerror(errno.ENOENT),
        "tool",
    )
    check("sh", {}, None)  # an environment without PATH: the system's default path


# ---------------------------------------------------------------------------------------------- kill_now
class Recorded:
    """A stand-in child that records what it is sent; ``exits`` False: a keeper that does not answer."""

    def __init__(self, kept: bool | None, exits: bool = True, pid: int = 4321) -> None:
        self.pid = pid
        self.events: list[tuple] = []
        self.exits = exits
        if kept is not None:
            self.kept = kept

    def send_signal(self, sig):
        self.events.append(("signal", sig))

    def wait(self, timeout=None):
        self.events.append(("wait", timeout))
        if timeout is not None and not self.exits:
            raise subprocess.TimeoutExpired("keeper", timeout)
        return -9

    def kill(self):
        self.events.append(("kill",))


@pytest.fixture
def killpg(monkeypatch):
    sent: list[tuple] = []
    raising: dict[int, type[Exception]] = {}

    def fake(pid, sig):
        sent.append(("killpg", pid, sig))
        if pid in raising:
            raise raising[pid]

    monkeypatch.setattr(process_tree.os, "killpg", fake)
    return sent, raising


def test_kill_now_asks_a_keeper_to_kill_its_tree_and_waits_5_s_for_it(killpg):
    sent, _ = killpg
    proc = Recorded(kept=True)
    process_tree.kill_now(proc)
    assert proc.events == [("signal", signal.SIGUSR1), ("wait", 5.0)] and sent == []
    assert process_tree.KILL_NOW_WAIT_S == 5.0 and keeper.KILL_NOW == signal.SIGUSR1


def test_a_keeper_that_does_not_answer_is_killed_with_its_group(killpg):
    sent, _ = killpg
    proc = Recorded(kept=True, exits=False)
    process_tree.kill_now(proc)
    assert proc.events == [("signal", signal.SIGUSR1), ("wait", 5.0), ("wait", None)]
    assert sent == [("killpg", 4321, signal.SIGKILL)]


@pytest.mark.parametrize("kept", [False, None], ids=["plain", "no-mark"])
def test_a_child_without_a_keeper_is_killed_with_its_group_at_once(killpg, kept):
    sent, _ = killpg
    proc = Recorded(kept=kept)
    process_tree.kill_now(proc)
    assert sent == [("killpg", 4321, signal.SIGKILL)]
    assert proc.events == [("wait", None)]  # never SIGUSR1, which would end a plain command by itself


@pytest.mark.parametrize("error", [ProcessLookupError, PermissionError])
def test_a_group_that_cannot_be_signalled_leaves_the_child_killed_alone(killpg, error):
    sent, raising = killpg
    raising[4321] = error
    proc = Recorded(kept=False)
    process_tree.kill_now(proc)
    assert proc.events == [("kill",), ("wait", None)]


@linux_only
def test_kill_now_ends_a_real_tree_either_way(how, tmp_path):
    pid_file = tmp_path / "pid"
    proc = process_tree.start_child(["sh", "-c", f"trap '' TERM USR1; sleep 30 & echo $! > {pid_file}; wait"])
    member = int(wait_for(pid_file))
    t0 = time.monotonic()
    process_tree.kill_now(proc)
    assert time.monotonic() - t0 < 5.0  # killed, not left for the keeper's 5 s
    assert proc.returncode == -signal.SIGKILL
    assert gone_within(member, 5.0)
    process_tree._LIVE.pop(proc.pid)
