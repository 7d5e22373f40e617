"""Nothing saved is lost, and a save that would be refused is refused before the run (issue 24: cases 2, 3,
6, 7, 18, 20): two savers at once keep both runs, a baseline is one machine, a save refused at the end is
refused up front instead, an unwritable ``$GITHUB_STEP_SUMMARY`` is named before any benchmark runs, and a
temp file a killed save left is removed."""

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_gate_bad_input import a_file, nothing_ran
from test_gate_offline import H100, bench, run
from test_gate_plugin import run as run_pytest
from test_gate_plugin import saved

from aorta.cli import main
from aorta.exit_codes import EXIT_MISMATCH
from aorta.gate.baselines import baseline as bl
from aorta.record.run_samples import RUNS_KEY

REPO = Path(__file__).resolve().parents[2]
USAGE = pytest.ExitCode.USAGE_ERROR


# ------------------------------------------------------------------------------ 2. two savers at once
SAVER = textwrap.dedent(
    """
    import os, sys, time
    sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests/gate"]
    from test_gate_offline import bench, run
    from aorta.gate.baselines import baseline as bl

    load = bl.load_run
    def slow_load(path):  # widen the read-modify-write window: both savers read before either writes
        doc = load(path)
        time.sleep(0.5)
        return doc
    bl.load_run = slow_load
    open(os.path.join(sys.argv[3], f"ready{sys.argv[4]}"), "w").close()  # imported: waiting for the start
    while not os.path.exists(os.path.join(sys.argv[3], "go")):
        time.sleep(0.01)
    path, n = bl.save_baseline(run([bench("a", 10.0, seed=int(sys.argv[4]))]), sys.argv[2], "base", {})
    print(n)
    """
)


def _slow_load(path):
    """``bl.load_run`` that waits after it reads: both savers read before either writes."""
    doc = _LOAD(path)
    time.sleep(0.5)
    return doc


_LOAD = bl.load_run


def _forked_saver(folder: Path, start, seed: int, said) -> None:
    """SAVER in a process forked from this one (multiprocessing's fork: nothing imported again)."""
    bl.load_run = _slow_load  # in the forked process only
    start.wait(60)
    _, n = bl.save_baseline(run([bench("a", 10.0, seed=seed)]), folder, "base", {})
    said.put(n)


def _save_forked(tmp_path: Path) -> list[int]:
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    start, said = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_forked_saver, args=(tmp_path, start, seed, said)) for seed in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0], "a saver failed"
    return [said.get(timeout=5) for _ in procs]


def _save_in_children(tmp_path: Path) -> list[int]:
    script = tmp_path / "saver.py"
    script.write_text(SAVER)
    signals = tmp_path / "signals"
    signals.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(REPO), str(tmp_path), str(signals), str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in (1, 2)
    ]
    deadline = time.monotonic() + 60  # both imported and waiting, however loaded the machine: then both start
    while not all((signals / f"ready{seed}").exists() for seed in (1, 2)) and time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.01)
    (signals / "go").touch()
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    return [int(o.strip()) for o, _ in outs]


@pytest.mark.parametrize("how", ["forked", pytest.param("python", marks=pytest.mark.slow)])
def test_two_processes_saving_one_baseline_at_once_keep_both_runs(tmp_path, how):
    """Two savers, each a process of its own: forked from this one in the fast tier, two Pythons started afresh
    (each importing aorta) in the slow tier."""
    path, _ = bl.save_baseline(run([bench("a", 10.0)]), tmp_path, "base", {})
    said = _save_forked(tmp_path) if how == "forked" else _save_in_children(tmp_path)
    assert sorted(said) == [2, 3]  # the second waited and added to the first
    assert len(json.loads(path.read_text())["aorta_baseline"][RUNS_KEY]) == 3


def test_a_temp_file_left_by_a_save_killed_mid_write_is_removed_by_the_next_save(tmp_path):
    path, _ = bl.save_baseline(run([bench("a", 10.0)]), tmp_path, "base", {})
    left = path.with_name(f".{path.name}.0123456789ab.tmp")
    left.write_text('{"half a')
    bl.save_baseline(run([bench("a", 10.0, seed=2)]), tmp_path, "base", {})
    assert not left.exists()


# ------------------------------------------------------------------------------ 3. one machine per baseline
A100 = {"gpu_name": "NVIDIA A100-SXM4-80GB"}


def test_each_stored_run_records_its_machine(tmp_path):
    path, _ = bl.save_baseline(run([bench("a", 10.0)]), tmp_path, "base", {})
    entry = json.loads(path.read_text())["aorta_baseline"][RUNS_KEY][0]
    assert entry["machine"] == {
        "backend": "cuda",
        "gpu_name": H100["gpu_name"],
        "gpu_count": 1,
        "host": None,
        "id": "",  # no GPU UUID or host name in this record
    }


def test_saving_onto_a_baseline_of_another_gpu_model_is_refused_naming_both(tmp_path):
    other, _ = bl.save_baseline(run([bench("a", 10.0)], **A100), tmp_path, "base", {})
    # the A100's baseline copied where the H100 keeps its own (a shared folder, a copy by hand)
    mine = bl.baseline_path(tmp_path, run([]), "base")
    mine.parent.mkdir(parents=True)
    mine.write_bytes(other.read_bytes())
    with pytest.raises(bl.MachineChanged) as exc:
        bl.save_baseline(run([bench("a", 10.0, seed=3)]), tmp_path, "base", {})
    assert "1x NVIDIA A100-SXM4-80GB (cuda)" in str(exc.value)
    assert "1x NVIDIA H100 80GB HBM3 (cuda)" in str(exc.value)
    assert "--aorta-replace-baseline" in str(exc.value)
    assert mine.read_bytes() == other.read_bytes()


def _on_ranks(world_size: int, device_ms: float, seed: int) -> dict:
    b = bench("fsdp_baseline", device_ms, seed=seed)
    b["extra_info"]["world_size"] = world_size
    return run([b])


def test_saving_a_run_of_another_world_size_is_refused_and_the_baseline_kept(tmp_path):
    path, _ = bl.save_baseline(_on_ranks(2, 80.0, seed=1), tmp_path, "fsdp", {})
    before = path.read_bytes()
    with pytest.raises(bl.MachineChanged) as exc:
        bl.save_baseline(_on_ranks(4, 90.0, seed=2), tmp_path, "fsdp", {})
    assert str(exc.value) == (
        f"{path}: world size differs: fsdp_baseline ran on 2 rank(s) in the baseline, 4 in this run (save one "
        "baseline per world size); save under another name, or pass --aorta-replace-baseline to start it afresh"
    )
    assert path.read_bytes() == before
    _, runs = bl.save_baseline(_on_ranks(2, 80.1, seed=3), tmp_path, "fsdp", {})  # the same world size adds
    assert runs == 2


def _mixed_baseline(tmp_path) -> Path:
    path, _ = bl.save_baseline(run([bench("a", 10.0)]), tmp_path, "base", {})
    path, _ = bl.save_baseline(run([bench("a", 10.2, seed=2)]), tmp_path, "base", {})
    doc = json.loads(path.read_text())
    doc["aorta_baseline"][RUNS_KEY][0]["machine"]["gpu_name"] = A100["gpu_name"]
    path.write_text(json.dumps(doc))
    return path


def test_comparing_with_a_baseline_that_mixes_machines_is_refused_naming_both(tmp_path, capsys):
    path = _mixed_baseline(tmp_path)
    cand = tmp_path / "cand.json"
    cand.write_text(json.dumps(run([bench("a", 10.0, seed=5)])))
    assert main(["compare", str(path), str(cand)]) == EXIT_MISMATCH
    err = capsys.readouterr().err
    assert "mixes machines: aorta_baseline.runs[0] was saved on 1x NVIDIA A100-SXM4-80GB (cuda)" in err
    assert "latest run on 1x NVIDIA H100 80GB HBM3 (cuda)" in err
    assert not (tmp_path / "cand.verdict.json").exists()


# ------------------------------------------------------------------------------ 6, 20. save refused up front
def _restack(path: Path, torch: str) -> None:
    doc = json.loads(path.read_text())
    doc["aorta_baseline"]["stack"]["torch"] = torch
    for entry in doc["aorta_baseline"][RUNS_KEY]:
        entry["stack"]["torch"] = torch
    doc["machine_info"]["aorta"]["torch"] = torch
    path.write_text(json.dumps(doc))


def test_a_save_onto_another_software_stack_is_refused_before_the_run_with_exit_13(bench_dir, monkeypatch):
    path = saved(bench_dir, monkeypatch)
    _restack(path, "0.0.1")
    before = path.read_bytes()
    r = run_pytest(bench_dir, "--aorta-save-baseline", "base")
    assert r.ret == 13, r.stdout.str() + r.stderr.str()
    out = r.stdout.str() + r.stderr.str()
    assert "--aorta-save-baseline base: refused before the run:" in out
    assert "torch: '0.0.1' -> " in out and "--aorta-replace-baseline" in out
    assert nothing_ran(r) and path.read_bytes() == before


def test_a_truncated_baseline_is_refused_before_the_run_saying_how_to_start_afresh(bench_dir, monkeypatch):
    path = saved(bench_dir, monkeypatch)
    path.write_text(path.read_text()[:100])
    r = run_pytest(bench_dir, "--aorta-save-baseline", "base")
    assert r.ret == USAGE, r.stdout.str()
    r.stderr.fnmatch_lines(
        [
            f"ERROR: --aorta-save-baseline base: the saved baseline cannot be added to: {path}*--aorta-replace-baseline*"
        ]
    )
    assert nothing_ran(r)
    r = run_pytest(bench_dir, "--aorta-save-baseline", "base", "--aorta-replace-baseline")
    assert r.ret == 0, r.stdout.str()


# ------------------------------------------------------------------------------ 7. $GITHUB_STEP_SUMMARY
def test_an_unwritable_step_summary_is_refused_before_the_run(bench_dir, monkeypatch):
    saved(bench_dir, monkeypatch)
    bad = os.path.join(a_file(bench_dir), "summary.md")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", bad)
    r = run_pytest(bench_dir, "--aorta-compare", "base")
    assert r.ret == USAGE, r.stdout.str()
    r.stderr.fnmatch_lines([f"ERROR: $GITHUB_STEP_SUMMARY {bad}: its folder * is a file, not a folder*"])
    assert nothing_ran(r)


def test_aorta_compare_refuses_an_unwritable_step_summary_before_any_verdict(tmp_path, monkeypatch, capsys):
    ref, cand = tmp_path / "ref.json", tmp_path / "cand.json"
    ref.write_text(json.dumps(run([bench("a", 10.0)])))
    cand.write_text(json.dumps(run([bench("a", 10.0, seed=2)])))
    (tmp_path / "adir").mkdir()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "adir"))
    assert main(["compare", str(ref), str(cand)]) == 2
    assert f"$GITHUB_STEP_SUMMARY {tmp_path / 'adir'}: is a folder" in capsys.readouterr().err
    assert not (tmp_path / "cand.verdict.json").exists()
