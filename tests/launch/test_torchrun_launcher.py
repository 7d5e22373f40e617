"""``aorta torchrun``: torchrun, exiting with rank 0's pytest code (issue 24, case 13: under plain torchrun
every non-zero code reads 1, so CI could not tell a regression (10) or a refusal (14) from a crash)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aorta.cli import main
from aorta.launch.torchrun import exit_code, rank_command

REPO = Path(__file__).resolve().parents[2]


def test_the_rank_command_wraps_pytest_and_keeps_torchrun_options():
    cmd = rank_command(
        ["--standalone", "--nproc_per_node", "2", "-m", "pytest", "benchmarks/fsdp", "-q"], "/d", "py"
    )
    assert cmd == [
        "py",
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "aorta.processes.rank_exit",
        "/d",
        "benchmarks/fsdp",
        "-q",
    ]


def test_a_command_without_pytest_is_a_usage_error(capsys):
    assert main(["torchrun", "--nproc_per_node", "2", "train.py"]) == 2
    assert "give torchrun's options, then -m pytest" in capsys.readouterr().err


@pytest.mark.parametrize(
    "torchrun_code, codes, expected",
    [
        (1, {0: 10, 1: 0}, 10),  # a regression on rank 0
        (1, {0: 14, 1: 14}, 14),  # refused on every rank
        (0, {0: 0, 1: 0}, 0),
        (1, {0: 0, 1: 1}, 1),  # rank 0 passed, rank 1 failed: torchrun's code stands
        (1, {1: 1}, 1),  # rank 0 left no code (killed)
    ],
)
def test_the_exit_code_is_rank_0s_unless_it_passed_while_another_failed(torchrun_code, codes, expected):
    assert exit_code(torchrun_code, codes)[0] == expected


CONFTEST = """
import os
def pytest_sessionfinish(session, exitstatus):
    if os.environ.get("RANK") == "0":
        session.exitstatus = int(os.environ["RANK0_CODE"])
"""


@pytest.mark.slow  # two ranks under torchrun (about 30 s on 2 CPU cores)
def test_a_gate_code_on_rank_0_comes_back_through_torchrun(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    env = {**os.environ, "RANK0_CODE": "10", "PYTHONPATH": str(REPO)}
    args = [
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "test_x.py",
    ]
    r = subprocess.run(
        [sys.executable, "-m", "aorta", "torchrun", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 10, r.stderr[-2000:]
    assert "aorta torchrun: rank 0's pytest exit code 10" in r.stderr
    plain = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", *args], cwd=tmp_path, env=env, capture_output=True
    )
    assert plain.returncode == 1  # what torchrun itself makes of it


@pytest.mark.parametrize("signal_number, code", [(15, 143), (9, 137)])
def test_torchrun_killed_by_a_signal_exits_128_plus_the_signal(monkeypatch, capsys, signal_number, code):
    # the shell's convention: a child ended by signal N is 128 + N (SIGTERM 143, SIGKILL 137)

    class Killed:
        def __init__(self, cmd, env, **kw):
            self.pid = 0

        def wait(self):
            return -signal_number  # Popen's return code of a child ended by a signal

        def send_signal(self, sig):
            pass

    monkeypatch.setattr("subprocess.Popen", Killed)
    assert main(["torchrun", "--nproc_per_node", "2", "-m", "pytest", "benchmarks/fsdp"]) == code
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(f"rank 0 left no pytest exit code; torchrun's exit code {code}")
    )
