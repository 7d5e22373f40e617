"""Ctrl-C ends a rank within seconds even where its main thread cannot run Python's handler (issue 24, case
15: under torchrun a rank blocked in a collective took 31 s, torchrun's SIGKILL timeout)."""

import signal
import subprocess
import sys
import time
from pathlib import Path

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


def test_a_rank_that_cannot_leave_ends_shortly_after_ctrl_c():
    proc = subprocess.Popen([sys.executable, "-c", STUCK], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=20)
    assert code == 130 and time.monotonic() - t0 < 10  # grace 1 s; torchrun would have waited 30 s


def test_a_rank_that_can_leave_ends_as_before():
    script = STUCK.replace("        pass", "        sys.exit(2)")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=20) == 2  # its own exit, not the guard's
