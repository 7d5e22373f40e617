"""A child process that dies with its parent, and how a child ended, in words (pure: no torch).

The gate's fresh-run children (``aorta.gate.fresh_runs``) and ``aorta torchrun``'s torchrun hold GPUs: a
parent killed outright (SIGKILL, the OOM killer, SIGHUP from a closed terminal, SIGTERM from a CI cancel) must
not leave them running (issue 38, cases 6 and 7). On Linux the kernel sends the child ``PR_SET_PDEATHSIG``'s
signal when the parent dies; the child checks once it is set that the parent is still the one that started it
(a parent that died before that point would otherwise be missed). Elsewhere nothing is set.

A child ended by a signal has a negative ``returncode`` (``-9``): as an exit status that is ``128 + 9 = 137``, as
a shell gives it (passed on raw, ``-9`` would read 247), and the line says "killed by signal 9 (SIGKILL)"
(issue 38, case 9).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

from aorta.record.child_status import DONE_ENV, read_done

PR_SET_PDEATHSIG = 1
SIGNAL_BASE = 128  # a shell's exit status of a process ended by signal N: 128 + N


def die_with_parent(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A ``preexec_fn`` for ``subprocess`` that makes the child get ``sig`` when this process dies (Linux;
    None elsewhere). Called in the child between fork and exec."""
    if not sys.platform.startswith("linux"):
        return None
    parent = os.getpid()

    def preexec() -> None:
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # the parent died before the signal was set: nobody will send it
            os._exit(SIGNAL_BASE + int(sig))

    return preexec


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
    cmd, *, done_file: str, grace_s: float = EXIT_GRACE_S, poll_s: float = 0.25, **popen
) -> tuple[int, str]:
    """Run ``cmd`` (dying with this process) until it exits, or until ``grace_s`` after it wrote ``done_file``
    while still alive: then it is killed and the status it wrote is returned. Returns (raw returncode, note:
    "" or the sentence saying the child hung at exit)."""
    import subprocess
    import time

    if os.path.exists(done_file):
        os.unlink(done_file)
    env = {**(popen.pop("env", None) or os.environ), DONE_ENV: done_file}
    proc = subprocess.Popen(cmd, env=env, preexec_fn=die_with_parent(), **popen)
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
            proc.kill()
            proc.wait()
            if status is None:
                return proc.returncode, ""
            return status, (
                f"ended its session (exit {status}) but was still running {grace_s:.0f} s later (hung at exit): "
                "killed, its results kept"
            )
