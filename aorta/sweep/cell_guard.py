"""Run one sweep cell's command and make it die with the sweep (run as a script: no aorta imports).

``python cell_guard.py SWEEP_PID -- CMD...``: the guard leads the cell's own session (process group), starts
CMD in it and waits. A sweep that ends normally stops the whole group itself; one killed outright (SIGKILL,
SIGHUP from a closed terminal, the OOM killer) cannot, so the guard watches its parent: once the sweep is
gone (the guard is re-parented), it stops the whole group, SIGTERM then SIGKILL, so no orphaned cell (under
torchrun: every rank, holding the GPUs) goes on running and later writes into a newer attempt's folder.
On Linux the kernel also sends the guard SIGTERM when the sweep dies (``PR_SET_PDEATHSIG``), so it acts at
once; elsewhere it notices within ``POLL_S``.

The guard's exit status is the command's (a command ended by a signal: the same signal ends the guard).
``SWEEP_PID`` 0: a keeper above the guard (``aorta.processes.keeper``, Linux) ends the cell's whole tree when
the sweep dies, and the guard only starts the command.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

POLL_S = 0.5
STOP_GRACE_S = 10.0  # after SIGTERM, before SIGKILL: torchrun forwards the signal to its ranks
_parent_gone = False


def _set_parent_death_signal() -> None:
    """Linux: SIGTERM to this process when its parent dies (best effort; polling covers the rest)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass


def _stop_group(child: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM to the whole group (the guard ignores it), SIGKILL to whatever is left once the command has
    ended or ``grace_s`` has passed (the guard included)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.killpg(os.getpgrp(), signal.SIGTERM)
        child.wait(timeout=grace_s)  # torchrun stops its ranks on SIGTERM
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    os.killpg(os.getpgrp(), signal.SIGKILL)


def main(argv: list[str]) -> int:
    sweep_pid = int(argv[0])
    cmd = argv[2:] if argv[1:2] == ["--"] else argv[1:]
    if sweep_pid:
        _set_parent_death_signal()

    def on_signal(signum, frame):
        """The sweep stops the whole group itself (the command got this signal too); the kernel's
        SIGTERM on the sweep's death is noted and acted on in the loop below."""
        global _parent_gone
        if sweep_pid and os.getppid() != sweep_pid:
            _parent_gone = True

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    if sweep_pid and os.getppid() != sweep_pid:  # the sweep died before the guard was ready
        return 1
    try:
        child = subprocess.Popen(cmd)
    except OSError as exc:  # not found, not executable (e.g. a --grid PATH=... hides it): say so, as a shell
        print(f"cannot start {cmd[0]!r}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        return 127  # EXIT_CANNOT_START (aorta/exit_codes.py): this script runs without aorta
    while True:
        try:
            code = child.wait(timeout=POLL_S)
            break
        except subprocess.TimeoutExpired:
            pass
        if _parent_gone or (sweep_pid and os.getppid() != sweep_pid):
            _stop_group(child, STOP_GRACE_S)
            return 1
    if code < 0:  # ended by a signal: end the same way, so the sweep sees what the command did
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
