"""What ``aorta trace merge`` writes, ``aorta trace figures`` reads back exactly, as ranks (issue 64).

Before: the merge set pid = rank and the reader split by ``args.device`` only, so two ranks that ran on the same
device index read as one timeline (1492 kernels a step, overlap 0.396, exit 0); their identical kernels were
dropped as duplicates; the merge moved times by a float µs shift (a Kineto ``ts`` of 3.7e12 µs lost its ns).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import amd_traces
import pytest
from run_once import once

from aorta.cli import main
from aorta.report import trace_figures, trace_merge

MI300X = "tracelens_mi300_resnet_act_checkpoint.json.gz"


def _without_paths(result: dict) -> dict:
    """The figures, less what names the file (the merge is one file, its inputs several)."""
    out = json.loads(json.dumps(result))
    for e in out["ranks"]:
        e.pop("path"), e.pop("merged_rank", None)
        e["note"] = (e["note"] or "").replace("; 3653 duplicated device ops dropped (each kept once)", "")
    out.pop("ranks_from")
    return out


def _two_ranks(path: Path, folder: Path) -> tuple[Path, Path]:
    """The MI300X trace as rank 0, and as rank 1 with its RCCL kernels 10% longer: two ranks on device 2 each."""
    raw = path.read_bytes()
    (folder / "rank0.json.gz").write_bytes(raw)
    doc = json.loads(gzip.decompress(raw))
    doc["distributedInfo"]["rank"] = 1
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel" and "nccl" in e.get("name", "").lower():
            e["dur"] = round(e["dur"] * 1.1, 3)
    (folder / "rank1.json").write_text(json.dumps(doc))
    return folder / "rank0.json.gz", folder / "rank1.json"


def _merge_read_back(folder: Path, path: Path) -> dict:
    two_ranks = _two_ranks(path, folder)
    merged, per_rank = folder / "merged.json", folder / "per_rank"
    args = ["trace", "merge", *map(str, two_ranks), "--output", str(merged), "--per-rank", str(per_rank)]
    code = main(args)
    files = sorted(per_rank.iterdir()) if per_rank.is_dir() else []
    return {
        "two_ranks": two_ranks,
        "code": code,
        "files": files,
        "inputs": trace_figures.figures(two_ranks),
        "back": trace_figures.figures([merged]),
        "per_rank": trace_figures.figures(files) if files else None,
    }


@pytest.fixture(scope="module", params=amd_traces.EVENTS)
def merge_read_back(request, pytestconfig, tmp_path_factory, amd_trace) -> dict:
    """The two ranks, one ``aorta trace merge --per-rank`` of them, and the figures of its inputs, of the merged
    file and of the per-rank folder: each reading of the real trace takes seconds, so all of it is made once per
    session, however many xdist workers run these tests (tests/run_once.py). ``--per-rank`` adds the folder after
    the merged file is written (aorta/report/cli.py): the merged file is the same with it or without it
    (test_a_per_rank_folder_leaves_the_merged_file_as_it_is). Made of the trace without its host ops in the fast
    tier (the same figures to the last bit: tests/amd_traces.py), of the trace as written in the slow tier."""
    path = amd_trace(MI300X, request.param)
    if not path.is_file():
        pytest.skip(f"{path} is absent: the real AMD traces live beside the checkout (../shared/amd_traces)")
    return once(
        pytestconfig, tmp_path_factory, f"trace-merge-{request.param}", lambda f: _merge_read_back(f, path)
    )


@pytest.fixture(scope="module")
def two_ranks(merge_read_back) -> tuple[Path, Path]:
    return merge_read_back["two_ranks"]


def test_figures_of_the_merge_equal_the_figures_of_its_inputs_exactly(merge_read_back):
    assert merge_read_back["code"] == 0
    inputs, back = merge_read_back["inputs"], merge_read_back["back"]
    assert [e["merged_rank"] for e in back["ranks"]] == [0, 1]
    assert [[s["kernel_count_by_kind"] for s in e["steps"]] for e in back["ranks"]] == [
        [s["kernel_count_by_kind"] for s in e["steps"]] for e in inputs["ranks"]
    ]
    assert [round(s["overlap_ratio"], 3) for e in back["ranks"] for s in e["steps"]] == [
        0.251, 0.249, 0.258, 0.239, 0.236, 0.246
    ]  # fmt: skip
    assert _without_paths(back) == _without_paths(inputs)  # every figure, to the last bit
    assert back["ranks"][0]["duplicates_dropped"] == {"device_ops": 0, "events": 0}


def test_the_merge_moves_times_in_integer_ns_and_keeps_each_ranks_identity(two_ranks):
    traces = trace_merge.load_rank_traces(list(two_ranks))
    merged = trace_merge.merge(traces)
    ranks = merged["otherData"]["aorta_merge"]["ranks"]
    assert {r: (v["pid"], v["distributedInfo"]["rank"], v["distributedInfo"]["world_size"]) for r, v in ranks.items()} == {
        "0": (0, 0, 8), "1": (1, 1, 8)
    }  # fmt: skip
    shift = ranks["0"]["shift_ns"]
    assert isinstance(shift, int)
    first = next(e for e in traces[0].events if e.get("cat") == "kernel")  # ts 3743411222894.405 µs
    moved = next(e for e in merged["traceEvents"] if e.get("cat") == "kernel" and e["pid"] == 0)
    assert round(moved["ts"] * 1000) == first["ts"].ns - shift  # the text's ns, less an integer
    assert moved["args"]["device"] == 2 and moved["pid"] == 0


def test_the_per_rank_folder_is_one_trace_per_rank_read_back_as_its_ranks(merge_read_back):
    assert merge_read_back["code"] == 0
    files = merge_read_back["files"]
    assert [f.name for f in files] == ["rank0.json", "rank1.json"]
    assert [json.loads(f.read_text())["distributedInfo"]["rank"] for f in files] == [
        0,
        1,
    ]  # as HTA reads ranks
    assert _without_paths(merge_read_back["per_rank"]) == _without_paths(merge_read_back["inputs"])


def _rank(rank: int, comm_dur: float) -> dict:
    """A small rank on device 0: a compute kernel and an all-reduce inside ProfilerStep#1, the same ids on
    every rank (correlation ids are per process)."""

    def kernel(name, ts, dur, corr):
        return {
            "ph": "X",
            "cat": "kernel",
            "name": name,
            "pid": 0,
            "tid": 7,
            "ts": ts,
            "dur": dur,
            "args": {"device": 0, "stream": 7, "correlation": corr},
        }

    def launch(ts, corr):
        return {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 100 + rank,
            "tid": 1,
            "ts": ts,
            "dur": 1,
            "args": {"correlation": corr},
        }

    return {
        "distributedInfo": {"rank": rank, "world_size": 2},
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
        "traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100 + rank, "tid": 1,
             "ts": 1000.0, "dur": 100.0},
            launch(1001.0, 1), launch(1002.0, 2),
            kernel("gemm", 1010.0, 40.0, 1),
            kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1020.0, comm_dur, 2),
        ],
    }  # fmt: skip


def test_two_ranks_on_one_device_index_read_back_as_two_timelines_not_one(tmp_path, capsys):
    paths = []
    for rank, comm in ((0, 40.0), (1, 60.0)):
        paths.append(tmp_path / f"r{rank}.json")
        paths[-1].write_text(json.dumps(_rank(rank, comm)))
    merged = tmp_path / "merged.json"
    assert main(["trace", "merge", *map(str, paths), "--output", str(merged)]) == 0
    back = trace_figures.figures([merged])
    # before: one timeline of 4 kernels, overlap of the union
    assert [e["steps"][0]["kernel_count_by_kind"]["compute"] for e in back["ranks"]] == [1, 1]
    assert [e["steps"][0]["overlap_ratio"] for e in back["ranks"]] == pytest.approx([30 / 40, 30 / 60])
    assert _without_paths(back) == _without_paths(trace_figures.figures(paths))


def test_identical_ranks_are_two_ranks_not_one_written_twice(tmp_path, capsys):
    paths = []
    for rank in (0, 1):
        paths.append(tmp_path / f"r{rank}.json")
        paths[-1].write_text(json.dumps(_rank(rank, 40.0) | {"distributedInfo": {"rank": rank}}))
        doc = json.loads(paths[-1].read_text())
        for e in doc["traceEvents"]:
            e["pid"] = 0 if e["cat"] == "kernel" else 100  # the same pids too: only the rank tells them apart
        paths[-1].write_text(json.dumps(doc))
    merged = tmp_path / "merged.json"
    assert main(["trace", "merge", *map(str, paths), "--output", str(merged)]) == 0
    back = trace_figures.figures([merged])
    assert [e["kernels"] for e in back["ranks"]] == [2, 2]
    assert back["ranks"][0]["duplicates_dropped"] == {"device_ops": 0, "events": 0}


def test_a_per_rank_folder_leaves_the_merged_file_as_it_is(tmp_path, capsys):
    paths = []
    for rank, comm in ((0, 40.0), (1, 60.0)):
        paths.append(tmp_path / f"r{rank}.json")
        paths[-1].write_text(json.dumps(_rank(rank, comm)))
    alone, beside = tmp_path / "alone.json", tmp_path / "beside.json"
    merge = ["trace", "merge", *map(str, paths)]
    assert main([*merge, "--output", str(alone)]) == 0
    assert main([*merge, "--output", str(beside), "--per-rank", str(tmp_path / "pr")]) == 0
    assert json.loads(beside.read_text()) == json.loads(alone.read_text())
