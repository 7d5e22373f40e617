"""Warm ranks for ``aorta torchrun``: one server per node imports torch once and forks each rank, before CUDA.

A torchrun run's ranks each pay an interpreter, torch's import, torch.distributed's and FSDP's first use, and an
interpreter's teardown before and after their few timed steps (docs/fsdp.md, "A gate's lean run, and where a run's
wall goes"). With ``$AORTA_RANK_START=fork`` the launcher (``aorta.launch.torchrun``) starts this server before
torchrun, and torchrun starts stubs (``aorta.processes.warm_rank``) that ask it for their rank: for each stub the
server forks a child that takes the stub's environment, folder, stdout and stderr, and runs the rank
(``rank_exit.main``). The child makes its own CUDA context, process group and NCCL communicators, as a process
started from nothing does: the server never touches the GPU (it refuses to fork once CUDA is initialised, as the
gate's fork server does: ``aorta.processes.fork_server``, whose preload this one extends).

Lifetimes: each child runs in a session of its own and dies with the server (``PR_SET_PDEATHSIG``); the server
kills a child whose stub's connection closes (torchrun's SIGKILL of a stub after its grace time); the server dies
with the launcher. Several nodes: each node's launcher starts its own server.

Protocol: a listening Unix socket of packets (``SOCK_SEQPACKET``); a stub sends one JSON request
(``{"argv", "env", "cwd"}``) with its stdout and stderr (``socket.send_fds``); the server answers ``{"pid": N}``
once forked (or ``{"error": ...}``) and ``{"pid": N, "status": S}`` when the child has ended (S as
``Popen.returncode``: negative for a signal).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence

from aorta.processes import fork_server
from aorta.processes.parent_death import die_with_parent

# What each rank of an FSDP run imports before its first step, none of it a pytest plugin and none touching CUDA.
PRELOAD = ("torch.distributed", "torch.distributed.fsdp", "torch.profiler")
READY_TIMEOUT_S = 120.0
MAX_MESSAGE = 1 << 20
POLL_S = 0.05
REQUEST_TIMEOUT_S = 10.0


class RankServerError(RuntimeError):
    """The server could not start: the launcher starts the ranks from nothing instead."""


class RankServer:
    """The launcher's handle on one server (``python -m aorta.processes.rank_server PATH FD``)."""

    def __init__(self, path: str, env: Mapping[str, str], cwd: str) -> None:
        self.path = path
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(  # a session of its own; dies with the launcher, its children with it
            [sys.executable, "-m", "aorta.processes.rank_server", path, str(child_end.fileno())],
            env=dict(env),
            cwd=cwd,
            pass_fds=(child_end.fileno(),),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent(),
        )
        child_end.close()
        ready, _, _ = select.select([parent_end], [], [], READY_TIMEOUT_S)
        answer = json.loads(parent_end.recv(MAX_MESSAGE) or b"{}") if ready else {}
        parent_end.close()
        if not answer.get("ready"):
            self.close()
            raise RankServerError(f"the rank server did not start ({answer.get('error', 'no answer')})")
        self.import_s = float(answer.get("import_s", 0.0))

    def close(self) -> None:
        """End the server; a rank still running dies with it."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()


# ------------------------------------------------------------------------------ the gate's and aorta ab's runs
_SERVERS: dict[tuple, tuple[RankServer, str]] = {}
TORCHRUN = ("-m", "torch.distributed.run")


def warm_torchrun(
    cmd: Sequence[str], env: Mapping[str, str], cwd: str
) -> tuple[list[str], dict[str, str]] | None:
    """A gate's or ``aorta ab``'s run ``<this python> -m torch.distributed.run ... -m pytest ARGS`` with warm ranks,
    where ``$AORTA_RANK_START`` is ``fork``: (the command with the stub in place of pytest, the environment naming
    the server); the server is started on first use for that environment and folder and kept for the next runs.
    None: the run starts its ranks from nothing (another command, exec, or a server that could not start)."""
    from aorta.processes import warm_rank

    if (
        warm_rank.start_mode(env) != "fork"
        or list(cmd[:1]) != [sys.executable]
        or tuple(cmd[1:3]) != TORCHRUN
    ):
        return None
    at = next((i for i in range(3, len(cmd) - 1) if (cmd[i], cmd[i + 1]) == ("-m", "pytest")), None)
    if at is None:
        return None
    base = fork_server.server_env(env)
    key = (cwd, tuple(sorted(base.items())))
    if key not in _SERVERS or _SERVERS[key][0].proc.poll() is not None:
        folder = tempfile.mkdtemp(prefix="aorta-ranks-")
        try:
            _SERVERS[key] = (RankServer(os.path.join(folder, "ranks.sock"), base, cwd), folder)
        except RankServerError:
            shutil.rmtree(folder, ignore_errors=True)
            return None
        if len(_SERVERS) == 1:
            atexit.register(close_servers)
    server, folder = _SERVERS[key]
    codes = tempfile.mkdtemp(prefix="run-", dir=folder)  # the ranks' exit codes (aorta.processes.rank_exit)
    warm = [*cmd[:at], "-m", "aorta.processes.warm_rank", codes, *cmd[at + 2 :]]
    return warm, {**env, warm_rank.SERVER_ENV: server.path}


def close_servers() -> None:
    while _SERVERS:
        _, (server, folder) = _SERVERS.popitem()
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------------------------- the server
def _preload() -> float:
    import importlib

    t0 = time.perf_counter()
    fork_server._preload()  # numpy, scipy, torch, py-cpuinfo's answer kept
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    return time.perf_counter() - t0


def serve(path: str, ready_fd: int) -> int:
    ready = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=ready_fd)
    try:
        import_s = _preload()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listener.bind(path)
        listener.listen(128)
    except Exception as exc:
        ready.send(json.dumps({"ready": False, "error": f"{type(exc).__name__}: {exc}"}).encode())
        return 1
    ready.send(json.dumps({"ready": True, "import_s": round(import_s, 3)}).encode())
    ready.close()
    ranks: dict[int, socket.socket | None] = {}  # pid -> its stub's connection (None once the stub left)
    while True:
        conns = [c for c in ranks.values() if c is not None]
        readable, _, _ = select.select([listener, *conns], [], [], POLL_S)
        for sock in readable:
            if sock is listener:
                _accept(listener, ranks)
            elif not sock.recv(MAX_MESSAGE):  # the stub is gone (killed): its rank goes too
                pid = next(p for p, c in ranks.items() if c is sock)
                _kill(pid)
                sock.close()
                ranks[pid] = None
        _reap(ranks)


def _accept(listener: socket.socket, ranks: dict[int, socket.socket | None]) -> None:
    conn, _ = listener.accept()
    conn.settimeout(
        REQUEST_TIMEOUT_S
    )  # a stub sends its request at once: a silent one holds no other rank up
    try:
        data, fds, _, _ = socket.recv_fds(conn, MAX_MESSAGE, 2)
    except OSError:
        conn.close()
        return
    conn.settimeout(None)
    if fork_server._cuda_initialized() or len(fds) != 2 or not data:
        _send(
            conn,
            {"error": "CUDA was initialised in the rank server" if len(fds) == 2 else "no stdout, stderr"},
        )
        for f in fds:
            os.close(f)
        conn.close()
        return
    request = json.loads(data)
    pid = fork_server.fork_run([listener, *ranks.values(), conn], functools.partial(_child, request, fds))
    for f in fds:
        os.close(f)
    _send(conn, {"pid": pid})
    ranks[pid] = conn


def _reap(ranks: dict[int, socket.socket | None]) -> None:
    while ranks:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = ranks.pop(pid, None)
        if conn is not None:
            try:
                _send(conn, {"pid": pid, "status": fork_server._returncode(status)})
            except OSError:
                pass
            conn.close()


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)  # the rank's session: anything it started goes too
    except (ProcessLookupError, PermissionError):
        pass


def _send(sock: socket.socket, message: dict) -> None:
    sock.send(json.dumps(message).encode())  # one packet


def _child(request: dict, fds: list[int], preexec) -> None:
    """In the forked child: the stub's stdout and stderr, folder and environment, then the rank
    (``fork_server.forked_child``: a session of its own, death with the server; never returns)."""

    def rank() -> int:
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for f in (devnull, *fds):
            os.close(f)
        fork_server.take_request(request)
        threads = os.environ.get("OMP_NUM_THREADS", "")
        if threads.isdigit() and int(threads) > 0:  # torch read it at import, in the server
            import torch

            torch.set_num_threads(int(threads))
        from aorta.processes import rank_exit

        return rank_exit.main(list(request["argv"]))

    fork_server.forked_child(preexec, rank)


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1], int(sys.argv[2])))
