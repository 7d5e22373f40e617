"""The guards of the child processes aorta starts, each made to matter in under a second (issue 58): the
SIGKILL that follows SIGTERM to what a child left in its process group, the SIGKILL after the grace to a child
that ignores SIGTERM, the death signal a child is started with and the exit when its parent died before it was
set, and the refusal to signal a process group of aorta's own. Real small process trees (sh and sleep), no run
of pytest: ``tests/guards/GUARDS.md`` lists each guard beside the test that fails when it is taken out."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from process_watch import alive, gone_within, wait_for

from aorta.processes import child_process
from aorta.processes.parent_death import SIGNAL_BASE, die_with_parent

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and PR_SET_PDEATHSIG")


# The child dies on SIGTERM (its default restored: a test run under nohup or as a background job may have
# it ignored); the grandchild it leaves in its process group ignores SIGTERM, as a rank stuck in a driver
# call or a shell's trap does, and writes its pid once it runs.
LEAVES_A_GRANDCHILD = """
import signal, subprocess, sys
signal.signal(signal.SIGTERM, signal.SIG_DFL)
subprocess.Popen(["sh", "-c", "trap '' TERM; echo $$ > " + sys.argv[1] + ".tmp; mv " + sys.argv[1] + ".tmp "
                  + sys.argv[1] + "; exec sleep 30"])
signal.pause()
"""


@linux_only
def test_after_sigterm_what_the_child_left_in_its_group_is_killed_without_waiting_the_grace(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    proc = child_process.start_child([sys.executable, "-S", "-c", LEAVES_A_GRANDCHILD, str(pid_file)])
    grandchild = int(wait_for(pid_file, text=False))
    try:
        assert alive(grandchild)
        t0 = time.monotonic()
        child_process.end_tree(proc, grace_s=20.0)
        # the child ended on SIGTERM at once: its group got SIGKILL then, not after the 20 s grace
        assert proc.returncode == -signal.SIGTERM
        assert time.monotonic() - t0 < 10.0
        assert gone_within(grandchild, 3.0), "the grandchild that ignores SIGTERM outlived end_tree"
        assert proc.pid not in child_process._LIVE
    finally:
        if alive(grandchild):
            os.kill(grandchild, signal.SIGKILL)


@linux_only
def test_a_child_that_ignores_sigterm_is_killed_when_the_grace_ends(tmp_path):
    ready = tmp_path / "ready"
    proc = child_process.start_child(["sh", "-c", f"trap '' TERM; touch {ready}; exec sleep 30"])
    wait_for(ready, text=False)
    t0 = time.monotonic()
    child_process.end_tree(proc, grace_s=0.3)
    assert proc.returncode == -signal.SIGKILL  # SIGTERM was ignored: SIGKILL ended it
    assert 0.25 <= time.monotonic() - t0 < 10.0  # and only once the grace was spent


def test_end_tree_never_signals_a_group_of_aortas_own(monkeypatch):
    """``killpg(0)`` is this process's group: a Popen whose pid reads 0 must not take aorta down with it."""
    sent = []
    monkeypatch.setattr(os, "killpg", lambda pid, sig: sent.append((pid, sig)))

    class NoProcess:
        pid = 0
        returncode = None

        def poll(self):
            return 0

        def wait(self, timeout=None):
            return 0

    child_process._LIVE[0] = NoProcess()
    child_process.end_tree(NoProcess(), grace_s=0.1)
    assert sent == [] and 0 not in child_process._LIVE
    child_process.end_tree(NoProcess(), grace_s=0.1)  # one never registered: no error either
    assert sent == []


@linux_only
def test_end_children_ends_every_live_childs_tree_and_counts_them(tmp_path):
    ready = [tmp_path / f"ready{i}" for i in range(2)]
    procs = [child_process.start_child(["sh", "-c", f"touch {r}; exec sleep 30"]) for r in ready]
    done = child_process.start_child(["true"])
    done.wait()
    for r in ready:
        wait_for(r, text=False)
    assert child_process.end_children(grace_s=5.0) == 2  # the one that already ended is not counted
    assert [p.returncode for p in procs] == [-signal.SIGTERM, -signal.SIGTERM]
    assert child_process._LIVE == {}


READ_DEATH_SIGNAL = (
    "import ctypes, sys; v = ctypes.c_int(); ctypes.CDLL(None).prctl(2, ctypes.byref(v), 0, 0, 0); "
    "sys.exit(v.value)"  # PR_GET_PDEATHSIG
)


@linux_only
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_child_is_started_with_the_death_signal_asked_for(sig):
    done = subprocess.run([sys.executable, "-S", "-c", READ_DEATH_SIGNAL], preexec_fn=die_with_parent(sig))
    assert done.returncode == int(sig)


@linux_only
def test_a_child_whose_parent_died_before_its_death_signal_was_set_exits_128_plus_the_signal():
    inner = die_with_parent(signal.SIGTERM)
    assert inner is not None

    def parent_already_gone() -> None:  # runs in the child: its parent is now another process (init)
        os.getppid = lambda: 1
        inner()

    done = subprocess.run([sys.executable, "-S", "-c", READ_DEATH_SIGNAL], preexec_fn=parent_already_gone)
    assert done.returncode == SIGNAL_BASE + signal.SIGTERM  # exited before the command ran (which gives 15)


@pytest.mark.parametrize(
    ("returncode", "status", "words"),
    [
        (-signal.SIGKILL, 137, "killed by signal 9 (SIGKILL), exit 137"),
        (-signal.SIGTERM, 143, "killed by signal 15 (SIGTERM), exit 143"),
        (-signal.SIGHUP, 129, "killed by signal 1 (SIGHUP), exit 129"),
        (3, 3, "exit 3"),
        (0, 0, "exit 0"),
    ],
)
def test_a_returncode_is_an_exit_status_as_a_shell_gives_it(returncode, status, words):
    assert child_process.exit_status(returncode) == status
    assert child_process.ended(returncode) == words


def test_a_stopped_command_ends_its_children_first_and_says_how_many(monkeypatch):
    monkeypatch.setattr(child_process, "end_children", lambda grace_s=0.0: 2)
    child_process._ENDED[:] = [1234]  # one more ended on the way out of call_to_end
    code, line = child_process.stop_line("aorta ab", signal.SIGTERM)
    assert code == 143
    assert line == "aorta ab: stopped by SIGTERM; 3 child process tree(s) ended; exit 143"
    assert child_process._ENDED == []
    monkeypatch.setattr(child_process, "end_children", lambda grace_s=0.0: 0)
    assert child_process.stop_line("aorta gate", signal.SIGINT) == (
        130,
        "aorta gate: stopped by SIGINT; exit 130",
    )
