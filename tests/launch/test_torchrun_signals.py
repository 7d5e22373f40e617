"""``aorta torchrun`` stops with its user (issue 38, cases 7 and 8): a SIGINT sent to its pid (a CI cancel) is
passed on to torchrun and the launcher exits 128 + N saying so; killed outright (SIGKILL), it takes torchrun with
it, and the next launcher removes the folder it left. torchrun is a stand-in here (a shell script that stops on
SIGINT or SIGTERM): what is tested is the launcher, in about a second a case."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from signal_defaults import default_stop_signals

from aorta.launch.scratch_folder import PREFIX, codes_folder, remove_stale

REPO = Path(__file__).resolve().parents[2]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

LAUNCHER = textwrap.dedent(
    """
    import argparse, sys
    from aorta.launch import torchrun
    fake = sys.argv[1]
    torchrun.rank_command = lambda args, folder: [fake, folder]
    sys.exit(torchrun.run_torchrun(argparse.Namespace(args=["-m", "pytest"])))
    """
)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def wait_for(check, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check() and time.monotonic() < deadline:
        time.sleep(0.05)
    return check()


def catches(pid: int, *signals: int) -> bool:
    """Whether ``pid`` has a handler of its own for each of ``signals`` (``SigCgt`` of /proc/PID/status)."""
    try:
        line = next(
            ln for ln in Path(f"/proc/{pid}/status").read_text().splitlines() if ln.startswith("SigCgt:")
        )
    except (FileNotFoundError, StopIteration):
        return False
    caught = int(line.split()[1], 16)
    return all(caught >> (sig - 1) & 1 for sig in signals)


def start(tmp_path: Path) -> tuple[subprocess.Popen, int, Path]:
    """The launcher over a stand-in torchrun; (launcher, torchrun's pid, its codes folder). The stand-in's
    own child's pid is left in ``sleep.pid`` for ``stop``."""
    info = tmp_path / "torchrun.pid"
    fake = tmp_path / "fake-torchrun"
    fake.write_text(
        "#!/bin/sh\n"
        "sleep 60 </dev/null >/dev/null 2>&1 &\n"
        f'echo "$$ $1 $!" > {info}.tmp && mv {info}.tmp {info}\n'
        "trap 'kill $! 2>/dev/null; exit 2' INT TERM\n"
        "wait\n"
    )
    fake.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path)}
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(fake)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_stop_signals,
    )
    assert wait_for(info.exists, 30), "the stand-in torchrun never started"
    # The launcher passes a stop signal on once its handlers are set, just after it started torchrun: under load a
    # signal sent in between found the default action (SIGHUP killed it, exit -1).
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    assert wait_for(lambda: catches(launcher.pid, *stops), 30), "the launcher never set its stop handlers"
    pid, folder, sleep_pid = info.read_text().split()
    (tmp_path / "sleep.pid").write_text(sleep_pid)
    return launcher, int(pid), Path(folder)


def stop(launcher: subprocess.Popen, torchrun_pid: int, tmp_path: Path) -> None:
    for pid in (launcher.pid, torchrun_pid, int((tmp_path / "sleep.pid").read_text())):
        if alive(pid):  # torchrun first of all: it holds the launcher's stderr open
            os.kill(pid, signal.SIGKILL)
    launcher.communicate()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_stop_signal_to_the_launcher_stops_torchrun_and_exits_128_plus_n(tmp_path, sig):
    """128 + N as the README says of every command: SIGTERM was 130 (issue 65)."""
    launcher, torchrun_pid, _ = start(tmp_path)
    try:
        launcher.send_signal(sig)
        _, err = launcher.communicate(timeout=10)
        assert launcher.returncode == 128 + sig, err
        assert f"aorta torchrun: interrupted by {sig.name}, passed on to torchrun (" in err
        assert not alive(torchrun_pid)
    finally:
        stop(launcher, torchrun_pid, tmp_path)


@linux_only
def test_a_launcher_killed_outright_takes_torchrun_with_it_and_its_folder_goes_next_time(tmp_path):
    launcher, torchrun_pid, folder = start(tmp_path)
    try:
        assert folder.is_dir() and folder.name.startswith(f"{PREFIX}{launcher.pid}-")
        launcher.send_signal(signal.SIGKILL)
        launcher.wait(timeout=10)
        assert wait_for(lambda: not alive(torchrun_pid), 5), "torchrun outlived its launcher"
        assert folder.is_dir()  # nothing of a SIGKILLed launcher runs again: the next one removes it
        assert remove_stale(tmp_path) == [folder] and not folder.exists()
    finally:
        stop(launcher, torchrun_pid, tmp_path)


def test_a_live_launchers_folder_is_left_alone(tmp_path):
    with codes_folder(tmp_path) as mine:
        assert remove_stale(tmp_path) == [] and Path(mine).is_dir()
    assert not Path(mine).exists()
