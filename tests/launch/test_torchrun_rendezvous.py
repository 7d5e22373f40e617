"""A bounded rendezvous across nodes (issue 38, case 22): ``aorta torchrun`` passes ``--aorta-rdzv-timeout``
(default 120 s) to torchrun as its ``join_timeout`` where several nodes join, says up front how long it waits,
and says what is missing when no rank ever started (torchrun waited 600 s in silence, then a bare
``RendezvousTimeoutError``)."""

import pytest

from aorta.cli import main
from aorta.launch import rendezvous
from aorta.launch.torchrun import _bounded_rendezvous

NODES_2 = ["--nnodes", "2", "--nproc_per_node", "1", "--rdzv-endpoint", "h:29500"]


def test_several_nodes_get_the_default_join_timeout():
    args, timeout = _bounded_rendezvous([*NODES_2, "-m", "pytest", "--nnodes", "x"])
    assert timeout == 120.0
    assert args == [
        "--rdzv-conf=join_timeout=120",
        *NODES_2,
        "-m",
        "pytest",
        "--nnodes",
        "x",
    ]  # pytest's untouched


def test_the_option_is_taken_out_and_passed_on():
    args, timeout = _bounded_rendezvous(["--aorta-rdzv-timeout", "30", *NODES_2, "-m", "pytest"])
    assert timeout == 30.0 and args == ["--rdzv-conf=join_timeout=30", *NODES_2, "-m", "pytest"]
    args, _ = _bounded_rendezvous(["--rdzv-conf", "read_timeout=60", *NODES_2, "-m", "pytest"])
    assert args[:2] == ["--rdzv-conf", "read_timeout=60,join_timeout=120"]


@pytest.mark.parametrize(
    "args",
    [
        ["--standalone", "--nproc_per_node", "2"],
        ["--nnodes", "1", "--nproc_per_node", "2"],
        ["--rdzv-conf=join_timeout=900", *NODES_2],
    ],
)
def test_one_node_or_the_users_own_join_timeout_is_left_as_it_is(args):
    assert _bounded_rendezvous([*args, "-m", "pytest"]) == ([*args, "-m", "pytest"], None)


@pytest.mark.parametrize("bad", ["inf", "0", "abc"])
def test_a_bad_timeout_is_refused_before_torchrun_starts(capsys, bad):
    assert main(["torchrun", "--aorta-rdzv-timeout", bad, *NODES_2, "-m", "pytest"]) == 2
    assert "--aorta-rdzv-timeout=" in capsys.readouterr().err


def test_the_lines_say_how_long_and_what_is_missing():
    assert rendezvous.waiting_line(NODES_2, 120.0).startswith(
        "aorta torchrun: waiting at most 120 s for the launchers of --nnodes 2 to join"
    )
    line = rendezvous.missing_line(NODES_2, 120.0)
    assert "fewer launchers than --nnodes 2 joined, or the launchers disagree on --nnodes" in line


@pytest.mark.slow  # a real torchrun whose rendezvous times out (about 8 s)
def test_one_launcher_of_two_nodes_stops_after_the_timeout_saying_what_is_missing(tmp_path):
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cmd = [sys.executable, "-m", "aorta", "torchrun", "--aorta-rdzv-timeout", "5", "--nnodes", "2"]
    # A port free now, not a fixed one: two runs (or two xdist workers) on one machine with one endpoint join
    # each other's launchers, and the rendezvous completes.
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    cmd += ["--nproc_per_node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", f"localhost:{port}"]
    r = subprocess.run(
        [*cmd, "-m", "pytest", "-q", "test_x.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1
    assert "the rendezvous did not complete in 5 s: fewer launchers than --nnodes 2 joined" in r.stderr
