"""Traces generated from a known truth (ranks, devices, streams, duplicates, spellings of a device, a merge)
read by ``aorta trace figures``, compared with the truth they were generated from (issue 64).

The truth: per rank and device, kernels of known ns on streams, compute or RCCL. Written as Kineto traces (one per
rank, correlation ids repeated across ranks, a device as ``args.device`` int, string or absent with the pid as
the device, some events written twice) and as rocprofv3 CSV (a host folder, one process per rank, ``Agent N``);
read as they are, and the Kineto traces merged by ``aorta trace merge`` and read back. Every timeline's kernel
count and compute / comm busy must be the truth's (an independent union on integer ns), and the merge's
figures its inputs', exactly.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aorta.cli import main
from aorta.report import trace_figures

T0_NS = 1_700_000_000_000_000  # 1.7e12 µs: past 2^40 µs, where only the text's digits hold the ns
COMM = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"

kernel = st.tuples(st.integers(0, 50_000), st.integers(1, 20_000), st.booleans(), st.integers(0, 2))
truths = st.lists(  # ranks -> devices -> kernels (start ns from T0, dur ns, comm?, stream)
    st.dictionaries(st.integers(0, 3), st.lists(kernel, min_size=1, max_size=8), min_size=1, max_size=2),
    min_size=1,
    max_size=3,
)


def _union_ns(spans: list[tuple[int, int]]) -> int:
    total, end = 0, None
    for s, e in sorted(spans):
        if end is None or s > end:
            total, end = total + e - s, e
        elif e > end:
            total, end = total + e - end, e
    return total


def _expected(devices: dict) -> dict:
    out = {}
    for dev, ks in devices.items():
        spans = {c: [(s, s + d) for s, d, comm, _ in ks if comm == c] for c in (False, True)}
        out[dev] = (len(ks), _union_ns(spans[False]) / 1e6, _union_ns(spans[True]) / 1e6)
    return out


def _us(ns: int) -> float:
    return ns / 1e3  # its repr is the ns' digits: the reader takes them from the text


def _kineto(rank: int, devices: dict, rnd: random.Random) -> dict:
    events, corr = [], 0
    events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 50, "tid": 1,
                   "ts": _us(T0_NS - 1_000_000), "dur": 900.0})  # fmt: skip
    for dev, ks in sorted(devices.items()):
        for start, dur, comm, stream in ks:
            corr += 1  # per process: every rank repeats them
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 50, "tid": 1,
                           "ts": _us(T0_NS - 999_000 + corr), "dur": 0.5, "args": {"correlation": corr}})  # fmt: skip
            args: dict = {"stream": stream, "correlation": corr}
            spelling = rnd.choice(("int", "str", "pid"))
            if spelling != "pid":
                args["device"] = dev if spelling == "int" else str(dev)
            ev = {"ph": "X", "cat": "kernel", "name": COMM if comm else "gemm", "pid": dev, "tid": stream,
                  "ts": _us(T0_NS + start), "dur": dur / 1e3, "args": args}  # fmt: skip
            events.append(ev)
            if rnd.random() < 0.3:  # written twice, its keys in another order
                events.append(dict(reversed(list(ev.items()))))
    rnd.shuffle(events)
    return {
        "distributedInfo": {"rank": rank, "world_size": 8},
        "baseTimeNanoseconds": 1_760_000_000_000_000_000,
        "traceEvents": events,
    }


def _csv(folder: Path, pid: int, devices: dict) -> None:
    lines = ['"Kind","Agent_Id","Queue_Id","Stream_Id","Kernel_Name","Correlation_Id","Start_Timestamp",'
             '"End_Timestamp"']  # fmt: skip
    corr = 0
    for dev, ks in sorted(devices.items()):
        for start, dur, comm, stream in ks:
            corr += 1
            name = COMM if comm else "gemm"
            s = T0_NS * 1000 + start  # rocprofv3's ns
            lines.append(f'"KERNEL_DISPATCH","Agent {dev}",{stream},{stream},"{name}",{corr},{s},{s + dur}')
    (folder / f"{pid}_kernel_trace.csv").write_text("\n".join(lines) + "\n")


def _read(result: dict) -> dict:
    """(rank or process, device) -> (kernels, compute ms, comm ms) of the one step or window."""
    out = {}
    for e in result["ranks"]:
        (s,) = e["steps"]
        who = e.get("merged_rank", e.get("process", e["path"]))
        out[(who, e.get("device"))] = (
            sum(s["kernel_count_by_kind"].values()),
            s["compute_busy_ms"],
            s["comm_busy_ms"],
        )
    return out


def _close(got: dict, want: dict) -> bool:
    return got.keys() == want.keys() and all(
        g[0] == w[0] and abs(g[1] - w[1]) < 1e-9 and abs(g[2] - w[2]) < 1e-9 for g, w in zip(
            (got[k] for k in sorted(got, key=str)), (want[k] for k in sorted(got, key=str))
        )
    )  # fmt: skip


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(truth=truths, seed=st.integers(0, 2**16))
def test_figures_of_generated_traces_and_of_their_merge_are_the_truth(tmp_path_factory, truth, seed):
    rnd = random.Random(seed)
    folder = tmp_path_factory.mktemp("truth")
    paths = []
    for rank, devices in enumerate(truth):
        paths.append(folder / f"rank{rank}.json")
        paths[-1].write_text(json.dumps(_kineto(rank, devices, rnd)))
    want = {(str(p), dev): v for p, devices in zip(paths, truth) for dev, v in _expected(devices).items()}
    inputs = trace_figures.figures(paths)
    assert _close(_read(inputs), want)

    merged = folder / "merged.json"
    assert main(["trace", "merge", *map(str, paths), "--output", str(merged)]) == 0
    back = trace_figures.figures([merged])
    assert _close(
        _read(back), {(r, dev): v for r, devices in enumerate(truth) for dev, v in _expected(devices).items()}
    )
    assert [e["steps"] for e in back["ranks"]] == [e["steps"] for e in inputs["ranks"]]  # exactly

    host = folder / "host"
    host.mkdir()
    for rank, devices in enumerate(truth):
        _csv(host, 1000 + rank, devices)
    rocprof = trace_figures.figures([host])
    want_csv = {
        (1000 + r, dev): v for r, devices in enumerate(truth) for dev, v in _expected(devices).items()
    }
    assert _close(_read(rocprof), want_csv)
