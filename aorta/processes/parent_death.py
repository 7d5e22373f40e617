"""A child that dies with its parent (Linux's ``PR_SET_PDEATHSIG``), for every process aorta starts or forks
(pure: stdlib): ``aorta.processes.child_process`` and the fork server's children (``aorta.processes.fork_server``)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

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
