"""The keeper: one small process between aorta and each command it starts, so that the command's whole tree dies
with aorta, whatever the command starts beneath it (pure: stdlib only; run as a script, ``python -I keeper.py``).

A parent-death signal (``aorta.processes.parent_death``) reaches the direct child only, and a process group holds
only what did not move out of it: a wrapper script's ``setsid``, ``docker run``'s helpers or a daemonised
grandchild escaped both, and SIGKILL of ``aorta ab`` left them running, on a GPU holding the device (issue 56,
class 3). The keeper is a Linux *child subreaper* (``PR_SET_CHILD_SUBREAPER``): every orphan of the command's
tree is re-parented to it instead of to PID 1, so the tree stays the keeper's descendants, which it can list from
``/proc`` and end. It runs the command in a process group of its own and then:

* the command ends: whatever it left running is killed (SIGKILL) and reaped; the keeper exits with the
  command's status (ended by signal N, the keeper ends by signal N too: ``Popen.returncode`` stays ``-N``);
* SIGTERM, SIGINT or SIGHUP (``end_tree`` in ``aorta.processes.process_tree``, a forwarded Ctrl-C): passed on
  to the command's group, once (torchrun stops its ranks, ``docker run`` its container); the whole tree is killed
  when the command ends, or ``GRACE_S`` later if it has not;
* aorta dies, even by SIGKILL: the keeper's own death signal (SIGTERM) arrives; the command's group gets the
  command's death signal (``DIE_SIG``), the rest as above;
* SIGUSR1, or a second stop signal: the whole tree is killed now.

Usage: ``python -I keeper.py GRACE_S DIE_SIG PARENT_PID COMMAND...``.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterable, Mapping

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
KILL_NOW = signal.SIGUSR1
EXEC_FAILED = 127  # as a shell says of a command it could not run


def descendants(root: int, parents: Mapping[int, int]) -> list[int]:
    """Every process below ``root`` in a pid -> parent pid table, nearest first."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    todo = list(children.get(root, ()))
    while todo:
        pid = todo.pop(0)
        if pid in found or pid == root:
            continue
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def parent_table(proc: str = "/proc") -> dict[int, int]:
    """pid -> parent pid of every process, read from ``/proc/<pid>/stat`` (a process that ends meanwhile is left
    out)."""
    table = {}
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            with open(f"{proc}/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        table[int(name)] = int(fields[1])
    return table


def signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def kill_tree(root: int, rounds: int = 50) -> list[tuple[int, int]]:
    """SIGKILL every descendant of ``root`` (this process, a subreaper: orphans come back to it) and reap them,
    until none is left (a process may fork while the first ones die); (pid, wait status) of each reaped."""
    ended: list[tuple[int, int]] = []
    for _ in range(rounds):
        left = descendants(root, parent_table())
        if not left:
            break
        signal_all(left, signal.SIGKILL)
        ended += reap(block_s=0.05)
    return ended + reap()


def reap(block_s: float = 0.0) -> list[tuple[int, int]]:
    """Reap every child that has ended (within ``block_s``); (pid, wait status) of each."""
    ended: list[tuple[int, int]] = []
    deadline = time.monotonic() + block_s
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid:
            ended.append((pid, status))
            continue
        if time.monotonic() >= deadline:
            return ended
        time.sleep(0.01)


def _prctl(option: int, value: int) -> bool:
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """This process a child subreaper: orphans of its tree come back to it (Linux; False elsewhere)."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


POLL_S = 0.05  # how often the keeper looks for the command's end and for signals


def main(argv: list[str]) -> int:
    grace_s, die_sig, parent = float(argv[0]), int(argv[1]), int(argv[2])
    cmd = argv[3:]
    become_subreaper()
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    inherited = {sig: signal.getsignal(sig) for sig in STOPS}
    got: list[int] = []  # the signals the keeper was sent, in order (its handler only notes them)
    for sig in (*STOPS, KILL_NOW):
        if inherited.get(sig) is not signal.SIG_IGN:  # an ignored stop signal stays ignored (nohup)
            signal.signal(sig, lambda signum, frame: got.append(signum))
    me = os.getpid()
    child = os.fork()
    if child == 0:
        try:
            os.setpgid(0, 0)  # the command's group: end_tree's signal reaches the keeper, which passes it on
            for sig, handler in inherited.items():
                signal.signal(sig, signal.SIG_IGN if handler is signal.SIG_IGN else signal.SIG_DFL)
            signal.signal(KILL_NOW, signal.SIG_DFL)
            _prctl(PR_SET_PDEATHSIG, die_sig)
            if os.getppid() != me:
                os._exit(128 + die_sig)
            os.execvp(cmd[0], cmd)
        except OSError as exc:
            print(f"aorta: {cmd[0]}: cannot run: {exc.strerror or exc}", file=sys.stderr, flush=True)
        os._exit(EXEC_FAILED)
    try:
        os.setpgid(child, child)  # as the child does: whichever runs first
    except OSError:
        pass
    os.closerange(3, 1 << 16)  # pipes and sockets are the command's: they close when it ends, not the keeper
    if os.getppid() != parent:  # aorta died before the keeper's death signal was set
        got.append(signal.SIGTERM)
    status = _wait(child, got, grace_s, die_sig, parent)
    kill_tree(me)
    for sig in (*STOPS, KILL_NOW):
        signal.signal(sig, signal.SIG_DFL)
    if os.WIFSIGNALED(status):
        os.kill(me, os.WTERMSIG(status))  # ended as the command ended: Popen.returncode -N
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _wait(child: int, got: list[int], grace_s: float, die_sig: int, parent: int) -> int:
    """The command's wait status; stop signals passed on as they come (the tree killed at once on a second one
    or SIGUSR1, or ``grace_s`` after the first)."""
    me = os.getpid()
    deadline = None
    handled = 0
    while True:
        ended: list[tuple[int, int]] = []
        while handled < len(got):
            sig = got[handled]
            if sig == KILL_NOW or handled > 0:
                ended += kill_tree(me)
            else:
                _pass_on(child, die_sig if os.getppid() != parent else sig)
                deadline = time.monotonic() + grace_s
            handled += 1
        if deadline is not None and time.monotonic() >= deadline:
            ended += kill_tree(me)
        ended += reap()
        for pid, status in ended:
            if pid == child:
                return status
        time.sleep(POLL_S)


def _pass_on(child: int, sig: int) -> None:
    """``sig`` to the command's group only: the command stops what it started (torchrun its ranks, ``docker
    run`` its container) as it would at a terminal, each process getting the signal once; whatever it leaves,
    in its group or out of it, is killed when it ends or at the grace's end."""
    try:
        os.killpg(child, sig)
    except (ProcessLookupError, PermissionError):
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
