"""fsdp_tp under a launcher: refused without a process group when torchrun asked for several ranks; the
wrapper script imports this checkout's aorta without installing; the known-answer test's shard at any size."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aorta.hw_queue.workloads.fsdp_tp import _world

REPO = Path(__file__).resolve().parents[2]


def test_world_size_from_torchrun_without_a_group_is_refused_not_copied():
    with pytest.raises(ValueError, match=r"WORLD_SIZE=4 .*no process group"):
        _world({"WORLD_SIZE": "4"})


def test_one_process_keeps_the_labelled_copies():
    assert _world({"WORLD_SIZE": "1"}) == (1, 0, None)
    assert _world({}) == (1, 0, None)


def test_wrapper_script_imports_this_checkout_without_installing(tmp_path):
    code = (
        "import runpy, sys; sys.argv=['x']; "
        f"g = runpy.run_path({str(REPO / 'scripts/gpu/fsdp_tp_collectives.py')!r}, run_name='probe'); "
        "import aorta; print(aorta.__file__)"
    )
    # -P: the current folder is not put on sys.path, as when torchrun runs a script from elsewhere
    proc = subprocess.run([sys.executable, "-P", "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()).resolve().is_relative_to(REPO / "aorta")


def test_wrapper_lines_name_comm_and_world():
    from importlib import util

    spec = util.spec_from_file_location("wrapper", REPO / "scripts/gpu/fsdp_tp_collectives.py")
    mod = util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    data = {
        "benchmarks": [
            {
                "name": "test_fsdp_tp[streams4-bf16]",
                "extra_info": {
                    "metrics": {"samples_per_s": {"value": 1.5e5}},
                    "workload_info": {"comm": "collectives", "world_size": 4},
                    "per_rank_median_ms": [1.0, 1.2, 1.1, 1.0],
                    "per_rank_spread": 1.2,
                    "streams_requested": 4,
                    "mode": "gpu",
                    "gpu_mode": "launch_hold",
                },
            }
        ]
    }
    (line,) = mod.lines(json.loads(json.dumps(data)))
    assert (
        line.startswith("streams=4 mode=launch_hold comm=collectives world=4 samples/s=150000.0")
        and "[1.0, 1.2, 1.1, 1.0]" in line
        and line.endswith("spread=1.2")
    )


def test_known_answer_gathers_the_same_bytes_at_every_world_size():
    from importlib import util

    spec = util.spec_from_file_location("ka", REPO / "benchmarks/fsdp/test_overlap_known_answer.py")
    mod = util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.shard_numel(2) == 16 * 1024 * 1024
    assert mod.shard_numel(4) == 8 * 1024 * 1024
    assert mod.shard_numel(8) * 8 == mod.shard_numel(2) * 2
    with pytest.raises(ValueError, match="at least two ranks"):
        mod.shard_numel(1)


@pytest.mark.slow  # torchrun, two gloo ranks: about 20 s
def test_torchrun_pytest_fsdp_tp_records_collectives_from_every_rank(tmp_path):
    import os

    out = tmp_path / "tp.json"
    cmd = [
        *(sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"),
        *("-m", "pytest", "benchmarks/hw_queue/test_fsdp_tp.py", "-k", "streams2-bf16", "-p", "no:randomly"),
        *("--aorta-device", "cpu", "--aorta-streams", "2", "--aorta-rounds", "3", f"--benchmark-json={out}"),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (bench,) = json.loads(out.read_text())["benchmarks"]
    e = bench["extra_info"]
    assert e["comm"] == "collectives" and e["workload_info"]["world_size"] == 2
    assert [r["rank"] for r in e["per_rank"]] == [0, 1]
    assert all(len(r["device_ms_per_iteration"]) == 3 for r in e["per_rank"])
    medians = e["per_rank_median_ms"]
    assert e["per_rank_spread"] == pytest.approx(max(medians) / min(medians))
