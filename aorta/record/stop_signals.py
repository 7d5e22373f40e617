"""SIGTERM and SIGHUP as an exception for the length of a block (pure: no torch).

Python's default for SIGTERM and SIGHUP ends the process at once: no ``finally`` runs, so a writer that builds
its output beside the target (a report's ``.<name>.tmp-*`` folder) leaves it there forever (issue 38, case 5).
Inside ``stop_signals_raise()`` they raise ``Stopped`` instead, as Ctrl-C raises ``KeyboardInterrupt``: the
clean-up runs and the command exits 130 (``EXIT_INTERRUPTED``), saying which signal stopped it.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(BaseException):
    """The process got SIGTERM or SIGHUP (a ``BaseException``: ``except Exception`` does not swallow it)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = signal.Signals(signum).name
        super().__init__(f"stopped by {self.name}")


def _raise(signum: int, frame: object) -> None:
    raise Stopped(signum)


@contextlib.contextmanager
def stop_signals_raise() -> Iterator[None]:
    """SIGTERM and SIGHUP raise ``Stopped`` inside the block (main thread only; elsewhere nothing changes).
    A signal that was ignored when the block began stays ignored (``nohup``)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for sig in SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            previous[sig] = signal.signal(sig, _raise)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
