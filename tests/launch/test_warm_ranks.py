"""Warm ranks (``$AORTA_RANK_START=fork``): torchrun starts stubs (``aorta.processes.warm_rank``) that have the node's
rank server (``aorta.processes.rank_server``) fork each rank. A rank is still a process of its own: it leaves its
exit code, ends as the rank ended, takes stop signals, dies with its stub; where no server answers, the stub
runs the rank itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aorta.cli import main
from aorta.launch.torchrun import WARM_RANK, rank_command
from aorta.processes import rank_exit, warm_rank
from aorta.processes.rank_server import RankServer

REPO = Path(__file__).resolve().parents[2]
SLOW_TEST = "import time\n\ndef test_waits():\n    time.sleep(60)\n"


def test_the_start_mode_is_exec_unless_fork_is_asked_for_and_anything_else_is_refused():
    assert warm_rank.start_mode({}) == "exec"
    assert warm_rank.start_mode({warm_rank.START_ENV: " Fork "}) == "fork"
    with pytest.raises(ValueError, match=r"AORTA_RANK_START='warm': give one of exec, fork"):
        warm_rank.start_mode({warm_rank.START_ENV: "warm"})


def test_a_bad_start_mode_is_a_usage_error_before_torchrun_starts(monkeypatch, capsys):
    monkeypatch.setenv(warm_rank.START_ENV, "warm")
    assert main(["torchrun", "--nproc_per_node", "2", "-m", "pytest", "benchmarks/fsdp"]) == 2
    assert "AORTA_RANK_START='warm'" in capsys.readouterr().err


def test_the_warm_rank_command_runs_the_stub_with_the_rank_wrappers_arguments():
    cmd = rank_command(
        ["--nproc_per_node", "2", "-m", "pytest", "benchmarks/fsdp"], "/d", "py", module=WARM_RANK
    )
    assert cmd[-4:] == ["-m", "aorta.processes.warm_rank", "/d", "benchmarks/fsdp"]


def test_a_stub_with_no_server_runs_the_rank_itself_and_says_so(monkeypatch, capsys, tmp_path):
    ran = []
    monkeypatch.setattr(rank_exit, "main", lambda argv: ran.append(argv) or 7)
    monkeypatch.setenv(warm_rank.SERVER_ENV, str(tmp_path / "none.sock"))
    assert warm_rank.main(["/d", "-q"]) == 7
    assert ran == [["/d", "-q"]]
    assert "this rank starts from nothing" in capsys.readouterr().err
    monkeypatch.delenv(warm_rank.SERVER_ENV)
    assert warm_rank.main(["/d"]) == 7  # no server named: a cold start, silently


# ----------------------------------------------------------------------------- through a real server
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("warm")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    srv = RankServer(str(folder / "ranks.sock"), env, str(folder))
    yield srv, folder, env
    srv.close()


def _stub(server, *args, **popen):
    srv, folder, env = server
    return subprocess.Popen(
        [sys.executable, "-m", "aorta.processes.warm_rank", str(folder), *args],
        cwd=folder,
        env={**env, warm_rank.SERVER_ENV: srv.path, "RANK": "0"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


@pytest.mark.slow  # the server imports torch (seconds)
def test_a_forked_rank_leaves_its_code_and_the_stub_ends_with_it(server):
    _, folder, _ = server
    (folder / "test_fails.py").write_text("def test_fails():\n    assert False\n")
    stub = _stub(server, "-q", "-p", "no:cacheprovider", "test_fails.py")
    out, err = stub.communicate(timeout=120)
    assert stub.returncode == 1, err
    assert "1 failed" in out  # the rank's stdout is the stub's
    assert (folder / "rank0.code").read_text().strip() == "1"
    assert "test_fails.py::test_fails" in (folder / "rank0.error").read_text()


@pytest.mark.slow
def test_a_stop_signal_to_the_stub_reaches_the_rank_and_the_stub_ends_by_it(server):
    _, folder, _ = server
    (folder / "test_slow.py").write_text(SLOW_TEST)
    stub = _stub(server, "-q", "-p", "no:cacheprovider", "test_slow.py")
    time.sleep(3)  # the rank is in its test
    stub.send_signal(signal.SIGTERM)
    stub.communicate(timeout=60)
    assert stub.returncode == -signal.SIGTERM  # as torchrun would see a rank it started itself


@pytest.mark.slow
def test_a_rank_dies_with_its_stub(server):
    _, folder, _ = server
    (folder / "test_slow.py").write_text(SLOW_TEST)
    stub = _stub(server, "-q", "-p", "no:cacheprovider", "test_slow.py", start_new_session=True)
    time.sleep(3)
    ranks = [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == server[0].proc.pid]
    assert ranks, "the server forked no rank"
    stub.kill()  # torchrun's SIGKILL after its grace time
    stub.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in ranks):
        time.sleep(0.1)
    assert not any(_alive(p) for p in ranks)


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow  # two ranks under torchrun, each forked
def test_aorta_torchrun_with_warm_ranks_runs_fsdp_and_records_the_start(tmp_path):
    out = tmp_path / "run.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), warm_rank.START_ENV: "fork", "OMP_NUM_THREADS": "1"}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "aorta",
            "torchrun",
            "--standalone",
            "--nproc_per_node",
            "2",
            "-m",
            "pytest",
            "benchmarks/fsdp",
            "-k",
            "baseline",
            "-q",
            "-p",
            "no:cacheprovider",
            "--aorta-device",
            "cpu",
            f"--benchmark-json={out}",
            f"--aorta-artifacts={tmp_path / 'art'}",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "from nothing" not in r.stderr
    doc = json.loads(out.read_text())
    assert doc["aorta_run"]["start"] == "fork"
    assert [b["name"] for b in doc["benchmarks"]] == ["test_fsdp_scenario[baseline]"]


def test_a_gate_or_ab_torchrun_run_gets_the_stub_and_one_server_per_environment(monkeypatch, tmp_path):
    from aorta.processes import rank_server

    started = []

    class Fake:
        def __init__(self, path, env, cwd):
            self.path = path
            self.proc = subprocess.Popen(["sleep", "60"])
            started.append(dict(env))

        def close(self):
            self.proc.kill()
            self.proc.wait()

    monkeypatch.setattr(rank_server, "RankServer", Fake)
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "-m",
        "pytest",
        "benchmarks/fsdp",
    ]
    env = {warm_rank.START_ENV: "fork", "AORTA_FRESH_RUN": "1/3"}
    try:
        assert rank_server.warm_torchrun(cmd, {}, str(tmp_path)) is None  # exec: ranks from nothing
        assert rank_server.warm_torchrun(cmd[:1] + ["-m", "pytest", "x"], env, str(tmp_path)) is None
        warm, warm_env = rank_server.warm_torchrun(cmd, env, str(tmp_path))
        assert (
            warm[:5] == cmd[:5] and warm[5:7] == ["-m", "aorta.processes.warm_rank"] and warm[8:] == cmd[7:]
        )
        assert Path(warm[7]).is_dir()  # where the ranks leave their codes
        assert warm_env[warm_rank.SERVER_ENV].endswith("ranks.sock")
        again, _ = rank_server.warm_torchrun(cmd, {**env, "AORTA_FRESH_RUN": "2/3"}, str(tmp_path))
        assert len(started) == 1 and again[7] != warm[7]  # one server for the runs; a folder each
        assert "AORTA_FRESH_RUN" not in started[0]  # what differs run to run is not the server's
    finally:
        rank_server.close_servers()


def test_aorta_ab_refuses_a_wrong_aorta_rank_start_before_any_run(tmp_path, capsys):
    code = main(["ab", "--a", "", "--b", "AORTA_RANK_START=warm", "--out", str(tmp_path / "ab"), "--", "x"])
    assert code == 2
    assert "AORTA_RANK_START='warm'" in capsys.readouterr().err
    assert not (tmp_path / "ab").exists()
