"""The keeper's guards in this process (aorta/processes/keeper.py, issue 58): the process table it reads, the tree
it kills and reaps, the prctl it asks, and how its wait treats the stop signals it was sent: the first passed on
to the command's group as it came (the command's death signal once aorta is gone), the tree killed at the
grace's end, at once on a second signal or SIGUSR1. Real small processes (sh, sleep) started by this test; the
keeper as a process of its own (``main``) is run by ``tests/gate/test_process_tree.py``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from functools import wraps

import pytest
from process_watch import alive, wait_for

from aorta.processes import keeper

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")


def _stop_signals_at_default() -> None:
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def command(script: str) -> subprocess.Popen:
    """``sh -c script`` in a group of its own, as the keeper runs a command; its stop signals at their defaults
    whatever this test process has (pytest started in the background or under nohup ignores SIGINT or SIGHUP,
    and an ignored signal would stay ignored in the command, as the keeper means it to)."""
    return subprocess.Popen(["sh", "-c", script], start_new_session=True, preexec_fn=_stop_signals_at_default)


def forget(proc: subprocess.Popen, status: int) -> None:
    """The keeper's wait reaped ``proc``: tell its Popen how it ended (no 'still running' warning)."""
    proc.returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def alone(test):
    """Runs ``test`` in a fork of this process: a process with no children but the test's own. A pytest worker
    may hold children of earlier tests (servers kept for the session, a child still ending); killing or
    reaping "everything below this process" there would take them too, and the test would count them."""

    @wraps(test)
    def run(*args, **kwargs):
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the fork's outcome is its exit status)
            code = 1
            try:
                test(*args, **kwargs)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, f"{test.__name__} failed in its own process (above)"

    return run


# --------------------------------------------------------------------------------------- the process table
def test_the_parent_table_reads_each_process_s_parent_past_a_name_holding_a_parenthesis(tmp_path):
    proc = tmp_path / "proc"
    for pid, stat in {
        "123": "123 (a) b) S 45 77 77 0",  # a command named 'a) b': the last ')' ends the name
        "124": "124 (sh) R 1 124 124 0",
        "125": "garbage",  # no ')': left out
    }.items():
        (proc / pid).mkdir(parents=True)
        (proc / pid / "stat").write_text(stat)
    (proc / "126").mkdir()  # ended while the table was read: no stat
    (proc / "self").mkdir()  # not a pid
    (proc / "self" / "stat").write_text("1 (x) S 2 3 3 0")
    assert keeper.parent_table(str(proc)) == {123: 45, 124: 1}


def test_the_real_table_holds_this_process_under_its_parent():
    table = keeper.parent_table()
    assert table[os.getpid()] == os.getppid()
    assert all(isinstance(p, int) and isinstance(pp, int) for p, pp in table.items())


def test_descendants_take_each_process_once_and_never_the_root_even_through_a_loop():
    # a table read while pids are reused may hold a loop: 10 -> 11 -> 12 -> 10
    table = {11: 10, 12: 11, 10: 12, 13: 12}
    assert keeper.descendants(10, table) == [11, 12, 13]
    assert keeper.descendants(99, table) == []


# ------------------------------------------------------------------------------- signals, kills and reaps
def test_signal_all_signals_each_and_skips_one_gone_or_not_ours(monkeypatch):
    sent = []

    def kill(pid, sig):
        if pid == 2:
            raise ProcessLookupError
        if pid == 3:
            raise PermissionError
        sent.append((pid, sig))

    monkeypatch.setattr(keeper.os, "kill", kill)
    keeper.signal_all([1, 2, 3, 4], signal.SIGKILL)
    assert sent == [(1, signal.SIGKILL), (4, signal.SIGKILL)]


@alone
def test_kill_tree_kills_every_descendant_and_reaps_its_own_children_with_their_status(tmp_path):
    pid_file = tmp_path / "grandchild"
    child = command(f"sleep 30 & echo $! > {pid_file}; exec sleep 30")
    grandchild = int(wait_for(pid_file))
    ended = keeper.kill_tree(os.getpid())
    assert [pid for pid, _ in ended] == [child.pid]  # the grandchild is its parent's to reap, not ours
    status = ended[0][1]
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    forget(child, status)
    deadline = time.monotonic() + 5.0
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(grandchild)
    assert keeper.descendants(os.getpid(), keeper.parent_table()) == []


@alone
def test_kill_tree_with_nothing_below_returns_nothing_at_once():
    t0 = time.monotonic()
    assert keeper.kill_tree(os.getpid()) == []
    assert time.monotonic() - t0 < 1.0


@alone
def test_reap_takes_what_ended_and_waits_no_longer_than_asked():
    done = subprocess.Popen(["sh", "-c", "exit 5"])
    t0 = time.monotonic()
    ended = keeper.reap(block_s=10.0)  # no child left once it is reaped: returns then, not at 10 s
    assert time.monotonic() - t0 < 5.0
    assert [(pid, os.WEXITSTATUS(s)) for pid, s in ended] == [(done.pid, 5)]
    forget(done, ended[0][1])
    running = subprocess.Popen(["sleep", "30"])
    try:
        t0 = time.monotonic()
        assert keeper.reap(block_s=0.3) == []  # one child, still running: waited for the 0.3 s, then none
        assert 0.3 <= time.monotonic() - t0 < 5.0
        t0 = time.monotonic()
        assert keeper.reap() == []  # by default it does not wait at all
        assert time.monotonic() - t0 < 0.9
    finally:
        running.kill()
        running.wait()


def test_prctl_says_whether_the_kernel_took_it():
    # setting this process's (unset) death signal and subreaper flag to 0 changes nothing, and the kernel takes
    # both; the neighbouring options (GET: a pointer) or an unknown one it refuses
    assert keeper._prctl(keeper.PR_SET_PDEATHSIG, 0) is True
    assert keeper._prctl(keeper.PR_SET_CHILD_SUBREAPER, 0) is True
    assert keeper._prctl(-1, 0) is False
    assert (keeper.PR_SET_PDEATHSIG, keeper.PR_SET_CHILD_SUBREAPER) == (1, 36)  # <linux/prctl.h>


def test_become_subreaper_asks_the_kernel_for_it(monkeypatch):
    asked = []
    monkeypatch.setattr(keeper, "_prctl", lambda option, value: asked.append((option, value)) or True)
    assert keeper.become_subreaper() is True
    assert asked == [(36, 1)]


def test_prctl_where_there_is_none_is_false(monkeypatch):
    import ctypes

    def no_libc(*a, **k):
        raise OSError("no libc")

    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    assert keeper._prctl(keeper.PR_SET_PDEATHSIG, 0) is False


# ------------------------------------------------------------------------------ the wait and stop signals
def test_the_wait_gives_the_command_s_own_status_when_nothing_stops_it():
    child = command("exit 3")
    status = keeper._wait(child.pid, [], 30.0, signal.SIGKILL, os.getppid())
    forget(child, status)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 3


def test_the_first_stop_signal_is_passed_on_to_the_command_as_it_came():
    child = command("exec sleep 30")
    status = keeper._wait(child.pid, [signal.SIGINT], 30.0, signal.SIGTERM, os.getppid())
    forget(child, status)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGINT


def test_once_aorta_is_gone_the_command_gets_its_death_signal_instead():
    child = command("exec sleep 30")
    not_my_parent = os.getpid()  # the keeper's parent is no longer the aorta that started it
    status = keeper._wait(child.pid, [signal.SIGINT], 30.0, signal.SIGTERM, not_my_parent)
    forget(child, status)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM


def test_the_signal_reaches_the_command_s_whole_group(tmp_path):
    pid_file = tmp_path / "member"
    child = command(f"sleep 30 & echo $! > {pid_file}; wait")
    member = int(wait_for(pid_file))
    status = keeper._wait(child.pid, [signal.SIGTERM], 30.0, signal.SIGKILL, os.getppid())
    forget(child, status)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
    deadline = time.monotonic() + 5.0
    while alive(member) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(member)


def test_a_command_that_ignores_the_stop_signal_is_killed_when_the_grace_ends(tmp_path):
    ready = tmp_path / "ready"
    child = command(f"trap '' INT; echo ok > {ready}; exec sleep 30")
    wait_for(ready)
    t0 = time.monotonic()
    status = keeper._wait(child.pid, [signal.SIGINT], 0.4, signal.SIGTERM, os.getppid())
    forget(child, status)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert 0.4 <= time.monotonic() - t0 < 10.0


@pytest.mark.parametrize(
    "got", [[signal.SIGINT, signal.SIGINT], [signal.SIGUSR1]], ids=["second-stop", "kill-now"]
)
def test_a_second_stop_signal_or_sigusr1_kills_the_tree_at_once(tmp_path, got):
    ready = tmp_path / "ready"
    child = command(f"trap '' INT USR1; echo ok > {ready}; exec sleep 30")
    wait_for(ready)
    t0 = time.monotonic()
    status = keeper._wait(child.pid, got, 30.0, signal.SIGTERM, os.getppid())
    forget(child, status)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert time.monotonic() - t0 < 10.0  # not the 30 s grace


def test_a_signal_that_comes_while_waiting_is_passed_on_then():
    child = command("exec sleep 30")
    got: list[int] = []
    timer = threading.Timer(0.3, lambda: got.append(signal.SIGHUP))  # as the keeper's handler notes one
    timer.start()
    try:
        status = keeper._wait(child.pid, got, 30.0, signal.SIGTERM, os.getppid())
    finally:
        timer.cancel()
    forget(child, status)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGHUP


def test_passing_on_to_a_group_gone_is_no_error():
    child = command("exit 0")
    child.wait()
    keeper._pass_on(child.pid, signal.SIGTERM)  # no such group any more


def test_kill_tree_goes_round_until_nothing_is_left_and_keeps_every_round_s_reaped(monkeypatch):
    """A process may fork while the first ones die (and, the keeper being a subreaper, its orphans come back to
    it): each round reads the table again, kills what it finds, reaps for 50 ms; every reaped one is returned."""
    me = 100
    tables = [{5: me, 6: 5}, {7: me}, {}]  # round 1: a child and its child; round 2: one forked meanwhile
    reaped = [[(5, 9)], [(7, 9)], [(6, 9)]]  # the last: reaped once no descendant is left
    killed, blocks = [], []
    monkeypatch.setattr(keeper, "parent_table", lambda: tables.pop(0))
    monkeypatch.setattr(keeper, "signal_all", lambda pids, sig: killed.append((list(pids), sig)))

    def reap(block_s=0.0):
        blocks.append(block_s)
        return reaped.pop(0)

    monkeypatch.setattr(keeper, "reap", reap)
    assert keeper.kill_tree(me) == [(5, 9), (7, 9), (6, 9)]
    assert killed == [([5, 6], signal.SIGKILL), ([7], signal.SIGKILL)]
    assert blocks == [0.05, 0.05, 0.0]


def test_kill_tree_gives_up_after_its_rounds(monkeypatch):
    monkeypatch.setattr(keeper, "parent_table", lambda: {5: 100})  # one that never dies
    rounds = []
    monkeypatch.setattr(keeper, "signal_all", lambda pids, sig: rounds.append(list(pids)))
    monkeypatch.setattr(keeper, "reap", lambda block_s=0.0: [])
    assert keeper.kill_tree(100, rounds=3) == []
    assert rounds == [[5], [5], [5]]
    rounds.clear()
    keeper.kill_tree(100)
    assert len(rounds) == 50


def test_prctl_passes_its_value_the_subreaper_flag_set_and_put_back():
    import ctypes

    def subreaper() -> int:
        v = ctypes.c_int(-1)
        ctypes.CDLL(None).prctl(37, ctypes.byref(v), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
        return v.value

    assert subreaper() == 0
    try:
        assert keeper._prctl(keeper.PR_SET_CHILD_SUBREAPER, 1) is True
        assert subreaper() == 1
    finally:
        keeper._prctl(keeper.PR_SET_CHILD_SUBREAPER, 0)
    assert subreaper() == 0


def _wait_in_thread(child, got, grace_s):
    """``_wait`` with a watchdog: a wait that lost the command's status would never return."""
    out = []
    t = threading.Thread(
        target=lambda: out.append(keeper._wait(child.pid, got, grace_s, signal.SIGTERM, os.getppid()))
    )
    t.daemon = True
    t.start()
    t.join(15.0)
    if not out:
        child.kill()
        child.wait()
    assert out, "the keeper's wait lost the command's status (killed and reaped in one look, then dropped)"
    return out[0]


@pytest.mark.parametrize(
    ("got", "grace_s"),
    [([signal.SIGUSR1, signal.SIGUSR1], 30.0), ([signal.SIGINT, signal.SIGINT], 0.0)],
    ids=["two-kills-in-one-look", "second-stop-and-grace-in-one-look"],
)
def test_a_command_killed_and_reaped_by_the_first_of_two_kills_in_one_look_is_still_seen_ended(
    tmp_path, got, grace_s
):
    ready = tmp_path / "ready"
    child = command(f"trap '' INT USR1; echo ok > {ready}; exec sleep 30")
    wait_for(ready)
    status = _wait_in_thread(child, got, grace_s)
    forget(child, status)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
