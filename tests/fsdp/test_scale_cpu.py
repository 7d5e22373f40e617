"""Across launchers on CPU (gloo): scripts/gpu/fsdp_two_launchers.sh with two torchrun launchers of one rank
each, meeting through a c10d rendezvous on localhost; the paths two nodes take (rendezvous, the store's
control plane, rank agreement, gathering to rank 0)."""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu" / "fsdp_two_launchers.sh"


@pytest.mark.slow  # two launchers, one FSDP scenario on gloo: about 50 s on two cores
def test_two_launchers_run_one_job_and_rank_0_records_both_ranks(tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OUT": str(tmp_path),
        "DEVICE": "cpu",
        "NPROC": "1",
        "SELECT": "baseline",
        "OMP_NUM_THREADS": "1",
        "LIMIT": "200",
    }
    proc = subprocess.run(
        ["bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240
    )
    logs = "".join(p.read_text()[-2000:] for p in sorted(tmp_path.glob("two_launchers_node*.log")))
    assert proc.returncode == 0, proc.stdout + logs
    assert "node0 rc 0, node1 rc 0" in proc.stdout
    (bench,) = json.loads((tmp_path / "two_launchers.json").read_text())["benchmarks"]
    e = bench["extra_info"]
    assert e["world_size"] == 2 and e["comm_library"] == "gloo"
    assert [r["rank"] for r in e["per_rank"]] == [0, 1]
    assert all(r["host"]["hostname"] and r["host"]["cpu_count"] >= 1 for r in e["per_rank"])
    assert [r["rank"] for r in e["rank_evidence"]] == [0, 1]
    jsonl = sorted(p.name for p in (tmp_path / "artifacts_two_launchers").glob("rank_*_metrics.jsonl"))
    assert jsonl == ["rank_0_metrics.jsonl", "rank_1_metrics.jsonl"]
