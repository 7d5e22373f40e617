"""A CPU run of the rag_pipeline, graph_subgraphs, async_dataload, zero_offload, torch_compile and
copy_compute_overlap benchmark files, and what lands in the JSON."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from run_once import once

from aorta import stats

pytestmark = pytest.mark.slow  # runs six benchmark files in a pytest subprocess

REPO = Path(__file__).resolve().parents[2]
FILES = [
    "rag_pipeline",
    "graph_subgraphs",
    "async_dataload",
    "zero_offload",
    "torch_compile",
    "copy_compute_overlap",
]


@pytest.fixture(scope="module")
def bench_run(pytestconfig, tmp_path_factory):
    return once(pytestconfig, tmp_path_factory, "pipeline-copy", _bench_run)  # one run per session


def _bench_run(folder):
    out = folder / "run.json"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    paths = [str(REPO / "benchmarks" / "hw_queue" / f"test_{name}.py") for name in FILES]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *paths,
            "--aorta-streams=1,4",
            "--aorta-rounds=2",
            "--aorta-warmup=0",
            "--aorta-copy-mb=0.5",
            f"--benchmark-json={out}",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rs",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return proc, json.loads(out.read_text()) if out.exists() else None


def test_every_file_passes_and_graph_mode_skips_on_cpu(bench_run):
    proc, data = bench_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "graph_subgraphs: CUDA/HIP graphs need a GPU" in proc.stdout
    names = {b["name"] for b in data["benchmarks"]}
    for name in FILES:
        runs = [n for n in names if n.startswith(f"test_{name}[")]
        assert len(runs) == 2, (name, sorted(names))  # 1 and 4 streams (graph_subgraphs: eager only)
    assert not any("graph" in n.split("[")[1] for n in names if n.startswith("test_graph_subgraphs["))


def test_json_holds_each_workloads_headline_and_figures(bench_run):
    _, data = bench_run
    by_workload = {}
    for b in data["benchmarks"]:
        extra = b["extra_info"]
        assert extra["headline_metric"] in extra["metrics"], b["name"]
        assert b["stats"]["rounds"] == 2
        headline = extra["metrics"][extra["headline_metric"]]
        assert len(headline["samples"]) == 2 and min(headline["samples"]) > 0, b["name"]
        assert headline["value"] == pytest.approx(stats.median(headline["samples"])), b["name"]
        assert b["stats"]["median"] == pytest.approx(stats.median(extra["device_ms_per_iteration"]) / 1e3)
        # every stream asked for (1 or 4) ran the work its workload declares (the launch log on CPU)
        (check,) = extra["stream_work"]["checks"]
        assert check["ok"] and check["streams_with_work"] == extra["streams_requested"] in (1, 4), b["name"]
        by_workload.setdefault(extra["workload"], []).append(extra)
    assert set(by_workload) == set(FILES)
    ccos = by_workload["copy_compute_overlap"]
    for e in ccos:
        m = {k: v["value"] for k, v in e["metrics"].items()}
        assert m["saving_ms"] == pytest.approx(m["serial_ms"] - m["iteration_ms"])
        assert m["saving_ratio"] == pytest.approx(m["saving_ms"] / m["serial_ms"])
        assert e["workload_info"]["copy_mb"] == 0.5 and e["workload_info"]["copy_bytes"] == 1 << 19
    for e in by_workload["torch_compile"]:
        assert e["metrics"]["compile_s"]["value"] > 0 and e["metrics"]["compile_s"]["unit"] == "s"
