"""What a fork server does around each fork (aorta/processes/fork_server.py, issue 58), in this process with the
process calls faked: the server's buffered output written before the fork, the child's death with the server
armed, the server's sockets closed in the child; the forked child's frame (a session of its own, the death
signal set after it, the stop signals at their defaults, the body's return or ``SystemExit`` as its exit code,
threads joined and exit functions run before ``os._exit``); a run's request taken (folder, environment,
aorta's modules forgotten); and the server killing what a run left once it ended, before saying so."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading

import pytest

from aorta.processes import fork_server


class Exited(Exception):
    def __init__(self, code):
        self.code = code


class ChildOs:
    """``os`` for the child's side: setsid, dup2, close, chdir and _exit recorded; environ a plain dict."""

    def __init__(self, fork_pid: int = 0) -> None:
        self.calls: list[tuple] = []
        self.fork_pid = fork_pid
        self.environ: dict[str, str] = {"OLD": "1"}

    def __getattr__(self, name):
        return getattr(os, name)

    def fork(self):
        self.calls.append(("fork",))
        return self.fork_pid

    def setsid(self):
        self.calls.append(("setsid",))

    def dup2(self, a, b):
        self.calls.append(("dup2", a, b))

    def close(self, fd):
        self.calls.append(("close", fd))

    def chdir(self, path):
        self.calls.append(("chdir", path))

    def _exit(self, code):
        self.calls.append(("_exit", code))
        raise Exited(code)


@pytest.fixture
def child_os(monkeypatch):
    fake = ChildOs()
    monkeypatch.setattr(fork_server, "os", fake)
    return fake


@pytest.fixture
def frame(monkeypatch, child_os):
    """The child's frame with its process-wide steps recorded: signals, threads joined, exit functions."""
    import atexit

    steps = child_os.calls
    monkeypatch.setattr(
        fork_server.signal, "signal", lambda sig, handler: steps.append(("signal", sig, handler))
    )
    monkeypatch.setattr(threading, "_shutdown", lambda: steps.append(("threads joined",)))
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: steps.append(("exit functions",)))
    return steps


def run_frame(body, preexec=None) -> int:
    with pytest.raises(Exited) as exc:
        fork_server.forked_child(preexec, body)
    return exc.value.code


def test_the_child_s_frame_sets_its_session_then_its_death_signal_then_the_defaults_then_runs(frame):
    code = run_frame(lambda: frame.append(("body",)) or 3, preexec=lambda: frame.append(("death signal",)))
    assert code == 3
    assert frame == [
        ("setsid",),
        ("death signal",),
        ("signal", signal.SIGINT, signal.default_int_handler),
        ("signal", signal.SIGTERM, signal.SIG_DFL),
        ("signal", signal.SIGHUP, signal.SIG_DFL),
        ("signal", signal.SIGPIPE, signal.SIG_DFL),
        ("body",),
        ("threads joined",),
        ("exit functions",),
        ("_exit", 3),
    ]


def test_a_child_without_a_death_signal_still_runs(frame):
    assert run_frame(lambda: 0, preexec=None) == 0


@pytest.mark.parametrize(("exit_code", "code"), [(None, 0), (5, 5), ("a message", 1), (0, 0)])
def test_a_child_that_exits_gives_its_code_as_python_does(frame, exit_code, code):
    def body():
        raise SystemExit(exit_code)

    assert run_frame(body) == code
    assert frame[-3:] == [("threads joined",), ("exit functions",), ("_exit", code)]


def test_a_child_that_fails_prints_its_traceback_and_exits_1(frame, capsys):
    def body():
        raise RuntimeError("the run broke")

    assert run_frame(body) == 1
    assert "RuntimeError: the run broke" in capsys.readouterr().err


def test_a_child_whose_exit_functions_fail_still_ends(frame, monkeypatch):
    import atexit

    def failing():
        raise RuntimeError("atexit")

    monkeypatch.setattr(atexit, "_run_exitfuncs", failing)
    assert run_frame(lambda: 4) == 4  # _exit in the finally: a failing exit function cannot keep it alive


def test_a_request_is_taken_folder_environment_and_aorta_forgotten(child_os, monkeypatch):
    modules = {"aorta": 1, "aorta.gate": 2, "aortax": 3, "numpy": 4, "x.aorta": 5}
    monkeypatch.setattr(sys, "modules", modules)
    fork_server.take_request({"cwd": "/w", "env": {"A": "1", fork_server.START_KEY: "exec"}})
    assert ("chdir", "/w") in child_os.calls
    assert sorted(modules) == ["aortax", "numpy", "x.aorta"]
    assert child_os.environ == {"A": "1", fork_server.START_KEY: "fork"}  # the old one cleared, fork recorded


def test_the_run_s_output_goes_to_its_descriptor_and_pytest_gets_its_arguments(child_os, monkeypatch):
    import pytest as real_pytest

    bodies = []
    monkeypatch.setattr(fork_server, "forked_child", lambda preexec, body: bodies.append((preexec, body)))
    taken = []
    monkeypatch.setattr(fork_server, "take_request", lambda request: taken.append(request))
    ran = []
    monkeypatch.setattr(real_pytest, "main", lambda args: ran.append(list(args)) or 2)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    request = {"args": ["-q", "t.py"], "env": {}, "cwd": "/w"}
    marker = object()
    fork_server._child(request, 17, marker)
    ((preexec, body),) = bodies
    assert preexec is marker
    assert body() == 2
    assert child_os.calls == [("dup2", 17, 1), ("dup2", 17, 2), ("close", 17)]
    assert taken == [request] and ran == [["-q", "t.py"]]
    assert sys.argv == [real_pytest.__file__, "-q", "t.py"]


def test_fork_run_flushes_arms_the_death_signal_and_closes_the_server_s_sockets_in_the_child(monkeypatch):
    fake = ChildOs(fork_pid=0)
    monkeypatch.setattr(fork_server, "os", fake)
    armed = object()
    monkeypatch.setattr(fork_server, "die_with_parent", lambda: armed)
    flushed = []
    monkeypatch.setattr(sys.stdout, "flush", lambda: flushed.append("stdout"))
    monkeypatch.setattr(sys.stderr, "flush", lambda: flushed.append("stderr"))

    class Sock:
        def __init__(self, name):
            self.name = name

        def close(self):
            fake.calls.append(("closed", self.name))

    got = []
    assert fork_server.fork_run([Sock("a"), None, Sock("b")], lambda preexec: got.append(preexec)) == 0
    assert flushed == ["stdout", "stderr"]
    assert fake.calls == [("fork",), ("closed", "a"), ("closed", "b")]
    assert got == [armed]
    fake.calls.clear()
    fake.fork_pid = 4242  # the server's side: nothing closed, the child's code not run
    got.clear()
    assert fork_server.fork_run([Sock("a")], lambda preexec: got.append(preexec)) == 4242
    assert fake.calls == [("fork",)] and got == []


# ------------------------------------------------------------------------------------ the server's loop
class ServerOs:
    def __init__(self, status: int) -> None:
        self.status = status

    def __getattr__(self, name):
        return getattr(os, name)

    def fork(self):
        return 4242

    def waitpid(self, pid, options):
        return pid, self.status


def serve_one(monkeypatch, log, *, parent_gone_after_fork: bool):
    """``serve`` on a socket pair in a thread, one request; what it did, in order."""
    events: list = []
    monkeypatch.setattr(fork_server, "_preload", lambda: 0.0)
    monkeypatch.setattr(fork_server, "_cuda_initialized", lambda: False)
    monkeypatch.setattr(fork_server, "os", ServerOs(status=7 << 8))
    monkeypatch.setattr(
        fork_server.signal, "signal", lambda sig, handler: events.append(("signal", sig, handler))
    )
    monkeypatch.setattr(fork_server.keeper, "become_subreaper", lambda: events.append("subreaper"))
    monkeypatch.setattr(fork_server.keeper, "kill_tree", lambda root: events.append(("kill_tree", root)))
    real_send = fork_server._send

    def send(sock, message):
        if parent_gone_after_fork and "pid" in message:
            events.append(("not sent", message))
            return False
        events.append(("sent", message))
        return real_send(sock, message)

    monkeypatch.setattr(fork_server, "_send", send)
    parent, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    code: list[int] = []
    t = threading.Thread(target=lambda: code.append(fork_server.serve(server_end.detach())))
    t.start()
    assert json.loads(parent.recv(1 << 16))["ready"] is True
    socket.send_fds(parent, [json.dumps({"args": [], "env": {}, "cwd": "."}).encode()], [log.fileno()])
    if not parent_gone_after_fork:
        assert json.loads(parent.recv(1 << 16)) == {"pid": 4242}
        assert json.loads(parent.recv(1 << 16)) == {"pid": 4242, "status": 7}
    parent.close()
    t.join(5.0)
    assert not t.is_alive()
    return events, code


@pytest.fixture
def log(tmp_path):
    with open(tmp_path / "run.log", "w") as fh:
        yield fh


def test_the_server_kills_what_a_run_left_before_it_reports_the_run_s_end(monkeypatch, log):
    events, code = serve_one(monkeypatch, log, parent_gone_after_fork=False)
    me = os.getpid()
    assert events == [
        ("signal", signal.SIGINT, signal.SIG_DFL),  # stopped by Ctrl-C, it ends without a traceback
        "subreaper",
        ("sent", {"ready": True, "import_s": 0.0}),
        ("sent", {"pid": 4242}),
        ("kill_tree", me),
        ("sent", {"pid": 4242, "status": 7}),
    ]
    assert code == [0]


def test_a_server_whose_parent_is_gone_after_a_fork_kills_the_run_s_tree_and_ends(monkeypatch, log):
    events, code = serve_one(monkeypatch, log, parent_gone_after_fork=True)
    assert events[-2:] == [("not sent", {"pid": 4242}), ("kill_tree", os.getpid())]
    assert code == [0]


@pytest.mark.parametrize(
    ("cuda", "fds", "why"),
    [(True, 1, "CUDA was initialised in the server"), (True, 0, "CUDA was initialised in the server"),
     (False, 0, "no output descriptor"), (False, 2, "no output descriptor"), (False, 1, None)],
)  # fmt: skip
def test_the_server_forks_only_before_cuda_and_with_exactly_one_descriptor(cuda, fds, why):
    assert fork_server.refusal(cuda, fds) == why


def test_a_message_to_a_parent_gone_is_false_not_an_error():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    assert fork_server._send(a, {"x": 1}) is True
    assert json.loads(b.recv(100)) == {"x": 1}
    b.close()
    assert fork_server._send(a, {"x": 2}) is False
    a.close()


def test_a_child_that_fails_where_its_traceback_cannot_be_written_still_exits_1(frame, monkeypatch):
    import traceback

    def log_gone(*a, **k):
        raise OSError("the run's log is gone")

    monkeypatch.setattr(traceback, "print_exc", log_gone)

    def body():
        raise RuntimeError("the run broke")

    assert run_frame(body) == 1  # never 0: a run that failed is never read as passed
