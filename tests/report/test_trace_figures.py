"""``aorta trace figures`` on the five real AMD traces (../shared/amd_traces, or AORTA_AMD_TRACES; skipped where
absent), against an independent computation written here with json and plain Python (no aorta import):

- a device op is an ``X`` event of ``cat`` ``kernel``, ``gpu_memcpy`` or ``gpu_memset``; its launch is the first
  ``cuda_runtime`` call with its ``args.correlation``; an op without a launch whose correlation id is below
  every launched op's was launched before the profiled window and belongs to no step;
- a step is a host ``ProfilerStep#N`` range (``user_annotation``); an op belongs to the step holding its launch;
  a trace without steps is one window; a step that launched nothing is left out;
- communication: a kernel whose name holds ``nccl``; copy: copies, memsets and the runtime's
  ``__amd_rocclr_`` kernels; compute: every other kernel; busy = length of the union; overlapped =
  |compute ∩ comm|; idle = first op start to last op end, less the union of every op.

Kernel counts exact, times within 1e-3 ms (the issue's bar).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import amd_traces
import pytest

from aorta.cli import main
from aorta.report import trace_figures

AMD_TRACES = amd_traces.folder()
TRACES = (
    "hta_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "rocm_aorta_smci350-zts-gtu-c6-25_200691.1758927066581847260.pt.trace.json",
    "tracelens_mi300_resnet_act_checkpoint.json.gz",
    "tracelens_mi300_ddp_resnet18_no_pool_train_resnet18.json.gz",
    "tracelens_mi210_gpu_only_trace.json.gz",
)
TOL_MS = 1e-3


def path_of(name: str) -> Path:
    path = AMD_TRACES / name
    if not path.is_file():
        pytest.skip(f"{path} is absent: the real AMD traces live beside the checkout (../shared/amd_traces)")
    return path


# ---------------------------------------------------------------------- the independent computation
def union(ivs):
    out = []
    for s, e in sorted(ivs):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length(ivs):
    return sum(e - s for s, e in union(ivs))


def both(a, b):
    return sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in union(a) for s2, e2 in union(b))


def expected_steps(path: Path) -> list[dict]:
    raw = path.read_bytes()
    events = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)["traceEvents"]
    launch = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {}):
            c = e["args"]["correlation"]
            launch[c] = min(e["ts"], launch.get(c, e["ts"]))
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    first = min(
        (e["args"]["correlation"] for e in ops if e["args"].get("correlation") in launch), default=None
    )
    steps = sorted(
        (int(e["name"].split("#")[1]), e["ts"], e["ts"] + e["dur"])
        for e in events
        if e.get("ph") == "X" and e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
    )
    if steps:
        groups = [[] for _ in steps]
        for e in ops:
            t = launch.get(e["args"].get("correlation"))
            if t is None:
                assert first is not None and e["args"]["correlation"] < first  # before the window (all here)
                continue
            for i, (_, s, end) in enumerate(steps):
                if s <= t < end:
                    groups[i].append(e)
    else:
        groups = [ops]
    out = []
    for ops_in in groups:
        if not ops_in:
            continue
        iv = {"comm": [], "copy": [], "compute": []}
        for e in ops_in:
            kind = (
                "copy"
                if e["cat"] != "kernel" or e["name"].startswith("__amd_rocclr_")
                else "comm"
                if "nccl" in e["name"].lower()
                else "compute"
            )
            iv[kind].append((e["ts"] / 1e3, (e["ts"] + e["dur"]) / 1e3))
        every = iv["comm"] + iv["copy"] + iv["compute"]
        comm = length(iv["comm"])
        out.append(
            {
                "kernels": sum(e["cat"] == "kernel" for e in ops_in),
                "compute_busy_ms": length(iv["compute"]),
                "comm_busy_ms": comm,
                "copy_busy_ms": length(iv["copy"]),
                "overlapped_ms": both(iv["compute"], iv["comm"]),
                "exposed_comm_ms": comm - both(iv["compute"], iv["comm"]),
                "idle_ms": max(e for _, e in every) - min(s for s, _ in every) - length(every),
            }
        )
    return out


@pytest.fixture(scope="module")
def figures_json(tmp_path_factory) -> dict:
    paths = [path_of(n) for n in TRACES]
    out = tmp_path_factory.mktemp("figures") / "figures.json"
    assert main(["trace", "figures", *map(str, paths), "--json", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.mark.slow  # reads every trace, 2995 + 2360 kernels among them: seconds
@pytest.mark.parametrize("index, name", list(enumerate(TRACES)))
def test_every_step_of_every_real_trace_equals_the_independent_computation(figures_json, index, name):
    rank = figures_json["ranks"][index]
    assert rank["path"].endswith(name)
    expected = expected_steps(path_of(name))
    assert len(rank["steps"]) == len(expected)
    for got, want in zip(rank["steps"], expected):
        assert sum(got["kernel_count_by_kind"].values()) == want["kernels"]
        for key in (
            "compute_busy_ms",
            "comm_busy_ms",
            "copy_busy_ms",
            "overlapped_ms",
            "exposed_comm_ms",
            "idle_ms",
        ):
            assert got[key] == pytest.approx(want[key], abs=TOL_MS), key


@pytest.mark.slow
def test_the_mi300x_figures_a_user_sees(figures_json):
    """The RCCL trace's three steps: 746 kernels each, overlap 0.251 / 0.249 / 0.258, and the GPU without any
    operation for about 0.09 ms a step (copies counted as copy time, not idle)."""
    mi300x = figures_json["ranks"][2]
    assert [sum(s["kernel_count_by_kind"].values()) for s in mi300x["steps"]] == [746, 746, 746]
    assert [round(s["overlap_ratio"], 3) for s in mi300x["steps"]] == [0.251, 0.249, 0.258]
    assert [round(s["idle_ms"], 2) for s in mi300x["steps"]] == [0.09, 0.08, 0.11]
    assert [s["linked_by"] for s in mi300x["steps"]] == [{"correlation": 895}] * 3
    assert mi300x["duplicates_dropped"] == {"device_ops": 0, "events": 0}
    assert mi300x["note"].endswith(
        "; the GPU ran behind the host (its copy of a step ends up to 21.641 ms after the host's)"
    )


def test_the_terminal_table_has_a_row_per_step_and_says_what_was_left_out(capsys):
    assert main(["trace", "figures", str(path_of(TRACES[0])), "--steps"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:9] == [
        "rank",
        "step",
        "kernels",
        "compute",
        "comm",
        "copy",
        "overlap",
        "exposed",
        "idle",
    ]
    assert lines[1].split()[:3] == ["0", "1", "14"]  # ProfilerStep#1: rows name the step's number
    assert lines[2].strip() == (
        "rank 0: left out of the per-step figures: 1 of 2 profiled steps, which launched no kernel (step [2]), "
        "rather than zeros (a kernel goes to the step holding its launch)"
    )


def test_an_unreadable_trace_is_one_line_naming_it_before_any_figure(tmp_path, capsys):
    bad = tmp_path / "rank1.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": null, "dur": 1}]}')
    assert main(["trace", "figures", str(path_of(TRACES[1])), str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"aorta trace figures: error: {bad}: event 0 (kernel 'k') has ts None, not a number\n"


def all_reduce_trace(path: Path, world_size: int | None = None) -> Path:
    """One rank's Kineto trace: one all-reduce of 1,000,000 floats (4 MB) in 1 ms, its group size unsaid; the
    world size in ``distributedInfo`` only where given."""
    kernel = {
        "ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 7,
        "ts": 1000.0, "dur": 1000.0,
        "args": {"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 1_000_000,
                 "Out msg nelems": 1_000_000, "stream": 7},
    }  # fmt: skip
    doc: dict = {"traceEvents": [kernel]}
    if world_size is not None:
        doc["distributedInfo"] = {"world_size": world_size}
    path.write_text(json.dumps(doc))
    return path


def test_a_trace_that_states_no_world_size_spans_the_ranks_given(tmp_path):
    # algbw 4 MB / 1 ms = 4 GB/s; busbw = algbw * 2(n-1)/n: 6 GB/s over the 4 files given, 7 where a trace says 8
    files = [all_reduce_trace(tmp_path / f"rank{r}.json") for r in range(4)]
    result = trace_figures.figures(files)
    assert [e["steps"][0]["algbw_gbps"]["all_reduce"] for e in result["ranks"]] == [pytest.approx(4.0)] * 4
    assert [e["steps"][0]["busbw_gbps"]["all_reduce"] for e in result["ranks"]] == [pytest.approx(6.0)] * 4
    stated = trace_figures.figures([all_reduce_trace(tmp_path / "r8.json", world_size=8), *files[1:]])
    assert stated["ranks"][0]["steps"][0]["busbw_gbps"]["all_reduce"] == pytest.approx(7.0)


def test_a_kineto_trace_of_two_gpus_gives_one_timeline_per_gpu(tmp_path, capsys):
    """One process driving GPUs 0 and 1 (args.device), each busy 0-4 ms on its stream 7: unioned they would read
    one GPU busy 0-6 ms; kept apart each is busy 4 ms of its own 4 ms window, idle 0."""

    def kernel(device: int, ts: float) -> dict:
        return {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": ts, "dur": 4000.0,
                "args": {"device": device, "stream": 7}}  # fmt: skip

    path = tmp_path / "two_gpus.json"
    path.write_text(json.dumps({"traceEvents": [kernel(0, 1000.0), kernel(1, 3000.0)]}))
    result = trace_figures.figures([path])
    assert [
        (r["device"], r["steps"][0]["compute_busy_ms"], r["steps"][0]["window_ms"]) for r in result["ranks"]
    ] == [
        (0, 4.0, 4.0),
        (1, 4.0, 4.0),
    ]
    assert result["across_ranks"]["reason"].endswith(
        "no collective in any of them (wait vs transfer is read from collectives): no figure across them"
    )
    assert main(["trace", "figures", str(path)]) == 0
    assert "rank 1: device 1 (one timeline per GPU)" in capsys.readouterr().out


def _launch(ts: float, corr: int) -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts, "dur": 5.0,
            "args": {"correlation": corr}}  # fmt: skip


def _on(device: int, ts: float, corr: int | None = None, cat: str = "kernel", name: str = "gemm") -> dict:
    args = {"device": device, "stream": 7, **({} if corr is None else {"correlation": corr})}
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": device,
        "tid": 7,
        "ts": ts,
        "dur": 1000.0,
        "args": args,
    }


def test_a_one_gpu_trace_whose_copy_and_memset_name_no_device_is_one_timeline(tmp_path):
    """Kineto writes no ``args.device`` on some copies and memsets: on a trace of one GPU they are that GPU's
    work (one rank, copy busy 2 ms), not a second timeline "unknown". Without a ``pid`` either (a GPU's
    ``pid`` is its device), they name none."""

    def no_device(event: dict) -> dict:
        return {**{k: v for k, v in event.items() if k != "pid"}, "args": {"stream": 7}}

    copy = no_device(_on(0, 2000.0, cat="gpu_memcpy", name="Memcpy HtoD"))
    memset = no_device(_on(0, 4000.0, cat="gpu_memset", name="Memset"))
    path = tmp_path / "one_gpu.json"
    path.write_text(json.dumps({"traceEvents": [_on(0, 1000.0), copy, memset]}))
    (rank,) = trace_figures.figures([path])["ranks"]
    assert (rank["device"], rank["ops"], rank["kernels"]) == (0, 3, 1)
    step = rank["steps"][0]
    assert (step["compute_busy_ms"], step["copy_busy_ms"], step["window_ms"]) == (1.0, 2.0, 4.0)


def test_identical_kernels_on_two_gpus_are_two_kernels_one_on_each_timeline(tmp_path):
    """The same kernel at the same time on the same stream number of GPUs 0 and 1 (a data-parallel step) is two
    kernels, none a duplicate of the other, whatever ``pid`` the writer gave them (here one): ``args.device``
    tells the GPU. Each GPU busy 1 ms; an op naming no device is on the GPU its ``pid`` is (Kineto's track of
    GPU 1), not a timeline of its own."""
    orphan = {**_on(1, 5000.0, cat="gpu_memset", name="Memset"), "args": {"stream": 7}}
    path = tmp_path / "twins.json"
    twins = [{**_on(device, 1000.0), "pid": 0} for device in (0, 1)]
    path.write_text(json.dumps({"traceEvents": [*twins, orphan]}))
    result = trace_figures.figures([path])
    got = [
        (r["device"], r["kernels"], r["ops"], r["duplicates_dropped"]["device_ops"]) for r in result["ranks"]
    ]
    assert got == [(0, 1, 1, 0), (1, 1, 2, 0)]
    assert [r["steps"][0]["compute_busy_ms"] for r in result["ranks"]] == [1.0, 1.0]
    assert "twins.json (2 devices)" in result["ranks_from"]


def test_launches_no_kernel_answers_on_a_two_gpu_trace_are_counted_once_with_the_first_gpu(tmp_path):
    """Launches 1 and 2 answered by a kernel on GPU 0 and on GPU 1; launch 3 by none (the profiler lost its
    kernel, whose device is therefore unknown): counted once, on GPU 0's timeline, never once per GPU."""
    events = [_launch(900.0, 1), _launch(950.0, 2), _launch(980.0, 3), _on(0, 1000.0, 1), _on(1, 1000.0, 2)]
    path = tmp_path / "lost.json"
    path.write_text(json.dumps({"traceEvents": events}))
    ranks = trace_figures.figures([path])["ranks"]
    assert [(r["device"], r["launches_without_kernel"], r["linked_by"]) for r in ranks] == [
        (0, 1, {"correlation": 1}),
        (1, 0, {"correlation": 1}),
    ]
    assert "1 kernel launches with no kernel in the trace" in ranks[0]["note"]
    assert "no kernel in the trace" not in (ranks[1]["note"] or "")


def _kernel(ts: float, dur: float, corr: int, **extra) -> dict:
    return {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": 7, "correlation": corr, **extra}}  # fmt: skip


EPOCH_US = 1_700_000_000_000_000.0  # µs on the Unix epoch clock, as PyTorch 1.x writes


@pytest.mark.parametrize(
    "damaged",
    [_kernel(0.0, 5.0, 9), _kernel(EPOCH_US + 10.0, 1.8e13, 9)],
    ids=["ts-0", "duration-of-208-days"],
)
def test_an_op_with_an_implausible_time_is_left_out_with_a_note_naming_it(tmp_path, damaged):
    good = [
        _kernel(EPOCH_US, 1000.0, 1),
        _kernel(EPOCH_US + 2000.0, 1000.0, 2),
        _kernel(EPOCH_US + 2500.0, 500.0, 3),
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [*good, damaged]}))
    rank = trace_figures.figures([path])["ranks"][0]
    step = rank["steps"][0]
    assert (step["window_ms"], step["compute_busy_ms"], step["idle_ms"]) == (
        3.0,
        2.0,
        1.0,
    )  # 0-1, 2-3 ms busy
    assert "1 of 4 device ops left out as implausible" in rank["note"]
    assert (
        f"kernel 'gemm' on device 0 stream 7 at {damaged['ts']:.3f} µs for {damaged['dur']:.3f} µs"
        in rank["note"]
    )


def test_a_kernel_written_twice_in_another_key_order_or_with_fewer_args_is_one_kernel(tmp_path):
    one = _kernel(1000.0, 1000.0, 1, grid=[1, 1, 1])
    reordered = {k: one[k] for k in reversed(list(one))}
    fewer = {**one, "args": {"device": 0, "stream": 7, "correlation": 1}}  # grid left out
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [one, reordered, fewer, _kernel(3000.0, 1000.0, 2)]}))
    rank = trace_figures.figures([path])["ranks"][0]
    assert (rank["kernels"], rank["duplicates_dropped"]["device_ops"]) == (2, 2)
    assert rank["steps"][0]["compute_busy_ms"] == 2.0
    assert "2 duplicated device ops dropped" in rank["note"]


def test_an_epoch_clock_trace_keeps_its_precision_subtracting_before_dividing(tmp_path):
    # µs on the epoch clock: 1.7e15 / 1e3 = 1.7e12 ms, whose float64 steps are 2.4e-4 ms: dividing first loses them
    ks = [_kernel(EPOCH_US + 0.5, 1.25, 1), _kernel(EPOCH_US + 3.0, 0.75, 2)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": ks}))
    step = trace_figures.figures([path])["ranks"][0]["steps"][0]
    assert step["window_ms"] == pytest.approx((3.75 - 0.5) / 1e3, abs=1e-12)
    assert step["idle_ms"] == pytest.approx((3.0 - 1.75) / 1e3, abs=1e-12)


def test_pytorch_1_8_capitalised_categories_read_as_runtime_copy_and_memset(tmp_path):
    """PyTorch 1.8's Kineto: ``Runtime`` launches, ``Kernel``, ``Memcpy`` and ``Memset`` device work."""
    launch = {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 900.0, "dur": 5.0,
              "args": {"correlation": 1}}  # fmt: skip
    kernel = {**_kernel(1000.0, 1000.0, 1), "cat": "Kernel"}
    copy = {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 2500.0, "dur": 1000.0,
            "args": {"device": 0, "stream": 7, "correlation": 2}}  # fmt: skip
    memset = {
        **copy,
        "cat": "Memset",
        "name": "Memset",
        "ts": 4000.0,
        "args": {**copy["args"], "correlation": 3},
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [launch, kernel, copy, memset]}))
    rank = trace_figures.figures([path])["ranks"][0]
    assert (rank["ops"], rank["kernels"], rank["linked_by"]) == (3, 1, {"correlation": 1, "none": 2})
    step = rank["steps"][0]
    assert (step["compute_busy_ms"], step["copy_busy_ms"], step["window_ms"]) == (1.0, 2.0, 4.0)


def test_an_epoch_clock_trace_is_exact_to_the_ns_its_text_wrote(tmp_path):
    # PyTorch 1.x writes µs since the epoch with 3 decimals; a float holds them in steps of 0.25 µs
    event = (
        '{{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": {ts}, "dur": {dur}, '
        '"args": {{"device": 0, "stream": 7, "correlation": {c}}}}}'
    )
    events = [event.format(ts="1758927066581847.260", dur="1.130", c=1)]
    events.append(event.format(ts="1758927066581849.010", dur="0.120", c=2))
    path = tmp_path / "epoch.json"
    path.write_text('{"traceEvents": [' + ", ".join(events) + "]}")
    step = trace_figures.figures([path])["ranks"][0]["steps"][0]
    # window 847.260 to 849.130 µs; busy 1.130 + 0.120 µs
    assert step["window_ms"] == pytest.approx(1.870e-3, abs=1e-12)
    assert step["compute_busy_ms"] == pytest.approx(1.250e-3, abs=1e-12)
    assert step["idle_ms"] == pytest.approx(0.620e-3, abs=1e-12)


def test_one_trace_named_twice_is_refused_naming_both_not_read_as_two_ranks(tmp_path, capsys):
    """Issue 64's kept-back cases: ``a.json ./a.json`` (or a link and its target) gave two ranks of identical
    figures, each paired with itself across ranks; a copy of the same bytes is another file: two ranks."""
    trace = tmp_path / "a.json"
    trace.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7,
                                                   "ts": 1.0, "dur": 2.0, "args": {"device": 0, "stream": 7}}]}))  # fmt: skip
    (tmp_path / "link.json").symlink_to(trace)
    for other in (tmp_path / "." / "a.json", tmp_path / "link.json"):
        assert main(["trace", "figures", str(trace), str(other)]) == 2
        err = capsys.readouterr().err
        assert err == f"aorta trace figures: error: {other}: the same trace as {trace}, given twice: name each " \
            "rank's trace once\n"  # fmt: skip
    copy = tmp_path / "b.json"
    copy.write_bytes(trace.read_bytes())
    assert len(trace_figures.figures([trace, copy])["ranks"]) == 2
