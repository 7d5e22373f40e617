"""The order a stopped command ends things in, and the second signal (aorta/processes/child_process.py, issue 58):
the runs before the fork servers that forked them (a server ended first kills its run outright), the servers not
counted as runs, every server closed; a second stop signal while the first one's children end is ignored, in
``run_until_stopped`` and in the gate's own handlers (``exit_on_stop_signals``), which take only the signals at
their defaults (SIGINT's is Python's ``default_int_handler``); and a torchrun run the rank server warms starts
as it says. In this process, with stand-ins for the children."""

from __future__ import annotations

import signal
import threading

import pytest

from aorta.processes import child_process


class Child:
    def __init__(self, pid: int, running: bool = True, server: bool = False) -> None:
        self.pid, self.running = pid, running
        if server:
            self.is_server = True

    def poll(self):
        return None if self.running else 0


@pytest.fixture
def ends(monkeypatch):
    order: list[tuple] = []
    before = dict(child_process._LIVE)  # children another test of this worker left registered are not these
    child_process._LIVE.clear()
    monkeypatch.setattr(child_process, "end_tree", lambda proc, grace_s: order.append((proc.pid, grace_s)))
    monkeypatch.setattr(child_process.fork_server, "close_servers", lambda: order.append(("servers closed",)))
    yield order
    child_process._LIVE.clear()
    child_process._LIVE.update(before)


def test_runs_are_ended_before_the_servers_that_forked_them_and_only_runs_are_counted(ends):
    for c in [Child(1, server=True), Child(2), Child(3, running=False), Child(4, server=True), Child(5)]:
        child_process._LIVE[c.pid] = c
    assert child_process.end_children(grace_s=2.5) == 2  # runs 2 and 5; 3 had ended; 1 and 4 are servers
    assert ends == [(2, 2.5), (5, 2.5), (1, 2.5), (4, 2.5), ("servers closed",)]
    assert child_process._LIVE == {}


def test_with_nothing_running_the_servers_are_still_closed(ends):
    assert child_process.end_children() == 0
    assert ends == [("servers closed",)]


def test_a_second_stop_signal_while_the_first_one_s_children_end_is_ignored(
    stop_signals_at_default, monkeypatch, capsys
):
    seen = []

    def end_children(grace_s=0.0):
        # a second Ctrl-C while the children end: the handler is still in place, and ignores it
        handler = signal.getsignal(signal.SIGINT)
        seen.append(handler(signal.SIGINT, None))
        seen.append(list(child_process._STOPPING))
        return 1

    monkeypatch.setattr(child_process, "end_children", end_children)

    def body():
        raise child_process.Stop(signal.SIGTERM)

    assert child_process.run_until_stopped("aorta ab", body) == 143
    assert seen == [None, [signal.SIGTERM]]
    assert (
        capsys.readouterr().err == "aorta ab: stopped by SIGTERM; 1 child process tree(s) ended; exit 143\n"
    )
    assert child_process._STOPPING == []  # the next command starts unstopped


def test_the_first_stop_signal_raises_and_is_remembered(stop_signals_at_default):
    child_process._STOPPING.clear()
    with pytest.raises(child_process.Stop) as exc:
        child_process._raise_stop(signal.SIGHUP, None)
    assert exc.value.signum == signal.SIGHUP and child_process._STOPPING == [signal.SIGHUP]
    assert child_process._raise_stop(signal.SIGINT, None) is None  # the second: ignored
    assert child_process._STOPPING == [signal.SIGHUP]


def test_a_stop_left_from_before_does_not_silence_the_next_command(stop_signals_at_default, monkeypatch):
    child_process._STOPPING[:] = [signal.SIGTERM]  # a command before this one was stopped
    monkeypatch.setattr(child_process, "end_children", lambda grace_s=0.0: 0)

    def body():
        signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)
        return 0

    assert child_process.run_until_stopped("aorta ab", body) == 143


class Exited(Exception):
    def __init__(self, code):
        self.code = code


def test_the_gate_s_handlers_take_only_signals_at_their_defaults_and_stop_once(
    stop_signals_at_default, monkeypatch, capsys
):
    def exit_(code):
        raise Exited(code)

    monkeypatch.setattr(child_process.os, "_exit", exit_)
    monkeypatch.setattr(child_process, "end_children", lambda grace_s=0.0: 2)
    mine = lambda signum, frame: None  # noqa: E731  (someone else's SIGHUP handler)
    signal.signal(signal.SIGHUP, mine)
    child_process._STOPPING.clear()
    previous = child_process.exit_on_stop_signals("aorta gate")
    try:
        assert previous == {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
        assert signal.getsignal(signal.SIGHUP) is mine
        stop = signal.getsignal(signal.SIGINT)
        assert stop is signal.getsignal(signal.SIGTERM) and stop is not signal.default_int_handler
        with pytest.raises(Exited) as exc:
            stop(signal.SIGINT, None)
        assert exc.value.code == 130
        assert (
            capsys.readouterr().err
            == "aorta gate: stopped by SIGINT; 2 child process tree(s) ended; exit 130\n"
        )
        assert stop(signal.SIGTERM, None) is None  # the second: ignored, no second line
        assert capsys.readouterr().err == ""
    finally:
        child_process.restore_signals(previous)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_an_ignored_sigint_is_not_taken(stop_signals_at_default):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    previous = child_process.exit_on_stop_signals("aorta gate")
    try:
        assert set(previous) == {signal.SIGTERM, signal.SIGHUP}
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        child_process.restore_signals(previous)


def test_off_the_main_thread_no_handler_is_set(stop_signals_at_default):
    got = []
    t = threading.Thread(target=lambda: got.append(child_process.exit_on_stop_signals("aorta gate")))
    t.start()
    t.join()
    assert got == [{}]


def test_a_torchrun_the_rank_server_warms_starts_as_it_says(monkeypatch, tmp_path):
    from aorta.processes import rank_server

    seen = {}
    monkeypatch.setattr(
        rank_server,
        "warm_torchrun",
        lambda cmd, env, cwd: seen.update(cwd=cwd) or (["warm", *cmd], {"W": "1"}),
    )
    monkeypatch.setattr(child_process, "start_child", lambda cmd, env, **popen: (cmd, env, popen))
    got = child_process.start_run(["torchrun", "x"], {"A": "1"}, {"cwd": str(tmp_path)})
    assert got == (["warm", "torchrun", "x"], {"W": "1"}, {"cwd": str(tmp_path)})
    assert seen == {"cwd": str(tmp_path)}
    monkeypatch.setattr(rank_server, "warm_torchrun", lambda cmd, env, cwd: None)
    monkeypatch.chdir(tmp_path)
    assert child_process.start_run(["sh"], {"A": "1"}, {}) == (["sh"], {"A": "1"}, {})
