"""Running a sweep: the manifest, a failing and a timed-out cell, resume, --force, refusals before the first
cell. The cells run a small scripted command (milliseconds each); one slow test runs a real benchmark."""

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aorta.cli import main
from aorta.sweep import manifest as mf
from aorta.sweep.grid import expand, parse_axes
from aorta.sweep.runner import run_sweep

# Writes --benchmark-json (with the cell it was given) unless its cell is told to fail, hang, or exit 0 without it.
FAKE = textwrap.dedent(
    """
    import json, os, sys, time
    out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--benchmark-json="))
    threads = os.environ["NCCL_NTHREADS"]
    if threads == os.environ.get("FAKE_FAIL"):
        print("cell failed on purpose"); sys.exit(3)
    if threads == os.environ.get("FAKE_HANG"):
        time.sleep(60)
    if threads == os.environ.get("FAKE_SLOW"):
        time.sleep(0.3)
    if threads == os.environ.get("FAKE_NO_JSON"):
        sys.exit(0)  # exits 0 having written nothing
    with open(os.path.join(os.environ["FAKE_LOG"]), "a") as f:
        f.write(threads + "\\n")
    json.dump({"cell": json.loads(os.environ["AORTA_SWEEP_CELL"]), "argv": sys.argv[1:]}, open(out, "w"))
    """
)


@pytest.fixture
def fake(tmp_path):
    script = tmp_path / "fake_bench.py"
    script.write_text(FAKE)
    return [sys.executable, str(script)]


def sweep(folder, cmd, environ, *, force=False, timeout_s=None, grid=("NCCL_NTHREADS=64,128,256",)):
    axes = parse_axes(list(grid), [])
    cells = expand(axes)
    doc = mf.new_manifest("stackA", axes, cmd, {}, cells)
    old = mf.read_manifest(folder)
    if old is not None:
        mf.check_same_sweep(old, doc, folder)
        doc = mf.merge_cells(old, doc)
    folder.mkdir(exist_ok=True)
    mf.write_manifest(folder, doc)
    lines = []

    class Out:
        def write(self, s):
            lines.append(s)

        def flush(self):
            pass

    code = run_sweep(folder, doc, cells, cmd, force=force, timeout_s=timeout_s, environ=environ, out=Out())
    return code, mf.read_manifest(folder), "".join(lines)


def ran(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_every_cell_runs_in_its_own_environment_and_is_recorded(tmp_path, fake):
    log = tmp_path / "ran.txt"
    env = {"FAKE_LOG": str(log), "PATH": "/usr/bin:/bin", "FAKE_SLOW": "128"}
    code, doc, out = sweep(tmp_path / "sw", fake, env)
    assert code == 0
    assert ran(log) == ["64", "128", "256"]
    assert [c["status"] for c in doc["cells"]] == ["ok", "ok", "ok"]
    cell = doc["cells"][1]
    assert cell["env"] == {"NCCL_NTHREADS": "128"} and cell["exit_code"] == 0
    assert cell["started_at"] <= cell["ended_at"] and 0.3 <= cell["duration_s"] < 15  # the cell sleeps 0.3 s
    written = json.loads((tmp_path / "sw" / cell["benchmark_json"]).read_text())
    assert written["cell"] == {
        "sweep": "stackA",
        "cell": "NCCL_NTHREADS=128",
        "index": 1,
        "cells": 3,
        "settings": {"NCCL_NTHREADS": "128"},
        "attempt": cell["attempt"],  # this attempt's id, recorded in the manifest too
    }
    assert len(cell["attempt"]) == 12
    assert f"--aorta-artifacts={tmp_path / 'sw' / cell['dir']}/artifacts" in cell["command"]
    assert "cell 2 of 3 [NCCL_NTHREADS=128]: running" in out
    assert re.search(r"cell 2 of 3: ok in \d+s; elapsed", out) and "left" in out  # the cell sleeps 0.3 s
    assert "cell 3 of 3: ok" in out and "3 ok; manifest" in out


def test_a_failing_and_a_timed_out_cell_are_recorded_and_the_sweep_goes_on(tmp_path, fake):
    log = tmp_path / "ran.txt"
    env = {"FAKE_LOG": str(log), "FAKE_FAIL": "64", "FAKE_HANG": "128"}
    code, doc, out = sweep(tmp_path / "sw", fake, env, timeout_s=1.0)
    assert code == 1
    failed, hung, good = doc["cells"]
    assert (failed["status"], failed["exit_code"], failed["note"]) == ("failed", 3, "exit code 3")
    assert hung["status"] == "timeout" and hung["note"] == "stopped after --cell-timeout 1 s"
    assert 1.0 <= hung["duration_s"] < 15
    assert good["status"] == "ok" and ran(log) == ["256"]
    assert "  | cell failed on purpose" in out  # the log's tail is shown

    # rerun: only the cells not done run again (both pass now); the done one is kept as it was
    code, doc2, out = sweep(tmp_path / "sw", fake, {"FAKE_LOG": str(log)})
    assert code == 0 and ran(log) == ["256", "64", "128"]
    assert doc2["cells"][2] == good
    assert "cell 3 of 3 [NCCL_NTHREADS=256]: kept" in out


def test_a_cell_that_exits_0_without_writing_its_json_is_failed_and_run_again(tmp_path, fake):
    log = tmp_path / "ran.txt"
    code, doc, out = sweep(tmp_path / "sw", fake, {"FAKE_LOG": str(log), "FAKE_NO_JSON": "128"})
    assert code == 1
    silent = doc["cells"][1]
    assert (silent["status"], silent["exit_code"]) == ("failed", 0)
    assert silent["note"] == "exit code 0 but no benchmark JSON written (no benchmark ran?)"
    assert silent["benchmark_json"] is None
    code, doc, out = sweep(tmp_path / "sw", fake, {"FAKE_LOG": str(log)})  # not done: it runs again
    assert code == 0 and ran(log) == ["64", "256", "128"] and doc["cells"][1]["status"] == "ok"


def test_force_reruns_done_cells_and_a_failed_rerun_keeps_the_earlier_result(tmp_path, fake):
    log = tmp_path / "ran.txt"
    sweep(tmp_path / "sw", fake, {"FAKE_LOG": str(log)})
    first = mf.read_manifest(tmp_path / "sw")["cells"][0]
    result = tmp_path / "sw" / first["benchmark_json"]
    before = result.read_bytes()
    code, doc, out = sweep(tmp_path / "sw", fake, {"FAKE_LOG": str(log), "FAKE_FAIL": "64"}, force=True)
    assert code == 1
    assert ran(log) == ["64", "128", "256", "128", "256"]
    kept = doc["cells"][0]
    assert kept["status"] == "ok" and kept["ended_at"] == first["ended_at"] and result.read_bytes() == before
    assert kept["last_attempt"]["status"] == "failed"
    assert (tmp_path / "sw" / kept["last_attempt"]["dir"] / "log.txt").exists()
    assert "the earlier result is kept" in out
    assert doc["cells"][1]["status"] == "ok" and "last_attempt" not in doc["cells"][1]  # re-measured


def test_a_rerun_with_another_grid_into_the_same_folder_is_refused(tmp_path, fake):
    sweep(tmp_path / "sw", fake, {"FAKE_LOG": str(tmp_path / "ran.txt")})
    with pytest.raises(mf.SweepUsageError, match="holds another sweep .*grid: was"):
        sweep(tmp_path / "sw", fake, {}, grid=("NCCL_NTHREADS=64",))


def test_a_damaged_manifest_is_refused_naming_the_file(tmp_path):
    (tmp_path / mf.MANIFEST).write_text('{"aorta_sweep_schema": 1, "cells": [')
    with pytest.raises(mf.SweepUsageError, match="sweep.json: cannot be read as a sweep manifest"):
        mf.read_manifest(tmp_path)


CLI = ["sweep", "--grid", "NCCL_NTHREADS=256,512"]
AORTA_SWEEP = [sys.executable, "-m", "aorta", "sweep", "--grid"]  # in a process of its own


@pytest.mark.parametrize(
    "extra, cmd, words",
    [
        (
            ["--grid", "CUDA_DEVICE_MAX_CONNECTIONS=8,64"],
            ["pytest", "x"],
            "'64' is not a valid CUDA_DEVICE_MAX_CONNECTIONS",
        ),
        ([], ["python3", "x.py"], "a sweep runs pytest"),
        ([], ["no-such-pytest-binary", "-m", "pytest"], "not found on PATH"),
        (["--override", "training.steps=2,x"], ["pytest"], "--override training.steps=x"),
        (["--cell-timeout", "0"], ["pytest"], "--cell-timeout 0: give a number of seconds > 0"),
    ],
)
def test_bad_input_exits_2_before_any_cell(tmp_path, capsys, extra, cmd, words):
    out = tmp_path / "sw"
    assert main([*CLI, *extra, "--output", str(out), "--", *cmd]) == 2
    assert words in capsys.readouterr().err
    assert not out.exists()


def test_a_folder_holding_something_else_is_refused(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert main([*CLI, "--output", str(tmp_path), "--", "pytest", "x"]) == 2
    assert "folder is not empty and holds no sweep" in capsys.readouterr().err


@pytest.mark.slow  # a real benchmark per cell (about 4 s each on CPU)
def test_a_real_sweep_records_its_cell_in_each_run_and_resumes(tmp_path):
    out = tmp_path / "sw"
    cmd = [
        *AORTA_SWEEP,
        "NCCL_NTHREADS=256,512",
        "--output",
        str(out),
        "--label",
        "cpu",
        "--",
        sys.executable,
        "-m",
        "pytest",
        "benchmarks/hw_queue/test_tiny_kernel_stress.py",
        "--aorta-streams=1",
        "--aorta-rounds=3",
        "-p",
        "no:cacheprovider",
        "-q",
    ]
    root = Path(__file__).resolve().parents[2]
    first = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    doc = json.loads((out / "sweep.json").read_text())
    for i, threads in enumerate(("256", "512")):
        run = json.loads((out / doc["cells"][i]["benchmark_json"]).read_text())
        machine = run["machine_info"]["aorta"]
        assert machine["sweep_cell"]["settings"] == {"NCCL_NTHREADS": threads}
        assert machine["env"]["NCCL_NTHREADS"] == threads
    again = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and again.stdout.count(": kept (done") == 2, again.stdout


HANG = """
import os, time
def test_hang():
    open(os.environ["PID_FILE"], "w").write(str(os.getpid()))
    time.sleep(120)
"""


@pytest.mark.slow  # starts pytest in a cell and stops it
def test_sigterm_stops_the_running_cell_and_records_it(tmp_path):
    import os
    import signal
    import time

    (tmp_path / "test_hang.py").write_text(HANG)
    root = str(Path(__file__).resolve().parents[2])
    shutil.copy(Path(root) / "conftest.py", tmp_path)  # aorta's plugin (its options) without an install
    pid_file, out = tmp_path / "pid", tmp_path / "sw"
    cmd = [
        *AORTA_SWEEP,
        "NCCL_NTHREADS=256",
        "--output",
        str(out),
        "--",
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        str(tmp_path / "test_hang.py"),
    ]
    env = {**os.environ, "PID_FILE": str(pid_file), "PYTHONPATH": root}
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not pid_file.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pid_file.exists(), f"the cell never started: {proc.poll()} {list(out.rglob('log.txt'))}"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, err  # 143, as every command (issue 65)
    cell = json.loads((out / "sweep.json").read_text())["cells"][0]
    assert cell["status"] == "interrupted" and cell["ended_at"] is not None
    child = int(pid_file.read_text())
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)  # the cell's process was stopped with the sweep


def test_the_base_environment_leaves_out_the_grid_logging_and_visibility():
    from aorta.sweep.cli import base_environment

    environ = {
        "NCCL_NTHREADS": "64",
        "TORCH_NCCL_HIGH_PRIORITY": "1",
        "NCCL_DEBUG": "INFO",
        "CUDA_VISIBLE_DEVICES": "2,3",
        "HOME": "/root",
    }
    axes = parse_axes(["NCCL_NTHREADS=256,512"], [])
    assert base_environment(environ, axes) == {"TORCH_NCCL_HIGH_PRIORITY": "1"}


def test_an_earlier_result_left_aside_by_a_killed_sweep_is_put_back(tmp_path, fake):
    log = tmp_path / "ran.txt"
    sweep(tmp_path / "sw", fake, {"FAKE_LOG": str(log)})
    cell = mf.read_manifest(tmp_path / "sw")["cells"][0]
    cell_dir = tmp_path / "sw" / cell["dir"]
    good = (cell_dir / "benchmark.json").read_bytes()
    # as a sweep killed with SIGKILL while re-running this cell (--force) leaves it
    cell_dir.rename(cell_dir.with_name(cell_dir.name + ".previous"))
    cell_dir.mkdir()
    (cell_dir / "benchmark.json").write_text("{partial")
    code, _, out = sweep(tmp_path / "sw", fake, {"FAKE_LOG": str(log)})
    assert code == 0 and "cell 1 of 3 [NCCL_NTHREADS=64]: kept" in out
    assert (cell_dir / "benchmark.json").read_bytes() == good
    assert not cell_dir.with_name(cell_dir.name + ".previous").exists()


def test_a_secret_in_a_grid_value_runs_in_its_cell_and_is_kept_nowhere_in_the_sweep_folder(tmp_path):
    # issue 65: a DSN's password swept as a grid value reaches the cell's run, never the manifest, a cell's
    # folder name, the record each run gets (AORTA_SWEEP_CELL) or the output; a rerun resumes the same sweep
    script = tmp_path / "dsn_bench.py"
    seen = tmp_path / "seen.txt"
    script.write_text(
        "import json, os, sys\n"
        "out = next(a.split('=', 1)[1] for a in sys.argv if a.startswith('--benchmark-json='))\n"
        f"open({str(seen)!r}, 'a').write(os.environ['MY_DSN'] + '\\n')\n"
        "json.dump({'cell': json.loads(os.environ['AORTA_SWEEP_CELL'])}, open(out, 'w'))\n"
    )
    grid = ("MY_DSN=postgresql://u:Hunter2pw@h/db,postgresql://u:Other9pw@h/db",)
    folder = tmp_path / "sw"
    code, doc, out = sweep(folder, [sys.executable, str(script)], {"PATH": "/usr/bin:/bin"}, grid=grid)
    assert code == 0 and [c["status"] for c in doc["cells"]] == ["ok", "ok"]
    assert seen.read_text().split() == ["postgresql://u:Hunter2pw@h/db", "postgresql://u:Other9pw@h/db"]
    kept = [str(p) for p in folder.rglob("*")] + [p.read_text() for p in folder.rglob("*") if p.is_file()]
    assert not [k for k in kept + [out] if "Hunter2pw" in k or "Other9pw" in k]
    assert doc["cells"][0]["env"] == {"MY_DSN": "postgresql://u:***@h/db"}
    assert doc["cells"][0]["dir"] != doc["cells"][1]["dir"]  # the cells' folders stay apart
    code, doc, out = sweep(folder, [sys.executable, str(script)], {"PATH": "/usr/bin:/bin"}, grid=grid)
    assert code == 0 and out.count(": kept") == 2  # the same sweep, resumed: nothing run again
    assert len(seen.read_text().split()) == 2
