"""Ctrl-C under torchrun ends every rank within seconds (issue 24: it took 31 s).

A rank blocked inside a collective (gloo or NCCL, in C++) when Ctrl-C comes cannot run Python's signal
handler until the collective returns, and it never returns once its peers have left: torchrun then waits its
30 s before SIGKILL. Here the C-level handler's wake-up byte (``signal.set_wakeup_fd``) is read by a
watcher thread, which needs no main thread: when the process has not ended ``GRACE_S`` after SIGINT (or
a SIGTERM that some handler catches), it ends it (``os._exit``). An uncaught SIGTERM ends the process at once. A rank that can still run Python ends normally before then, its
summary and files written as usual.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from aorta.exit_codes import EXIT_INTERRUPTED

GRACE_S = 5.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def install(grace_s: float = GRACE_S, code: int = EXIT_INTERRUPTED) -> bool:
    """Start the watcher (main thread only; once per process). False where it cannot be installed."""
    if threading.current_thread() is not threading.main_thread() or getattr(install, "done", False):
        return False
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except ValueError:
        os.close(r)
        os.close(w)
        return False
    if old != -1:  # someone else's wake-up fd (an event loop): leave it to them
        signal.set_wakeup_fd(old)
        os.close(r)
        os.close(w)
        return False

    def watch() -> None:
        while True:
            try:
                data = os.read(r, 64)
            except OSError:
                return
            if any(b in STOP_SIGNALS for b in data):
                time.sleep(grace_s)
                os._exit(code)  # still here: the main thread is stuck where no handler can run

    threading.Thread(target=watch, daemon=True, name="aorta-interrupt-guard").start()
    install.done = True  # type: ignore[attr-defined]
    return True
