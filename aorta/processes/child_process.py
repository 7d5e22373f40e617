"""A child process that dies with its parent, and how a child ended, in words (pure: no torch).

The gate's fresh-run children (``aorta.gate.runs.fresh_runs``) and ``aorta torchrun``'s torchrun hold GPUs: a
parent killed outright (SIGKILL, the OOM killer, SIGHUP from a closed terminal, SIGTERM from a CI cancel) must
not leave them running (issue 38, cases 6 and 7). On Linux the kernel sends the child ``PR_SET_PDEATHSIG``'s
signal when the parent dies; the child checks once it is set that the parent is still the one that started it
(a parent that died before that point would otherwise be missed). Elsewhere nothing is set.

A child ended by a signal has a negative ``returncode`` (``-9``): as an exit status that is ``128 + 9 = 137``, as
a shell gives it (passed on raw, ``-9`` would read 247), and the line says "killed by signal 9 (SIGKILL)"
(issue 38, case 9).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator

from aorta.processes import fork_server
from aorta.processes.parent_death import SIGNAL_BASE
from aorta.processes.process_tree import (  # noqa: F401  (start_child, end_tree: imported from here too)
    _LIVE,
    KEEPER_PYTHON,
    STOP_GRACE_S,
    end_tree,
    kill_now,
    start_child,
)
from aorta.record.child_status import DONE_ENV, read_done

_ENDED: list[int] = []  # children end_tree ended while still running (a stop line counts them)


def end_children(grace_s: float = STOP_GRACE_S) -> int:
    """End the tree of every child still running, the runs before the fork servers that forked them (a server
    ended first would kill its run outright, without its grace); how many runs and commands there were."""
    live = [p for p in list(_LIVE.values()) if p.poll() is None]
    live.sort(key=lambda p: getattr(p, "is_server", False))
    for proc in live:
        end_tree(proc, grace_s)
    _LIVE.clear()
    fork_server.close_servers()
    return sum(1 for p in live if not getattr(p, "is_server", False))


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_STOPPING: list[int] = []  # the signal that stopped this command, once one has: later ones are ignored
# A block that must finish once begun (a baseline's save): a stop signal meanwhile is held until its end, and
# the stop line then says what the block did (issue 65: "stopped" was said though the baseline was updated).
_HELD: list[int] = []
_HOLDING: list[Callable[[], str]] = []


class Stop(BaseException):
    """The command got SIGINT, SIGTERM or SIGHUP (``children_end_on_signals``)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"stopped by {signal_name(signum)}")


def _raise_stop(signum: int, frame: object) -> None:
    if _STOPPING:  # a second Ctrl-C while the first one's children end: the first one's stop goes on
        return
    _STOPPING.append(signum)
    raise Stop(signum)


def stop_line(who: str, signum: int) -> tuple[int, str]:
    """(exit status, the one line a stopped command prints): its children's trees ended first."""
    ended_n = end_children() + len(_ENDED)
    _ENDED.clear()
    trees = f"; {ended_n} child process tree(s) ended" if ended_n else ""
    return (
        SIGNAL_BASE + signum,
        f"{who}: stopped by {signal_name(signum)}{trees}; exit {SIGNAL_BASE + signum}",
    )


def run_until_stopped(who: str, body: Callable[[], int]) -> int:
    """``body()``, with SIGINT, SIGTERM and SIGHUP ending every child's tree and then the command, with
    128 + N and one line on stderr (no traceback); a second signal while the first one's children end is
    ignored. A signal ignored when it began stays ignored (``nohup``)."""
    import threading

    previous = {}
    _ENDED.clear()
    _STOPPING.clear()
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                previous[sig] = signal.signal(sig, _raise_stop)
    try:
        try:
            return body()
        except Stop as exc:
            signum = exc.signum
        except KeyboardInterrupt:
            signum = signal.SIGINT
        _STOPPING[:] = [signum]  # from here on, the stop is under way: further signals are ignored
        code, line = stop_line(who, signum)
        print(line, file=sys.stderr, flush=True)
        return code
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _STOPPING.clear()


def exit_on_stop_signals(who: str) -> dict:
    """For a command that runs inside pytest (the gate), where SIGTERM and SIGHUP would end the process at once
    and Ctrl-C would end in pytest's KeyboardInterrupt banner and a gate that judges what had run: each stop
    signal ends every child's tree, prints one line and exits 128 + N (a second one, meanwhile, is ignored).
    Only where the signal has its default handler (a handler someone else set, ``run_until_stopped``'s, is
    kept). Returns the handlers replaced, for ``restore_signals``."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}

    def stop(signum: int, frame: object) -> None:
        if _STOPPING:
            return
        if _HOLDING:  # a save under way: it ends first, then this stop (held_stop)
            _HELD[:] = _HELD or [signum]
            return
        _STOPPING.append(signum)
        code, line = stop_line(who, signum)
        print(line, file=sys.stderr, flush=True)
        os._exit(code)

    _STOP_WHO[:] = [who, stop]

    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    return {
        sig: signal.signal(sig, stop)
        for sig in STOP_SIGNALS
        if signal.getsignal(sig) is defaults.get(sig, signal.SIG_DFL)
    }


_STOP_WHO: list = []  # (who, the handler) of the stop exit_on_stop_signals set, for held_stop


@contextlib.contextmanager
def held_stop(outcome: Callable[[], str]) -> Iterator[None]:
    """A block a stop signal does not cut in two (a baseline's save: its file is replaced whole or not at all,
    and the line must say which): a stop that comes meanwhile is acted on at the block's end, its line ending
    with ``outcome()`` ("baseline 'x' saved: it changed"). Where no stop handler of ``exit_on_stop_signals`` is
    set, the block just runs."""
    _HOLDING.append(outcome)
    try:
        yield
    finally:
        _HOLDING.remove(outcome)
        if _HELD and not _HOLDING and _STOP_WHO:
            signum = _HELD.pop()
            who, _ = _STOP_WHO
            _STOPPING.append(signum)
            code, line = stop_line(who, signum)
            print(f"{line}; {outcome()}", file=sys.stderr, flush=True)
            os._exit(code)


def restore_signals(previous: dict) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def exit_status(returncode: int) -> int:
    """A ``Popen.returncode`` as an exit status: ``-N`` (ended by signal N) is ``128 + N``."""
    return SIGNAL_BASE - returncode if returncode < 0 else returncode


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def ended(returncode: int) -> str:
    """How a child ended, in words: ``exit 1``, or ``killed by signal 9 (SIGKILL), exit 137``."""
    if returncode < 0:
        return f"killed by signal {-returncode} ({signal_name(-returncode)}), exit {exit_status(returncode)}"
    return f"exit {returncode}"


# A child still alive this long after it wrote its session's exit status (aorta/record/child_status.py) is
# killed and that status kept.
EXIT_GRACE_S = 30.0


def call_to_end(
    cmd,
    *,
    done_file: str,
    grace_s: float = EXIT_GRACE_S,
    poll_s: float = 0.25,
    who: str = "aorta gate",
    **popen,
) -> tuple[int, str]:
    """Run ``cmd`` (``start_child``) until it exits, or until ``grace_s`` after it wrote ``done_file``
    while still alive: then it is killed and the status it wrote is returned. Returns (raw returncode, note:
    "" or the sentence saying the child hung at exit)."""
    if os.path.exists(done_file):
        os.unlink(done_file)
    env = {**(popen.pop("env", None) or os.environ), DONE_ENV: done_file}
    proc = start_run(cmd, env, popen)
    previous = exit_on_stop_signals(who)
    try:
        return _wait_to_end(proc, done_file, grace_s, poll_s)
    finally:  # Ctrl-C or a stop signal while waiting: the child's tree does not outlive the wait
        restore_signals(previous)
        if proc.poll() is None:
            _ENDED.append(proc.pid)  # ended on the way out of a stopped command: its stop line counts it
            end_tree(proc)
        _LIVE.pop(proc.pid, None)


def start_run(cmd, env: dict, popen: dict):
    """A gate or ``aorta ab`` run: ``<this python> -m pytest ...`` writing to a log file is forked by the fork
    server of its environment (``aorta.processes.fork_server``) unless ``$AORTA_RUN_START`` is ``exec``; anything
    else, or a run the server cannot fork (the reason goes to the run's log), is a plain process. A torchrun run's
    ranks are forked by a rank server where ``$AORTA_RANK_START`` is ``fork`` (``aorta.processes.rank_server``)."""
    import subprocess

    from aorta.processes import rank_server

    warm = rank_server.warm_torchrun(cmd, env, str(popen.get("cwd") or os.getcwd()))
    if warm is not None:  # a torchrun run whose ranks a rank server forks ($AORTA_RANK_START=fork)
        cmd, env = warm
    args = fork_server.forkable(cmd)
    out = popen.get("stdout")
    forks = (
        args is not None
        and fork_server.start_mode(env) == "fork"
        and hasattr(out, "fileno")
        and popen.get("stderr") == subprocess.STDOUT
        and set(popen) <= {"stdout", "stderr", "cwd"}
    )
    if forks:
        assert args is not None and out is not None
        cwd = str(popen.get("cwd") or os.getcwd())
        try:
            out.flush()
            child = fork_server.server_for(env, cwd).start(args, env=env, cwd=cwd, out_fd=out.fileno())
        except fork_server.ForkServerError as exc:
            out.write(f"aorta: {exc}: this run starts as a process of its own\n")
            out.flush()
        else:
            _LIVE[child.pid] = child
            return child
    return start_child(cmd, env=env, **popen)


def _wait_to_end(proc, done_file: str, grace_s: float, poll_s: float) -> tuple[int, str]:
    import subprocess
    import time

    done_at = None
    while True:
        try:
            return proc.wait(timeout=poll_s), ""
        except subprocess.TimeoutExpired:
            pass
        if done_at is None and os.path.exists(done_file):
            done_at = time.monotonic()
        if done_at is not None and time.monotonic() - done_at > grace_s:
            status = read_done(done_file)
            kill_now(proc)
            if status is None:
                return proc.returncode, ""
            return status, (
                f"ended its session (exit {status}) but was still running {grace_s:.0f} s later (hung at exit): "
                "killed, its results kept"
            )
