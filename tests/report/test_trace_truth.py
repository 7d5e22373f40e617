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
import sqlite3
from pathlib import Path

import amd_traces
import pytest
import rocpd_truth as rt
import trace_cases as cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_tiers import examples

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
        out[dev] = (len(ks), _union_ns(spans[False]), _union_ns(spans[True]))
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
            _ns(s["compute_busy_ms"]),
            _ns(s["comm_busy_ms"]),
        )
    return out


def _ns(ms: float) -> int:
    """A figure's ms as the integer ns it stands for: equal to the truth's ns, or wrong by at least 1 ns."""
    return round(ms * 1e6)


def _close(got: dict, want: dict) -> bool:
    return got == want  # to the ns: counts and union lengths exactly


@settings(
    max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
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


# --------------------------------------------------------------------------- the rocpd database (rocprofv3)
def _processes(truth: list[dict], rnd: random.Random, one_db: bool) -> list[rt.Process]:
    """The truth's ranks as rocprofv3 processes (pid 3000 + rank). A device is a GPU agent: in one database of
    several processes each has its own agents (ids unique in it); in a folder of per-process databases the
    ranks' agent ids repeat (two ranks on GPU 0 are agent 2 of each). On several GPUs, the first kernel is run
    on every GPU too, identical but for its agent (and its correlation id); kernels are written twice at
    random, under new row ids; a process of one GPU has copies that name no agent, one of several GPUs copies
    that name their GPU end; some hipLaunchKernel calls have no kernel."""
    out = []
    for rank, devices in enumerate(truth):
        agent = {dev: 2 + dev + (8 * rank if one_db else 0) for dev in devices}
        kernels = [
            rt.Kernel(agent[dev], T0_NS * 1000 + s, T0_NS * 1000 + s + d, COMM if comm else "gemm", stream)
            for dev, ks in sorted(devices.items())
            for s, d, comm, stream in ks
        ]
        if len(devices) > 1:
            first = kernels[0]
            kernels += [rt.Kernel(a, first.start_ns, first.end_ns, first.name, first.stream)
                        for a in sorted(agent.values()) if a != first.agent]  # fmt: skip
        copies = []
        for _ in range(rnd.randint(0, 3)):
            s = T0_NS * 1000 + rnd.randint(0, 50_000)
            gpu = rnd.choice(sorted(agent.values())) if len(devices) > 1 else None
            copies.append(rt.Copy(gpu, s, s + rnd.randint(0, 5_000), rnd.choice((rt.TO_DEVICE, rt.TO_HOST))))
        twice = {i for i in range(len(kernels)) if rnd.random() < 0.3}
        out.append(rt.Process(3000 + rank, kernels, copies, lost_launches=rnd.randint(0, 2), twice=twice))
    return out


def _rocpd_expected(processes: list[rt.Process]) -> dict:
    """(pid, agent) -> the figures of the truth, in ns: kernels, compute, comm, copies, copy busy, window,
    launches without a kernel (on the process's first GPU, as said), duplicates, per queue (kernels, busy)."""
    out = {}
    for p in processes:
        agents = sorted({k.agent for k in p.kernels}, key=str)
        for agent in agents:
            ks = [k for k in p.kernels if k.agent == agent]
            cs = [c for c in p.copies if c.agent in (agent, None)]
            spans = [(k.start_ns, k.end_ns) for k in ks] + [(c.start_ns, c.end_ns) for c in cs]
            queues = sorted(
                (
                    sum(k.stream == q for k in ks),
                    _union_ns([(k.start_ns, k.end_ns) for k in ks if k.stream == q]),
                )
                for q in {k.stream for k in ks}
            )
            out[(p.pid, agent)] = (
                len(ks),
                _union_ns([(k.start_ns, k.end_ns) for k in ks if k.name != COMM]),
                _union_ns([(k.start_ns, k.end_ns) for k in ks if k.name == COMM]),
                len(cs),
                _union_ns([(c.start_ns, c.end_ns) for c in cs]),
                max(e for _, e in spans) - min(s for s, _ in spans),
                p.lost_launches if agent == agents[0] else 0,
                len(p.twice),
                queues,
            )
    return out


def _rocpd_read(result: dict) -> dict:
    out = {}
    for e in result["ranks"]:
        (s,) = e["steps"]
        queues = sorted((q["kernels"], _ns(q["busy_ms"])) for q in e["hardware_queues"])
        out[(e["process"], e["device"])] = (
            e["kernels"],
            _ns(s["compute_busy_ms"]),
            _ns(s["comm_busy_ms"]),
            s["copy_count"],
            _ns(s["copy_busy_ms"]),
            _ns(s["window_ms"]),
            e["launches_without_kernel"],
            e["duplicates_dropped"]["device_ops"],
            queues,
        )
    return out


@settings(
    max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(truth=truths, seed=st.integers(0, 2**16), one_db=st.booleans())
def test_figures_of_a_generated_rocpd_database_are_the_truth_to_the_ns(tmp_path_factory, truth, seed, one_db):
    rnd = random.Random(seed)
    folder = tmp_path_factory.mktemp("rocpd")
    processes = _processes(truth, rnd, one_db)
    if one_db:
        path = rt.write(folder / "results.db", processes, rnd)
    else:
        path = folder / "host"
        path.mkdir()
        for p in processes:
            rt.write(path / f"{p.pid}_results.db", [p], rnd)
    got = trace_figures.figures([path])
    assert [e["reader"] for e in got["ranks"]] == ["rocpd"] * len(got["ranks"])
    assert _rocpd_read(got) == _rocpd_expected(processes)
    assert [e["rank"] for e in got["ranks"]] == list(
        range(len(got["ranks"]))
    )  # one rank a timeline, pid order


def test_the_generated_rocpd_database_has_the_tables_and_views_of_rocprofv3s(tmp_path):
    """Every table the writer fills has the real database's columns in their order, under a uuid-suffixed
    name with the unsuffixed view over it (the sample of ../shared/amd_traces; skipped where absent)."""
    if not cases.ROCPD_SAMPLES.is_file():
        pytest.skip(amd_traces.absent(cases.ROCPD_SAMPLES))
    real = sqlite3.connect(f"{cases.ROCPD_SAMPLES.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    mine = sqlite3.connect(rt.write(tmp_path / "t.db", [rt.Process(1, [rt.Kernel(2, 10, 20, "k", 0)])],
                                    random.Random(0)))  # fmt: skip

    def layout(con: sqlite3.Connection) -> dict:
        views = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'view'")}
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        out = {}
        for table in tables:
            base = table[: -len(rt.UUID)]
            if base in rt.SCHEMA:
                out[base] = ([r[1] for r in con.execute(f"PRAGMA table_info(`{table}`)")], base in views)
        return out

    want = layout(real)
    assert set(want) == set(rt.SCHEMA)
    assert layout(mine) == want
