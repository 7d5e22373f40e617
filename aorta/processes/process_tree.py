"""Starting a child process under a keeper, and ending its whole tree (pure: stdlib; no torch).

``start_child`` is the one way aorta starts a process (``aorta.processes.child_process`` says who calls it and
what a stopped command does with the children it knows); ``aorta.processes.keeper`` is what runs above each
command on Linux. Kept apart from ``child_process`` so that the fork server, itself started here, needs nothing of
the stop handling that ends it.
"""

from __future__ import annotations

import os
import signal
import sys

from aorta.processes import keeper
from aorta.processes.parent_death import die_with_parent


def start_child(cmd, *, die_signal: int = signal.SIGKILL, **popen):
    """Every child process aorta starts (gate runs, ``aorta ab``, sweep cells, torchrun, the proof driver's runs,
    the fork servers) starts here (issue 46, class 2; issue 56, class 3): in a session of its own, under a keeper
    (``aorta.processes.keeper``, Linux) that is a subreaper for its whole tree, whatever the command starts beneath
    it, so that one ``end_tree`` ends the tree and nothing of it outlives this process, even killed by SIGKILL:
    the command gets ``die_signal`` and the rest of its tree SIGKILL. Known to ``end_children``, which a stopped
    command calls before it exits. Elsewhere the command itself, with its death signal where there is one.
    A command that cannot start raises ``OSError`` here, as ``subprocess.Popen`` does."""
    import subprocess

    if not KEEPER_PYTHON:
        proc = subprocess.Popen(cmd, start_new_session=True, preexec_fn=die_with_parent(die_signal), **popen)
        setattr(proc, "kept", False)  # noqa: B010  (Popen declares no such attribute)
    else:
        _check_runnable(str(cmd[0]), popen.get("env"), popen.get("cwd"))
        kept = [KEEPER_PYTHON, "-I", "-S", keeper.__file__, f"{STOP_GRACE_S - 2.0:g}", str(int(die_signal))]
        proc = subprocess.Popen([*kept, str(os.getpid()), *map(str, cmd)], start_new_session=True, **popen)
        setattr(proc, "kept", True)  # noqa: B010
    _LIVE[proc.pid] = proc
    return proc


def _keeper_python() -> str | None:
    """The interpreter that runs the keeper: this process's own binary (``sys.executable`` may be replaced,
    as tests do); None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return os.readlink("/proc/self/exe")
    except OSError:
        return None


KEEPER_PYTHON = _keeper_python()


def _check_runnable(program: str, env, cwd) -> None:
    """``OSError`` where ``program`` cannot be run (as ``Popen`` raises it for a command it starts itself)."""
    import errno
    import shutil

    if os.sep in program:
        path = program if os.path.isabs(program) else os.path.join(str(cwd or os.getcwd()), program)
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
        return
    search = (env if env is not None else os.environ).get("PATH", os.defpath)
    if shutil.which(program, path=search) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


_LIVE: dict = {}  # pid -> Popen of every child started by start_child and not yet ended
STOP_GRACE_S = 10.0  # a child's tree gets this long after SIGTERM before SIGKILL


def end_tree(proc, grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM to ``proc``'s whole process group (torchrun stops its ranks on it; a keeper passes it on to its
    command's tree), SIGKILL to what the child left in its group once it has ended; after ``grace_s`` the whole
    tree killed (a keeper's SIGUSR1, then SIGKILL). Waits for ``proc``."""
    import subprocess

    if proc.pid <= 0:  # never a group of this process's own (killpg(0) is this process's group)
        _LIVE.pop(proc.pid, None)
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace_s)
    except (ProcessLookupError, PermissionError):  # gone, or not ours to signal: still waited for below
        pass
    except subprocess.TimeoutExpired:
        kill_now(proc)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # what the child left behind in its group
    except (ProcessLookupError, PermissionError):
        pass
    if proc.poll() is None:
        proc.wait()
    _LIVE.pop(proc.pid, None)


KILL_NOW_WAIT_S = 5.0  # how long a keeper gets to kill its command's tree before it is killed itself


def kill_now(proc) -> None:
    """End ``proc``'s tree now: a keeper kills the command's whole tree (SIGUSR1), anything else is SIGKILLed with
    its group."""
    import subprocess

    if getattr(proc, "kept", False):
        proc.send_signal(keeper.KILL_NOW)
        try:
            proc.wait(timeout=KILL_NOW_WAIT_S)
            return
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()
