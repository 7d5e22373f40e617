"""Every child in one tree that dies with aorta (issue 56, class 3), tested on real small process trees in about a
second a case: a shell script as the launcher, a grandchild that left the launcher's process group and session
(``setsid``, as a wrapper script or ``docker run``'s helpers do), the keeper above them
(aorta/processes/keeper.py), the fork server's refusals and statuses, and each stop path's one line."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from signal_defaults import default_stop_signals

from aorta.processes import fork_server, keeper
from aorta.processes.child_process import end_tree, exit_status, start_child
from aorta.processes.parent_death import die_with_parent

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="subreapers and /proc are Linux's"
)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def gone(pids: list[int], within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return not left


def pids_in(path: Path, n: int, within_s: float = 10.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        words = path.read_text().split() if path.exists() else []
        if len(words) >= n:
            return [int(w) for w in words]
        time.sleep(0.02)
    raise AssertionError(f"{path}: {n} pids never written")


@pytest.fixture
def launcher(tmp_path) -> Path:
    """A wrapper script as a launcher: it starts a grandchild in a session of its own whose parent then ends
    (an orphan: without a subreaper it would belong to PID 1), writes both pids, and waits."""
    script = tmp_path / "launcher.sh"
    script.write_text(
        textwrap.dedent(
            f"""\
            #!/bin/sh
            (setsid sleep 300 & echo $! >> {tmp_path}/pids)
            echo $$ >> {tmp_path}/pids
            exec sleep 300
            """
        )
    )
    script.chmod(0o755)
    return script


SUPERVISOR = textwrap.dedent(
    """
    import sys
    from aorta.processes.child_process import start_child
    start_child([sys.argv[1]]).wait()
    """
)


def test_a_grandchild_that_left_the_launcher_s_session_dies_when_aorta_is_killed_outright(tmp_path, launcher):
    aorta = subprocess.Popen(
        [sys.executable, "-c", SUPERVISOR, str(launcher)], env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    try:
        tree = pids_in(tmp_path / "pids", 2)
        assert all(alive(p) for p in tree)
        aorta.kill()  # SIGKILL: aorta runs no code of its own
        aorta.wait()
        assert gone(tree), "a launcher's grandchild outlived aorta killed by SIGKILL"
    finally:
        aorta.kill()
        aorta.wait()


def test_ending_a_child_ends_its_whole_tree_and_keeps_its_status(tmp_path, launcher):
    proc = start_child([str(launcher)])
    tree = pids_in(tmp_path / "pids", 2)
    end_tree(proc, grace_s=5.0)
    assert gone(tree, within_s=1.0)
    assert (proc.returncode, exit_status(proc.returncode)) == (-signal.SIGTERM, 143)


def test_what_a_command_left_running_ends_with_it(tmp_path):
    pids = tmp_path / "pids"
    proc = start_child(["sh", "-c", f"(setsid sleep 300 & echo $! > {pids}); exit 3"])
    assert proc.wait(timeout=10) == 3
    assert gone(pids_in(pids, 1), within_s=1.0)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_a_command_ended_by_signal_n_reads_128_plus_n_through_the_keeper(sig):
    proc = start_child(["sh", "-c", f"kill -{int(sig)} $$"])
    assert proc.wait(timeout=10) == -sig and exit_status(proc.returncode) == 128 + sig


def test_a_command_that_cannot_start_raises_as_popen_does(tmp_path):
    with pytest.raises(FileNotFoundError):
        start_child([str(tmp_path / "no-such-python")])
    (tmp_path / "plain").write_text("not a program")
    with pytest.raises(PermissionError):
        start_child([str(tmp_path / "plain")])


def test_end_tree_kills_what_a_child_left_in_its_group_after_sigterm(tmp_path):
    """A plain child (no keeper) that ends on SIGTERM and leaves a process of its group that ignores it."""
    pids = tmp_path / "pids"
    proc = subprocess.Popen(
        ["sh", "-c", f"trap '' TERM; sleep 300 & echo $! > {pids}; trap 'exit 0' TERM; wait; wait"],
        start_new_session=True,
    )
    (left,) = pids_in(pids, 1)
    end_tree(proc, grace_s=5.0)
    assert proc.returncode == 0
    assert gone([left], within_s=1.0), "the SIGTERM-proof process of the child's group was not killed"


def test_the_death_signal_reaches_the_direct_child(tmp_path):
    pid_file = tmp_path / "pid"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys\n"
            "from aorta.processes.parent_death import die_with_parent\n"
            "p = subprocess.Popen(['sleep', '300'], preexec_fn=die_with_parent())\n"
            f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
            "p.wait()\n",
        ],
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        (child,) = pids_in(pid_file, 1)
        parent.kill()
        parent.wait()
        assert gone([child]), "the child outlived its parent killed by SIGKILL"
    finally:
        parent.kill()
        parent.wait()
    assert die_with_parent() is not None


def test_descendants_are_read_from_the_parent_table_nearest_first():
    table = {10: 1, 11: 10, 12: 10, 13: 11, 14: 13, 20: 1, 21: 20}
    assert keeper.descendants(10, table) == [11, 12, 13, 14]
    assert keeper.descendants(20, table) == [21]
    assert keeper.descendants(14, table) == []


# ------------------------------------------------------------------------------------------- the fork server
FAKE_SERVER = textwrap.dedent(
    """
    import sys
    from aorta.processes import fork_server
    fork_server._preload = lambda: 0.0  # no torch: the test is about what the server does with a request
    fork_server._cuda_initialized = lambda: True
    sys.exit(fork_server.serve(int(sys.argv[1])))
    """
)


def test_the_fork_server_refuses_to_fork_once_cuda_is_initialised(tmp_path):
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server = subprocess.Popen(
        [sys.executable, "-c", FAKE_SERVER, str(theirs.fileno())],
        pass_fds=(theirs.fileno(),),
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    theirs.close()
    try:
        assert json.loads(ours.recv(1 << 16))["ready"]
        with open(tmp_path / "log", "w") as log:
            request = {"args": ["--version"], "env": dict(os.environ), "cwd": str(tmp_path)}
            socket.send_fds(ours, [json.dumps(request).encode()], [log.fileno()])
        assert json.loads(ours.recv(1 << 16)) == {"error": "CUDA was initialised in the server"}
        assert (tmp_path / "log").read_text() == ""  # nothing forked, nothing ran
    finally:
        ours.close()
        assert server.wait(timeout=10) == 0


def test_a_forked_run_killed_by_signal_n_is_reported_as_128_plus_n():
    pid = os.fork()
    if pid == 0:
        os.kill(os.getpid(), signal.SIGTERM)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert fork_server._returncode(status) == -signal.SIGTERM
    assert exit_status(fork_server._returncode(status)) == 143
    assert fork_server.refusal(False, 1) is None and fork_server.refusal(False, 0) == "no output descriptor"


# ------------------------------------------------------------------------------------------- stop paths
def _stopped(
    script: str, tmp_path: Path, signals: list[int], wait_for: str, settle_s: float = 0.3
) -> tuple[int, str, str]:
    """Run ``script``; ``settle_s`` after it prints ``wait_for``, send ``signals`` 0.3 s apart; (exit code,
    stdout, stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(REPO), "AORTA_RUN_START": "fork"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_stop_signals,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert wait_for in line, (line, proc.communicate())
        time.sleep(settle_s)
        for sig in signals:
            proc.send_signal(sig)
            time.sleep(0.3)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    return proc.returncode, out, err


# A command body whose child takes a second to end on SIGTERM: the second signal comes while it ends. "running"
# once the child's trap is set (it says so in a file), however long the machine takes to start it.
SLOW_TO_END = textwrap.dedent(
    """
    import os, sys, time
    from aorta.processes.child_process import run_until_stopped, start_child
    def body():
        trapped = os.path.join(sys.argv[1], "trapped")
        p = start_child(["sh", "-c", "trap 'sleep 1; exit 0' TERM; : > \\"$0\\"; sleep 300 & wait", trapped])
        while not os.path.exists(trapped) and p.poll() is None:
            time.sleep(0.01)
        print("running", flush=True)
        return p.wait()
    sys.exit(run_until_stopped("aorta ab", body))
    """
)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_command_stopped_twice_in_a_row_says_one_line_and_exits_128_plus_the_first(tmp_path, sig):
    code, out, err = _stopped(SLOW_TO_END, tmp_path, [sig, signal.SIGINT], "running", settle_s=0)
    assert (code, err.splitlines()) == (
        128 + sig,
        [f"aorta ab: stopped by {sig.name}; 1 child process tree(s) ended; exit {128 + sig}"],
    )


# A gate (inside pytest: exit_on_stop_signals) or aorta ab (run_until_stopped) stopped while a fork server starts.
DURING_SERVER_START = textwrap.dedent(
    """
    import os, sys
    from aorta.processes import child_process, fork_server
    mode, cwd = sys.argv[2], sys.argv[1]
    def body():
        print("starting", flush=True)
        fork_server.ForkServer(dict(os.environ), cwd)
        return 0
    if mode == "gate":
        child_process.exit_on_stop_signals("aorta gate")
        sys.exit(body())
    sys.exit(child_process.run_until_stopped("aorta ab", body))
    """
)


@pytest.mark.parametrize("who", ["gate", "ab"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_stop_while_the_fork_server_starts_is_one_line_and_no_server_is_left(tmp_path, sig, who):
    script = DURING_SERVER_START.replace("sys.argv[2]", repr(who))
    code, out, err = _stopped(script, tmp_path, [sig], "starting")
    name = "aorta gate" if who == "gate" else "aorta ab"
    assert (code, err.splitlines()) == (128 + sig, [f"{name}: stopped by {sig.name}; exit {128 + sig}"])
    left = [p for p in keeper.parent_table() if _cwd(p) == str(tmp_path)]
    assert gone(left, within_s=3.0), "a fork server outlived the stopped command"


def _cwd(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None
