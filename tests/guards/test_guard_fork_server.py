"""The fork server's guards at unit level (issue 58): the real ``serve`` loop on a socket pair in a thread, its
imports and its ``fork`` faked, and the parent's side of the protocol (``ForkServer.start``, ``ForkedChild``)
read from it. It refuses to fork once CUDA is initialised in it (the child would share the server's CUDA
context), refuses a request without its output descriptor, reports a run killed by signal N as ``-N`` (exit
128 + N), a server gone under its child as SIGKILL, and a run it could not fork starts as a plain process.
The slow tier runs real forked pytest runs (``tests/gate/test_fork_server.py``)."""

from __future__ import annotations

import gc
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import types
import warnings

import pytest

from aorta.processes import child_process, fork_server


class FakeOs:
    """``os`` for the server, with ``fork`` and ``waitpid`` scripted: no process is made."""

    def __init__(self, pid: int = 4242, status: int = 0, refuse: bool = False) -> None:
        self.pid, self.status, self.refuse = pid, status, refuse
        self.forks = 0

    def __getattr__(self, name):
        return getattr(os, name)

    def fork(self) -> int:
        self.forks += 1
        if self.refuse:
            raise AssertionError("the server forked")
        return self.pid  # the parent's side of a fork

    def waitpid(self, pid: int, options: int):
        assert (pid, options) == (self.pid, 0)  # blocks until the run ends: never WNOHANG
        return pid, self.status


class ChildReached(Exception):
    """Raised by a stand-in for the forked child's code (the real one never returns)."""


class Served:
    """``fork_server.serve`` running in a thread on one end of a socket pair; ``server`` is the parent's
    ``ForkServer`` on the other end (not started: no process)."""

    def __init__(self, monkeypatch, fake_os: FakeOs, *, cuda: bool = False, preload=lambda: 0.0) -> None:
        monkeypatch.setattr(fork_server, "_preload", preload)
        monkeypatch.setattr(fork_server, "_cuda_initialized", lambda: cuda)
        monkeypatch.setattr(fork_server, "os", fake_os)
        monkeypatch.setattr(fork_server, "READY_TIMEOUT_S", 5.0)  # a server that died answers no one
        # the server's own process settings (its signal dispositions, a subreaper) are for a process of its
        # own; served in a thread here, they are left out (signal.signal works in the main thread only)
        monkeypatch.setattr(fork_server.signal, "signal", lambda *a, **k: None)
        monkeypatch.setattr(fork_server.keeper, "become_subreaper", lambda *a, **k: None)
        parent_end, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.server_fd = server_end.detach()
        self.code: list[int] = []
        self.thread = threading.Thread(target=self._serve)
        self.thread.start()
        self.server = fork_server.ForkServer.__new__(fork_server.ForkServer)
        self.server.sock = parent_end
        self.ready = self.server._reply(5.0)

    def _serve(self) -> None:
        try:
            self.code.append(fork_server.serve(self.server_fd))
        except ChildReached:
            self.code.append("child")

    def close(self) -> None:
        self.server.sock.close()
        self.thread.join(5.0)
        assert not self.thread.is_alive(), "the server did not end when its parent closed the socket"
        forget_server_socket()


def forget_server_socket() -> None:
    """The server's socket is closed by its process's end, which a thread does not have: collected here, quietly."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


@pytest.fixture
def log(tmp_path):
    with open(tmp_path / "run.log", "w") as fh:
        yield fh


def test_the_server_refuses_to_fork_once_cuda_is_initialised_in_it(monkeypatch, log):
    fake = FakeOs(refuse=True)
    served = Served(monkeypatch, fake, cuda=True)
    assert served.ready == {"ready": True, "import_s": 0.0}
    try:
        with pytest.raises(fork_server.ForkServerError) as exc:
            served.server.start(["-q"], env={}, cwd=".", out_fd=log.fileno())
        assert str(exc.value) == "the fork server could not fork (CUDA was initialised in the server)"
        assert fake.forks == 0
    finally:
        served.close()
    assert served.code == [0]


def test_a_request_with_two_descriptors_takes_the_first_as_its_output(monkeypatch, log, tmp_path):
    served = Served(monkeypatch, FakeOs(pid=4242, status=0))
    try:
        with open(tmp_path / "other", "w") as other:
            request = json.dumps({"args": [], "env": {}, "cwd": "."}).encode()
            socket.send_fds(served.server.sock, [request], [log.fileno(), other.fileno()])
        assert served.server._reply(5.0) == {"pid": 4242}
    finally:
        served.close()


def test_a_request_without_its_output_descriptor_is_refused_and_not_forked(monkeypatch):
    fake = FakeOs(refuse=True)
    served = Served(monkeypatch, fake)
    try:
        served.server.sock.send(json.dumps({"args": [], "env": {}, "cwd": "."}).encode())
        assert served.server._reply(5.0) == {"error": "no output descriptor"}
        assert fake.forks == 0
    finally:
        served.close()


@pytest.mark.parametrize(
    ("status", "raw", "exit_status", "words"),
    [
        (signal.SIGTERM, -15, 143, "killed by signal 15 (SIGTERM), exit 143"),  # a wait status: signal 15
        (signal.SIGKILL, -9, 137, "killed by signal 9 (SIGKILL), exit 137"),
        (3 << 8, 3, 3, "exit 3"),  # a wait status: exit code 3
        (0, 0, 0, "exit 0"),
    ],
)
def test_a_forked_run_killed_by_signal_n_is_reported_as_minus_n_and_exits_128_plus_n(
    monkeypatch, log, status, raw, exit_status, words
):
    served = Served(monkeypatch, FakeOs(pid=4242, status=status))
    try:
        child = served.server.start(["-q", "t.py"], env={"A": "1"}, cwd=".", out_fd=log.fileno())
        assert isinstance(child, fork_server.ForkedChild) and child.pid == 4242
        assert child.wait(timeout=5.0) == raw
        assert (child_process.exit_status(child.returncode), child_process.ended(child.returncode)) == (
            exit_status,
            words,
        )
    finally:
        served.close()


def test_a_wait_status_of_a_real_process_killed_by_a_signal_is_minus_the_signal():
    proc = subprocess.Popen(["sh", "-c", "kill -TERM $$"])
    _, status = os.waitpid(proc.pid, 0)
    proc.returncode = 0  # reaped here
    assert fork_server._returncode(status) == -signal.SIGTERM
    proc = subprocess.Popen(["sh", "-c", "exit 7"])
    _, status = os.waitpid(proc.pid, 0)
    proc.returncode = 0
    assert fork_server._returncode(status) == 7


def test_a_server_gone_under_its_child_reports_the_child_killed(monkeypatch):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server = fork_server.ForkServer.__new__(fork_server.ForkServer)
    server.sock = a
    child = fork_server.ForkedChild(server, 77)
    assert child.poll() is None  # nothing said yet
    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(timeout=0.05)
    b.send(json.dumps({"pid": 78, "status": 0}).encode())  # another child's end is not this one's
    assert child.poll() is None
    b.close()  # the server died
    assert child.wait(timeout=5.0) == -signal.SIGKILL
    a.close()


def test_a_forked_child_is_signalled_only_while_it_runs(monkeypatch):
    sent = []
    monkeypatch.setattr(fork_server.os, "kill", lambda pid, sig: sent.append((pid, sig)))
    child = fork_server.ForkedChild(types.SimpleNamespace(), 99)
    child.terminate()
    child.kill()
    child.returncode = -15
    child.kill()
    assert sent == [(99, signal.SIGTERM), (99, signal.SIGKILL)]


def test_a_run_the_server_cannot_fork_starts_as_a_process_of_its_own_saying_why(monkeypatch, tmp_path):
    class Refusing:
        def start(self, args, **kw):
            raise fork_server.ForkServerError(
                "the fork server could not fork (CUDA was initialised in the server)"
            )

    started = []
    monkeypatch.setattr(fork_server, "server_for", lambda env, cwd: Refusing())
    monkeypatch.setattr(child_process, "start_child", lambda cmd, **kw: started.append((cmd, kw)) or "plain")
    cmd = [sys.executable, "-m", "pytest", "-q"]
    with open(tmp_path / "run.log", "w") as out:
        got = child_process.start_run(
            cmd, {"AORTA_RUN_START": "fork"}, {"stdout": out, "stderr": subprocess.STDOUT, "cwd": tmp_path}
        )
    assert got == "plain" and started[0][0] == cmd
    assert (tmp_path / "run.log").read_text() == (
        "aorta: the fork server could not fork (CUDA was initialised in the server): "
        "this run starts as a process of its own\n"
    )


@pytest.mark.parametrize(
    ("cmd", "popen", "env", "forks"),
    [
        ("pytest", {"stderr": "STDOUT"}, {}, True),
        ("pytest", {"stderr": "STDOUT"}, {"AORTA_RUN_START": "exec"}, False),  # asked for a plain process
        ("other", {"stderr": "STDOUT"}, {}, False),  # not this Python's pytest
        ("pytest", {}, {}, False),  # stderr not to the log: the server would lose it
        ("pytest", {"stderr": "STDOUT", "text": True}, {}, False),  # a setting the server cannot honour
    ],
)
def test_only_this_pythons_pytest_logging_to_a_file_is_forked(monkeypatch, tmp_path, cmd, popen, env, forks):
    asked = []

    class Server:
        def start(self, args, **kw):
            asked.append(args)
            return fork_server.ForkedChild(self, 5)

    monkeypatch.setattr(fork_server, "server_for", lambda env, cwd: Server())
    monkeypatch.setattr(child_process, "start_child", lambda c, **kw: "plain")
    argv = [sys.executable, "-m", "pytest", "-q"] if cmd == "pytest" else ["sh", "-c", "true"]
    with open(tmp_path / "run.log", "w") as out:
        kw = {"stdout": out, **{k: subprocess.STDOUT if v == "STDOUT" else v for k, v in popen.items()}}
        got = child_process.start_run(argv, env, kw)
    child_process._LIVE.pop(5, None)
    assert (got != "plain") == forks
    assert asked == ([["-q"]] if forks else [])


def test_the_cuda_check_reads_torch_only_where_it_is_imported(monkeypatch):
    def torch_with(initialised):
        def is_initialized():
            if isinstance(initialised, Exception):
                raise initialised
            return initialised

        return types.SimpleNamespace(cuda=types.SimpleNamespace(is_initialized=is_initialized))

    monkeypatch.setitem(sys.modules, "torch", torch_with(True))
    assert fork_server._cuda_initialized() is True
    monkeypatch.setitem(sys.modules, "torch", torch_with(False))
    assert fork_server._cuda_initialized() is False
    monkeypatch.setitem(sys.modules, "torch", torch_with(RuntimeError("no driver")))
    assert fork_server._cuda_initialized() is False
    monkeypatch.delitem(sys.modules, "torch")
    assert fork_server._cuda_initialized() is False


def test_one_live_server_per_environment_and_folder_a_dead_one_replaced(monkeypatch):
    made = []

    class FakeServer:
        def __init__(self, env, cwd):
            self.env, self.cwd, self.live = env, cwd, True
            made.append(self)

        def alive(self):
            return self.live

        def close(self):
            self.live = False

    monkeypatch.setattr(fork_server, "ForkServer", FakeServer)
    monkeypatch.setattr(fork_server, "_SERVERS", {})
    env = {"A": "1", "AORTA_FRESH_RUN": "run 1/3", fork_server.START_KEY: "fork"}
    first = fork_server.server_for(env, "/w")
    assert (first.env, first.cwd) == ({"A": "1"}, "/w")  # what differs run to run is not the server's
    assert fork_server.server_for({**env, "AORTA_FRESH_RUN": "run 2/3"}, "/w") is first
    other_folder = fork_server.server_for(env, "/elsewhere")
    other_env = fork_server.server_for({**env, "A": "2"}, "/w")
    assert len({id(first), id(other_folder), id(other_env)}) == 3
    first.live = False  # it died (killed, out of memory)
    again = fork_server.server_for(env, "/w")
    assert again is not first and again.alive() and len(made) == 4
    fork_server.close_servers()
    assert fork_server._SERVERS == {} and not again.alive()


def test_a_server_whose_imports_fail_says_so_and_ends_with_1(monkeypatch):
    def broken():
        raise RuntimeError("no libcuda")

    served = Served(monkeypatch, FakeOs(refuse=True), preload=broken)
    served.thread.join(5.0)
    assert served.ready == {"ready": False, "error": "RuntimeError: no libcuda"}
    assert served.code == [1]
    served.server.sock.close()
    forget_server_socket()


def test_the_import_time_is_said_to_the_millisecond(monkeypatch):
    served = Served(monkeypatch, FakeOs(refuse=True), preload=lambda: 1.23456)
    assert served.ready == {"ready": True, "import_s": 1.235}
    served.close()


def test_the_forked_child_gets_the_request_its_output_and_its_death_signal(monkeypatch, log):
    seen = []

    def child(request, out_fd, preexec):
        seen.append((request, out_fd, preexec))
        raise ChildReached  # the real one never returns

    monkeypatch.setattr(fork_server, "_child", child)
    served = Served(monkeypatch, FakeOs(pid=0))  # fork returns 0: this is the child's side
    request = {"args": ["-q", "t.py"], "env": {"A": "1"}, "cwd": "/w"}
    socket.send_fds(served.server.sock, [json.dumps(request).encode()], [log.fileno()])
    served.thread.join(5.0)
    assert served.code == ["child"]
    ((got, out_fd, preexec),) = seen
    assert got == request
    assert isinstance(out_fd, int) and out_fd >= 0 and out_fd != log.fileno()  # the descriptor as received
    assert callable(preexec)  # the child dies with the server
    served.server.sock.close()
    forget_server_socket()
    os.close(out_fd)


def test_the_parent_sends_args_env_and_folder(monkeypatch, log):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server = fork_server.ForkServer.__new__(fork_server.ForkServer)
    server.sock = a
    b.send(json.dumps({"pid": 12}).encode())  # answered before it is asked: read after the send
    child = server.start(["-q"], env={"A": "1"}, cwd="/w", out_fd=log.fileno())
    data, fds, _, _ = socket.recv_fds(b, 1 << 16, 1)
    assert json.loads(data) == {"args": ["-q"], "env": {"A": "1"}, "cwd": "/w"} and len(fds) == 1
    os.close(fds[0])
    assert child.pid == 12
    b.close()
    assert server._reply(1.0) == {"error": "the server ended"}
    a.close()
    with pytest.raises(fork_server.ForkServerError, match=r"^the fork server is gone \("):
        server.start(["-q"], env={}, cwd="/w", out_fd=log.fileno())


def test_a_server_that_does_not_answer_is_given_up_after_its_timeout(monkeypatch, log):
    monkeypatch.setattr(fork_server, "READY_TIMEOUT_S", 0.2)
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server = fork_server.ForkServer.__new__(fork_server.ForkServer)
    server.sock = a
    with pytest.raises(fork_server.ForkServerError) as exc:
        server.start(["-q"], env={}, cwd="/w", out_fd=log.fileno())
    assert str(exc.value) == "the fork server could not fork (no answer)"
    a.close()
    b.close()


def test_a_forked_child_not_ended_times_out_as_popen_does_and_poll_does_not_wait():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server = fork_server.ForkServer.__new__(fork_server.ForkServer)
    server.sock = a
    child = fork_server.ForkedChild(server, 77)
    t0 = time.monotonic()
    assert child.poll() is None
    assert time.monotonic() - t0 < 0.5
    with pytest.raises(subprocess.TimeoutExpired) as exc:
        child.wait(timeout=0.05)
    assert (exc.value.cmd, exc.value.timeout) == (["fork", "77"], 0.05)
    with pytest.raises(subprocess.TimeoutExpired) as exc:
        child.wait(timeout=0)
    assert exc.value.timeout == 0.0
    a.close()
    b.close()


def test_a_server_whose_socket_fails_ends_with_0(monkeypatch):
    served = Served(monkeypatch, FakeOs(refuse=True))

    def failing(*a, **k):
        raise OSError("EBADF")

    monkeypatch.setattr(socket, "recv_fds", failing)
    try:  # wakes nothing: the server's recv fails first
        served.server.sock.send(b"{}")
    except BrokenPipeError:  # or it has failed already and closed its end: the same end, checked next
        pass
    served.thread.join(5.0)
    assert served.code == [0]
    served.server.sock.close()
    forget_server_socket()


@pytest.mark.parametrize(
    ("cmd", "args"),
    [
        ([sys.executable, "-m", "pytest"], []),
        ([sys.executable, "-m", "pytest", "-q"], ["-q"]),
        (["/other/python", "-m", "pytest", "-q"], None),
        ([sys.executable, "-m", "other"], None),
        (["sh", "-m", "pytest"], None),
    ],
)
def test_only_this_pythons_pytest_is_forkable(cmd, args):
    assert fork_server.forkable(cmd) == args


def test_the_start_mode_is_read_from_the_environment_given_else_this_processs(monkeypatch):
    monkeypatch.setenv(fork_server.START_ENV, " EXEC ")
    assert fork_server.start_mode() == "exec"
    assert fork_server.start_mode({}) == "fork"
    with pytest.raises(ValueError) as exc:
        fork_server.start_mode({fork_server.START_ENV: "spawn"})
    assert str(exc.value) == (
        "AORTA_RUN_START='spawn': give one of fork, exec (fork: each run forked from a server that imported "
        "torch once; exec: each run a process started from nothing)"
    )
