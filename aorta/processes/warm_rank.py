"""One rank of ``aorta torchrun`` started warm: a stub that asks the node's rank server to fork the rank.

``python -m aorta.processes.warm_rank DIR PYTEST_ARGS...`` is what torchrun starts in place of
``aorta.processes.rank_exit`` when the launcher runs a rank server (``aorta.processes.rank_server``; ``$AORTA_RANK_START``
is ``fork``). The stub imports no torch (an interpreter's start, tens of ms): it sends the server its environment
(torchrun's ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``/``MASTER_PORT`` ...), its folder, its
arguments and its stdout and stderr, then waits. The server's child is the rank: its own process, CUDA context
and process group, made after the fork. The stub passes SIGINT, SIGTERM and SIGHUP on to it and ends as it
ended (its code, or its signal), so torchrun sees what it sees of a rank started from nothing. Where no server
answers, the stub runs the rank itself (``rank_exit.main``): a cold start.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

START_ENV = "AORTA_RANK_START"  # "exec" (default): ranks start from nothing; "fork": forked by a rank server
STARTS = ("exec", "fork")
SERVER_ENV = "AORTA_RANK_SERVER"  # the rank server's socket, set by the launcher for the stubs
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
MAX_MESSAGE = 1 << 20


def start_mode(environ) -> str:
    """``$AORTA_RANK_START``: ``exec`` (default) or ``fork``; anything else is a ``ValueError`` naming it."""
    value = environ.get(START_ENV, "").strip().lower() or "exec"
    if value not in STARTS:
        raise ValueError(
            f"{START_ENV}={value!r}: give one of {', '.join(STARTS)} (exec: each rank a process started from "
            "nothing; fork: each rank forked by a server that imported torch once, before CUDA)"
        )
    return value


def request(argv: list[str]) -> bytes:
    return json.dumps({"argv": list(argv), "env": dict(os.environ), "cwd": os.getcwd()}).encode()


def connect(path: str, argv: list[str]) -> tuple[socket.socket, int] | None:
    """The connection and the forked rank's pid; None where no server forked it (the reason on stderr)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(path)
        sys.stdout.flush()
        sys.stderr.flush()
        socket.send_fds(sock, [request(argv)], [1, 2])
        answer = json.loads(sock.recv(MAX_MESSAGE) or b'{"error": "the rank server ended"}')
    except (OSError, ValueError) as exc:
        answer = {"error": f"no rank server at {path} ({exc})"}
    if "pid" not in answer:
        sock.close()
        print(f"aorta: {answer.get('error')}: this rank starts from nothing", file=sys.stderr, flush=True)
        return None
    return sock, int(answer["pid"])


def wait(sock: socket.socket, pid: int) -> int:
    """Wait for the forked rank's end, passing stop signals on to it; its status (negative: its signal)."""

    def forward(sig: int, frame: object) -> None:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass

    for sig in FORWARDED:
        signal.signal(sig, forward)
    data = sock.recv(MAX_MESSAGE)  # retried after a signal's handler (PEP 475)
    if not data:
        return -signal.SIGKILL  # the server died, and its child with it
    return int(json.loads(data).get("status", 1))


def end_as(status: int) -> int:
    """Leave as the rank left: its exit code, or the same signal (so torchrun reports what it would)."""
    if status >= 0:
        return status
    sig = -status
    for s in FORWARDED:
        signal.signal(s, signal.SIG_DFL)
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    return 128 + sig


def main(argv: list[str]) -> int:
    path = os.environ.get(SERVER_ENV)
    got = connect(path, argv) if path else None
    if got is None:
        from aorta.processes import rank_exit

        return rank_exit.main(argv)
    sock, pid = got
    return end_as(wait(sock, pid))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
