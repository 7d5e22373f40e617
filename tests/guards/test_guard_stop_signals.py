"""A command stopped by a signal (aorta/processes/child_process.py, issue 58), in this process: SIGTERM, SIGHUP
and Ctrl-C end every child's tree first and exit 128 + N with one line; a signal ignored when the command began
stays ignored (``nohup``); a handler someone else set is kept; each handler is put back afterwards; and a
child being waited for when the wait is interrupted does not outlive it. The slow tier stops real commands
(``tests/gate/test_children_end_on_signals.py``)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from aorta.processes import child_process

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")


@pytest.fixture
def ended(monkeypatch):
    calls: list[float] = []
    monkeypatch.setattr(child_process, "end_children", lambda grace_s=0.0: calls.append(grace_s) or 1)
    return calls


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_a_stop_signal_ends_the_children_then_the_command_with_128_plus_n_and_one_line(
    stop_signals_at_default, ended, capsys, sig, code
):
    def body() -> int:
        os.kill(os.getpid(), sig)
        time.sleep(5)  # the signal arrives before this ends
        return 0

    assert child_process.run_until_stopped("aorta ab", body) == code
    assert len(ended) == 1
    assert capsys.readouterr().err == (
        f"aorta ab: stopped by {signal.Signals(sig).name}; 1 child process tree(s) ended; exit {code}\n"
    )
    # the handlers are put back: SIGTERM ends a process again
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL


def test_a_body_that_ends_gives_its_own_code_and_says_nothing(stop_signals_at_default, ended, capsys):
    assert child_process.run_until_stopped("aorta ab", lambda: 10) == 10
    assert ended == [] and capsys.readouterr().err == ""


def test_a_signal_ignored_when_the_command_began_stays_ignored(stop_signals_at_default, ended):
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup starts it
    seen = {}

    def body() -> int:
        seen["hup"] = signal.getsignal(signal.SIGHUP)
        seen["term"] = signal.getsignal(signal.SIGTERM)
        return 0

    assert child_process.run_until_stopped("aorta ab", body) == 0
    assert seen["hup"] is signal.SIG_IGN
    assert seen["term"] is child_process._raise_stop
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN


def test_waiting_for_a_child_keeps_a_stop_handler_someone_else_set(stop_signals_at_default):
    def theirs(signum, frame):
        pass

    signal.signal(signal.SIGTERM, theirs)
    previous = child_process.exit_on_stop_signals("aorta gate")
    try:
        assert signal.getsignal(signal.SIGTERM) is theirs  # kept: run_until_stopped's, say
        assert signal.SIGTERM not in previous
        assert signal.getsignal(signal.SIGHUP) is not signal.SIG_DFL  # at its default: taken over
        assert previous[signal.SIGHUP] == signal.SIG_DFL  # (SIGINT is taken over too, from its default)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@linux_only
def test_a_wait_interrupted_by_ctrl_c_ends_the_childs_tree_on_the_way_out(tmp_path, monkeypatch):
    started = []
    real_start_run = child_process.start_run

    def start_run(cmd, env, popen):
        started.append(real_start_run(cmd, env, popen))
        return started[-1]

    def interrupted(proc, done_file, grace_s, poll_s):
        raise KeyboardInterrupt

    monkeypatch.setattr(child_process, "start_run", start_run)
    monkeypatch.setattr(child_process, "_wait_to_end", interrupted)
    child_process._ENDED.clear()
    with pytest.raises(KeyboardInterrupt):
        child_process.call_to_end(["sleep", "30"], done_file=str(tmp_path / "done"))
    (proc,) = started
    assert proc.poll() is not None  # ended, not left running
    assert child_process._ENDED == [proc.pid]  # the stop line counts it
    assert proc.pid not in child_process._LIVE
    assert not Path(f"/proc/{proc.pid}").exists() or proc.returncode is not None
    child_process._ENDED.clear()


def test_a_stale_done_file_is_removed_before_the_child_starts(tmp_path, monkeypatch):
    done = tmp_path / "done"
    done.write_text("0")  # an earlier run's
    seen = []

    def start_run(cmd, env, popen):
        seen.append(done.exists())
        raise RuntimeError("stop here")

    monkeypatch.setattr(child_process, "start_run", start_run)
    with pytest.raises(RuntimeError):
        child_process.call_to_end(["true"], done_file=str(done))
    assert seen == [False]


@pytest.mark.parametrize("ends", ["exits", "interrupted"])
def test_after_a_run_is_waited_for_the_stop_handlers_are_those_of_before(
    stop_signals_at_default, tmp_path, monkeypatch, ends
):
    """``call_to_end`` takes SIGTERM, SIGHUP and SIGINT over while it waits; after the run, ended or
    interrupted, each is what it was: a later SIGTERM ends the command as it would have, not through aorta's."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    if ends == "interrupted":

        def interrupted(proc, done_file, grace_s, poll_s):
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL  # taken over while waiting
            raise KeyboardInterrupt

        monkeypatch.setattr(child_process, "_wait_to_end", interrupted)
        with pytest.raises(KeyboardInterrupt):
            child_process.call_to_end(["sleep", "30"], done_file=str(tmp_path / "done"))
        child_process._ENDED.clear()
    else:
        assert child_process.call_to_end(["true"], done_file=str(tmp_path / "done")) == (0, "")
    assert {sig: signal.getsignal(sig) for sig in before} == before
