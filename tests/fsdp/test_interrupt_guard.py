"""Ctrl-C ends a rank within seconds even where its main thread cannot run Python's handler (issue 24, case
15: under torchrun a rank blocked in a collective took 31 s, torchrun's SIGKILL timeout).

The ranks here start with SIGINT at its default even where this test command inherited it ignored (``cmd &``
in a script, as CI wrappers start it: Python then leaves SIGINT ignored and no Ctrl-C ever arrives), and are
killed in ``finally`` whatever happens (issue 38, case 10: six were found running 82 minutes later)."""

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from signal_defaults import default_stop_signals

REPO = Path(__file__).resolve().parents[2]

# A rank whose main thread never leaves (as one blocked in a collective whose peers are gone): it swallows
# every KeyboardInterrupt and goes on waiting.
STUCK = f"""
import sys, time
sys.path.insert(0, {str(REPO)!r})
from aorta.fsdp import interrupt_guard
assert interrupt_guard.install(grace_s=1.0)
ready = False
while True:
    try:
        if not ready:  # said inside the try: a Ctrl-C right after it is caught too
            ready = True
            print("ready", flush=True)
        time.sleep(100)
    except KeyboardInterrupt:
        pass
"""


@contextlib.contextmanager
def rank(script: str) -> Iterator[subprocess.Popen]:
    """A stand-in rank, ready for Ctrl-C; killed on the way out, whatever happened."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=default_stop_signals,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_rank_that_cannot_leave_ends_shortly_after_ctrl_c():
    with rank(STUCK) as proc:
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=20)
        assert code == 130 and time.monotonic() - t0 < 10  # grace 1 s; torchrun would have waited 30 s


def test_a_rank_that_can_leave_ends_as_before():
    with rank(STUCK.replace("        pass", "        sys.exit(2)")) as proc:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 2  # its own exit, not the guard's
