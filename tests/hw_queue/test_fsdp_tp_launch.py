"""fsdp_tp under a launcher: refused without a process group when torchrun asked for several ranks; the
known-answer test's shard at any size; the fsdp_tp_ranks proof's table of every rank's round."""

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


def test_the_ranks_table_shows_every_rank_median_and_their_spread(tmp_path):
    from scripts.gpu import fsdp_tables

    bench = {
        "name": "test_fsdp_tp[streams4-bf16]",
        "extra_info": {
            "metrics": {"samples_per_s": {"value": 1.5e5}},
            "workload_info": {"comm": "collectives", "world_size": 2},
            "per_rank": [{"rank": 0, "device_ms_per_iteration": [1.0, 1.2, 1.1]},
                         {"rank": 1, "device_ms_per_iteration": [2.0, 2.4, 2.2]}],
        },
    }  # fmt: skip
    (tmp_path / "w2_r1.json").write_text(json.dumps({"benchmarks": [bench]}))
    header, _, row = fsdp_tables.tp_ranks(tmp_path, {})
    assert row.split() == [
        "w2_r1",
        "test_fsdp_tp[streams4-bf16]",
        "collectives",
        "1.10",
        "2.20",
        "2",
        "1.5e+05",
    ]
