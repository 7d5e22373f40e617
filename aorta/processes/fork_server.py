"""Cheap fresh runs: a server that imports torch once and forks each run before CUDA is initialised.

A gate's run is a fresh process so that each has its own CUDA context, allocator and launch path
(``aorta.gate.runs.fresh_runs``). Started from nothing, each run also pays the interpreter's start, torch's,
numpy's and scipy's imports and py-cpuinfo's probe (a subprocess of its own) before any benchmark: seconds of
every run that buy no sample. The server pays them once. For each run it forks a child that sets the run's
environment, working folder and log, then runs ``pytest`` there; the child makes its own CUDA context,
allocator and launch path exactly as a process started from nothing does, because the server never touches the
GPU (it refuses to fork once CUDA is initialised, and its imports stop at libraries that do not probe it).

What the server shares with its children and no fresh process would: the modules it imported (not aorta's: a
child forgets them, and pytest imports aorta afresh as its plugin, assertions rewritten), the string
hash seed, and py-cpuinfo's answer (the same machine's CPU; read once). Each run records how it was started
(``START_KEY`` in its run record, ``aorta.gate.runs.blocks``).

Used only for ``<this python> -m pytest ...`` (gate runs, ``aorta ab`` sides that run this Python), one server
per environment (``aorta ab``'s sides differ); anything else, and ``AORTA_RUN_START=exec``, starts a plain
process. Each server and each child runs in a session of its own and dies with its parent
(``aorta.processes.child_process``).

The protocol is one Unix socket pair of packets (``SOCK_SEQPACKET``: a message is one packet): the parent sends a JSON request with the log's file descriptor
(``socket.send_fds``); the server answers ``{"pid": N}`` once forked and ``{"pid": N, "status": S}`` when the
child has ended (S as ``Popen.returncode``: negative for a signal).
"""

from __future__ import annotations

import functools
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence

from aorta.processes import keeper
from aorta.processes.parent_death import die_with_parent

START_ENV = "AORTA_RUN_START"  # "fork" (default) or "exec": how a gate or ab run's process is made
STARTS = ("fork", "exec")
START_KEY = "AORTA_RUN_STARTED"  # set in a forked child: "fork"; the run record reads it (blocks.run_record)
PER_RUN_KEYS = ("AORTA_FRESH_RUN", "AORTA_CHILD_DONE_FILE", START_KEY)  # may differ run to run
# Imported once by the server: heavy, and none of them initialises CUDA or is a pytest plugin.
PRELOAD = ("numpy", "scipy.stats", "scipy.special", "torch", "cpuinfo")
READY_TIMEOUT_S = 120.0
MAX_MESSAGE = 1 << 20


class ForkServerError(RuntimeError):
    """The server could not start, or could not fork a run: the caller starts a plain process instead."""


def start_mode(environ: Mapping[str, str] | None = None) -> str:
    """``$AORTA_RUN_START``: ``fork`` (default) or ``exec``; anything else is a usage error naming it."""
    value = (os.environ if environ is None else environ).get(START_ENV, "").strip().lower() or "fork"
    if value not in STARTS:
        raise ValueError(
            f"{START_ENV}={value!r}: give one of {', '.join(STARTS)} (fork: each run forked from a server that "
            "imported torch once; exec: each run a process started from nothing)"
        )
    return value


def forkable(cmd: Sequence[str]) -> list[str] | None:
    """The pytest arguments of ``cmd`` when it is ``<this python> -m pytest ...``; None otherwise."""
    if len(cmd) >= 3 and cmd[0] == sys.executable and list(cmd[1:3]) == ["-m", "pytest"]:
        return list(cmd[3:])
    return None


def server_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment a server is started with: the run's, less what differs from run to run."""
    return {k: v for k, v in env.items() if k not in PER_RUN_KEYS}


# --------------------------------------------------------------------------------------------- the parent
class ForkedChild:
    """A run forked by the server, as much of ``subprocess.Popen`` as the gate uses (``pid``, ``poll``,
    ``wait``, ``kill``, ``returncode``): the server, its parent, reports its end."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self.server = server
        self.pid = pid
        self.returncode: int | None = None
        self.args = ["fork", str(pid)]

    def poll(self) -> int | None:
        if self.returncode is None:
            self.server._read_end(self, timeout=0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.server._read_end(self, timeout=timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return self.returncode

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass


class ForkServer:
    """One server process (``python -m aorta.processes.fork_server``) for runs of one environment and folder."""

    def __init__(self, env: Mapping[str, str], cwd: str) -> None:
        self.env, self.cwd = dict(env), cwd
        # a packet a message: one recv is one whole answer, never two run together or half of one
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = parent_end
        from aorta.processes.process_tree import start_child

        try:  # under a keeper, a session of its own; dies with this process, its children's trees with it
            self.proc = start_child(
                [sys.executable, "-m", "aorta.processes.fork_server", str(child_end.fileno())],
                env=self.env,
                cwd=cwd,
                pass_fds=(child_end.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        except BaseException:
            parent_end.close()
            raise
        finally:
            child_end.close()
        self.proc.is_server = True  # not a run: a stop line counts the runs it ended (end_children)
        try:  # a stop signal while the server imports: the server ends with the command
            ready = self._reply(READY_TIMEOUT_S)
        except BaseException:
            self.close()
            raise
        if not ready or not ready.get("ready"):
            self.close()
            raise ForkServerError(
                f"the fork server did not start ({(ready or {}).get('error', 'no answer')})"
            )
        self.import_s = float(ready.get("import_s", 0.0))

    def start(self, args: Sequence[str], *, env: Mapping[str, str], cwd: str, out_fd: int) -> ForkedChild:
        """Fork ``python -m pytest <args>`` with ``env``, in ``cwd``, its output to ``out_fd``."""
        request = json.dumps({"args": list(args), "env": dict(env), "cwd": cwd}).encode()
        try:
            socket.send_fds(self.sock, [request], [out_fd])
        except OSError as exc:
            raise ForkServerError(f"the fork server is gone ({exc})") from None
        answer = self._reply(READY_TIMEOUT_S)
        if not answer or "pid" not in answer:
            raise ForkServerError(
                f"the fork server could not fork ({(answer or {}).get('error', 'no answer')})"
            )
        return ForkedChild(self, int(answer["pid"]))

    def _reply(self, timeout: float | None) -> dict | None:
        if self.sock.fileno() < 0:  # closed: the server was ended, and its runs with it (``close``)
            return {"error": "the server ended"}
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            return None
        data = self.sock.recv(MAX_MESSAGE)
        return json.loads(data) if data else {"error": "the server ended"}

    def _read_end(self, child: ForkedChild, timeout: float | None) -> None:
        answer = self._reply(timeout)
        if answer is None:
            return
        if answer.get("pid") == child.pid and "status" in answer:
            child.returncode = int(answer["status"])
        elif "error" in answer:  # the server died under its child, which died with it (its death signal)
            child.returncode = -signal.SIGKILL

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """End the server and, with it, a run still running and whatever that run left (its keeper's tree)."""
        from aorta.processes.process_tree import end_tree

        self.sock.close()
        end_tree(self.proc, grace_s=CLOSE_GRACE_S)


CLOSE_GRACE_S = 5.0
_SERVERS: dict[tuple, ForkServer] = {}


def server_for(env: Mapping[str, str], cwd: str) -> ForkServer:
    """The live server for runs with ``env`` (less the per-run keys) in ``cwd``, started on first use."""
    base = server_env(env)
    key = (cwd, tuple(sorted(base.items())))
    server = _SERVERS.get(key)
    if server is None or not server.alive():
        server = _SERVERS[key] = ForkServer(base, cwd)
    return server


def close_servers() -> None:
    while _SERVERS:
        _, server = _SERVERS.popitem()
        server.close()


# --------------------------------------------------------------------------------------------- the server
def _preload() -> float:
    import importlib
    import warnings

    t0 = time.perf_counter()
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    try:  # py-cpuinfo probes the CPU in a subprocess of its own each call: once here, for every run
        import copy

        import cpuinfo

        info = cpuinfo.get_cpu_info()
        cpuinfo.get_cpu_info = lambda: copy.deepcopy(info)
    except Exception:
        pass
    # Python 3.12 warns on fork in a process with threads (numpy's BLAS pool: it restarts in the child)
    warnings.filterwarnings(
        "ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning
    )
    return time.perf_counter() - t0


def _cuda_initialized() -> bool:
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_initialized())
    except Exception:
        return False


def _send(sock: socket.socket, message: dict) -> bool:
    """One packet; False where the parent is gone (stopped meanwhile: the server ends without a word)."""
    try:
        sock.send(json.dumps(message).encode())
    except OSError:
        return False
    return True


def serve(fd: int) -> int:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=fd)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # stopped by any signal, it ends without a traceback
    keeper.become_subreaper()  # what a run leaves behind comes back to the server, which ends it
    try:
        import_s = _preload()
    except Exception as exc:  # the parent starts plain processes instead
        _send(sock, {"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        return 1
    if not _send(sock, {"ready": True, "import_s": round(import_s, 3)}):
        return 0
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 1)
        except OSError:
            return 0
        if not data:
            return 0  # the parent closed its end
        request = json.loads(data)
        refused = refusal(_cuda_initialized(), len(fds))
        if refused:
            _send(sock, {"error": refused})
            for f in fds:
                os.close(f)
            continue
        pid = fork_run([sock], functools.partial(_child, request, fds[0]))
        os.close(fds[0])
        if not _send(sock, {"pid": pid}):
            keeper.kill_tree(os.getpid())
            return 0
        _, status = os.waitpid(pid, 0)
        keeper.kill_tree(os.getpid())  # what the run left running (a daemon, an escaped grandchild)
        if not _send(sock, {"pid": pid, "status": _returncode(status)}):
            return 0


def refusal(cuda_initialized: bool, fds: int) -> str | None:
    """Why the server forks no run, or None: a child forked after CUDA was initialised inherits a CUDA context
    that does not work in it; a request without the log's descriptor has nowhere to write."""
    if cuda_initialized:
        return "CUDA was initialised in the server"
    if fds != 1:
        return "no output descriptor"
    return None


def _returncode(status: int) -> int:
    """A wait status as ``Popen.returncode`` gives it: the exit code, or minus the signal."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def fork_run(closing, child) -> int:
    """Fork one child from a server (a gate's run here, a rank in aorta/processes/rank_server.py): the server's
    buffered output written first (a child would write it again), the child's death with the server armed, the
    server's sockets (``closing``; None entries skipped) closed in the child, then ``child(preexec)``, which never
    returns. Returns the child's pid, in the server."""
    sys.stdout.flush()
    sys.stderr.flush()
    preexec = die_with_parent()  # made here: the child dies with this process, the server
    pid = os.fork()
    if pid == 0:
        for c in closing:
            if c is not None:
                c.close()
        child(preexec)
    return pid


def _child(request: dict, out_fd: int, preexec) -> None:
    """In the forked child: the run's output, folder and environment, then pytest (``forked_child``)."""

    def run() -> int:
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        os.close(out_fd)
        take_request(request)
        import pytest

        sys.argv = [pytest.__file__, *request["args"]]  # as `python -m pytest ARGS` has it
        return int(pytest.main(list(request["args"])))  # not console_main: deprecated in pytest 9.1

    forked_child(preexec, run)


def take_request(request: Mapping) -> None:
    """A forked child takes its request's folder and environment, and forgets aorta's modules (pytest imports
    aorta afresh, as its plugin, assertions rewritten)."""
    os.chdir(request["cwd"])
    for name in [n for n in sys.modules if n == "aorta" or n.startswith("aorta.")]:
        del sys.modules[name]
    os.environ.clear()
    os.environ.update({**request["env"], START_KEY: "fork"})


def forked_child(preexec, body) -> None:
    """The frame of a child forked by a server (a gate's run here, a torchrun rank in aorta/processes/rank_server.py):
    a session of its own, ``preexec`` (death with its server), the stop signals at their defaults, then ``body``,
    whose return is the exit code; ends as an interpreter exit would (threads joined, atexit run, streams
    flushed), with ``os._exit``: never returns."""
    code = 1
    try:
        os.setsid()
        if preexec is not None:
            preexec()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL if sig != signal.SIGINT else signal.default_int_handler)
        code = body()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            import atexit
            import threading

            threading._shutdown()  # type: ignore[attr-defined]  # as interpreter exit: threads joined
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


if __name__ == "__main__":
    sys.exit(serve(int(sys.argv[1])))
