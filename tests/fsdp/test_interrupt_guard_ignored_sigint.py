"""tests/fsdp/test_interrupt_guard.py passes, and leaves no process behind, when the test command inherited
an ignored SIGINT (issue 38, case 10: ``cmd &`` in a script, as CI wrappers run the README's test command)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a shell's `cmd &` does to a non-interactive job


# The module's tests called directly (no pytest start-up: a second a run instead of fifteen).
CALL_THEM = f"""
import sys
sys.path[:0] = [{str(REPO / "tests" / "fsdp")!r}, {str(REPO / "tests")!r}]
import test_interrupt_guard as t
for name in sorted(n for n in dir(t) if n.startswith("test_")):
    getattr(t, name)()
print("passed", flush=True)
"""


def test_the_interrupt_guard_tests_pass_with_sigint_ignored_by_whoever_started_them():
    proc = subprocess.Popen(
        [sys.executable, "-c", CALL_THEM],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_ignore_sigint,
        start_new_session=True,  # its own group: whatever it started is killed with it below
    )
    try:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0 and out.endswith("passed\n"), out
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
