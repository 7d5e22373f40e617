"""One timeline per GPU (aorta/report/trace_figures.py ``per_device``), told apart in every format (issue 68):
a one-GPU trace whose copies and memsets name no device is one timeline, not two; two GPUs running the same
kernels (same names, times, queue and stream numbers) are two timelines with each GPU's own figures; launches
no kernel answers are counted once. Each trace is written here in the format's own fields (Kineto JSON,
rocprofv3 CSV, rocpd SQLite) and the figures are written from the ops themselves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_rocpd_choices import H2D, LAUNCH, Db
from test_rocprof_csv_choices import API_COLUMNS, COPY_COLUMNS, KERNEL_COLUMNS, T0, csv_file, kernel

from aorta.report import trace_figures
from aorta.report.trace_figures import STEP_KEYS

# ------------------------------------------------------------------------------------------------- writers
# Each writes one process's trace: ``kernels`` as (device, start µs after T0, duration µs, correlation id),
# ``copies`` as (device or None, start, duration), ``launches`` the correlation ids of HIP/CUDA launch calls.


def _kineto(folder: Path, kernels, copies, launches) -> Path:
    events = [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 1, "ts": 500.0 + corr,
         "dur": 1.0, "args": {"correlation": corr}}
        for corr in launches
    ]  # fmt: skip
    for device, start, dur, corr in kernels:
        events.append(
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": device, "tid": 7, "ts": 1000.0 + start,
             "dur": float(dur), "args": {"device": device, "stream": 7, "correlation": corr}}
        )  # fmt: skip
    for device, start, dur in copies:  # a copy that names no device has neither args.device nor a GPU pid
        args = {"stream": 7} if device is None else {"stream": 7, "device": device}
        where = {} if device is None else {"pid": device}
        events.append(
            {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", **where, "tid": 7, "ts": 1000.0 + start,
             "dur": float(dur), "args": args}
        )  # fmt: skip
    path = folder / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def _csv(folder: Path, kernels, copies, launches) -> Path:
    ns = T0 + 1_000_000  # the same instants as the Kineto trace's, in ns
    csv_file(
        folder / "300_kernel_trace.csv",
        KERNEL_COLUMNS,
        *(
            kernel(f"Agent {d}", 1, 11, "gemm", c, ns + 1000 * s, ns + 1000 * (s + u))
            for d, s, u, c in kernels
        ),
    )
    if copies:  # a copy with neither end's agent written names no device
        csv_file(
            folder / "300_memory_copy_trace.csv",
            COPY_COLUMNS,
            *(
                f'"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",11,"","{"" if d is None else f"Agent {d}"}",0,'
                f"{ns + 1000 * s},{ns + 1000 * (s + u)}"
                for d, s, u in copies
            ),
        )
    if launches:
        csv_file(
            folder / "300_hip_api_trace.csv",
            API_COLUMNS,
            *(
                f'"HIP_RUNTIME_API","hipLaunchKernel",300,77,{c},{ns - 500 + c},{ns - 499 + c}'
                for c in launches
            ),
        )
    return folder


def _rocpd(folder: Path, kernels, copies, launches) -> Path:
    ns = T0 + 1_000_000
    db = Db(folder / "300_results.db").strings()
    db.add("rocpd_info_process", 1, "guid-a", 300)
    db.add("rocpd_info_kernel_symbol", 31, "guid-a", "gemm", "gemm")
    for i, (d, s, u, c) in enumerate(kernels, start=1):
        db.add("rocpd_event", 100 + i, "guid-a", 3, c, 0)
        db.add(
            "rocpd_kernel_dispatch", i, "guid-a", 1, d, 31, 1, 11, ns + 1000 * s, ns + 1000 * (s + u), 100 + i
        )
    for i, (d, s, u) in enumerate(copies, start=1):  # a copy with neither agent names no device
        db.add(
            "rocpd_memory_copy",
            i,
            "guid-a",
            1,
            H2D,
            None,
            d,
            None,
            11,
            ns + 1000 * s,
            ns + 1000 * (s + u),
            None,
        )
    for i, c in enumerate(launches, start=1):
        db.add("rocpd_event", 200 + i, "guid-a", 1, c, 0)
        db.add("rocpd_region", 300 + i, "guid-a", 1, 40, ns - 500 + c, ns - 499 + c, LAUNCH, 200 + i)
    return db.close()


WRITERS = {"kineto": _kineto, "rocprofv3-csv": _csv, "rocpd": _rocpd}


def _steps(rank: dict) -> dict:
    (step,) = rank["steps"]  # no ProfilerStep ranges: the whole trace is one window
    return {k: step[k] for k in STEP_KEYS}


def _idle(window_ms: float, busy_ms: float) -> dict:
    return {"window_ms": window_ms, "idle_ms": window_ms - busy_ms}


# ------------------------------------------------------------------------------------- one GPU, ops of none
@pytest.mark.parametrize("fmt", WRITERS)
def test_a_one_gpu_trace_whose_copies_name_no_device_is_one_timeline_of_that_gpu(tmp_path, fmt):
    """GPU 4 runs gemm 0-1000 µs and 3000-3500 µs; two copies name no device (1000-1500, 2000-2500 µs). With one
    GPU in the trace they are its work: one rank on device 4, window 3.5 ms, compute 1.5 ms, copy 1 ms, idle
    1 ms; never a second timeline "unknown" holding the copies."""
    path = WRITERS[fmt](
        tmp_path, [(4, 0, 1000, 1), (4, 3000, 500, 2)], [(None, 1000, 500), (None, 2000, 500)], []
    )
    (rank,) = trace_figures.figures([path])["ranks"]
    assert (rank["reader"], rank["device"], rank["ops"], rank["kernels"]) == (fmt, 4, 4, 2)
    assert _steps(rank) == {
        **_idle(3.5, 1.0 + 0.5 + 0.5 + 0.5),
        "compute_busy_ms": 1.5,
        "comm_busy_ms": 0,
        "copy_busy_ms": 1.0,
        "overlapped_ms": 0,
        "exposed_comm_ms": 0,
        "overlap_ratio": None,
    }


def test_a_kineto_trace_whose_ops_all_name_no_device_is_one_timeline_of_no_device(tmp_path):
    """No op names a device (copies only, neither ``args.device`` nor a GPU's ``pid``): one timeline, its
    device unknown and unsaid, copy busy 1 ms."""
    path = _kineto(tmp_path, [], [(None, 0, 500), (None, 1000, 500)], [])
    (rank,) = trace_figures.figures([path])["ranks"]
    assert "device" not in rank and rank["ops"] == 2
    assert _steps(rank)["copy_busy_ms"] == 1.0


# --------------------------------------------------------------------------------- two GPUs, the same work
@pytest.mark.parametrize("fmt", WRITERS)
def test_identical_kernels_on_two_gpus_give_each_gpu_its_own_exact_figures(tmp_path, fmt):
    """GPUs 0 and 1 run the same kernels at the same instants on the same queue and stream numbers (gemm 0-1000
    and 3000-3500 µs, a data-parallel step); GPU 1 also copies 2000-2500 µs. Each GPU is a timeline of its own
    with none of its kernels dropped as a duplicate of the other's: 3.5 ms windows, compute 1.5 ms each, copy
    0 and 0.5 ms, idle 2 and 1.5 ms. Launches 5 and 6 answered by no kernel change no GPU's figures."""
    kernels = [(0, 0, 1000, 1), (1, 0, 1000, 2), (0, 3000, 500, 3), (1, 3000, 500, 4)]
    path = WRITERS[fmt](tmp_path, kernels, [(1, 2000, 500)], [1, 2, 3, 4, 5, 6])
    result = trace_figures.figures([path])
    ranks = result["ranks"]
    got = [(r["device"], r["ops"], r["kernels"], r["linked_by"], r["duplicates_dropped"]) for r in ranks]
    assert got == [
        (0, 2, 2, {"correlation": 2}, {"device_ops": 0, "events": 0}),
        (1, 3, 2, {"correlation": 2, "none": 1}, {"device_ops": 0, "events": 0}),
    ]
    same = {
        "compute_busy_ms": 1.5,
        "comm_busy_ms": 0,
        "overlapped_ms": 0,
        "exposed_comm_ms": 0,
        "overlap_ratio": None,
    }
    assert [_steps(r) for r in ranks] == [
        {**same, **_idle(3.5, 1.5), "copy_busy_ms": 0},
        {**same, **_idle(3.5, 1.5 + 0.5), "copy_busy_ms": 0.5},
    ]
    assert f"{path} (2 devices)" in result["ranks_from"]


@pytest.mark.parametrize("fmt", WRITERS)
def test_a_copy_naming_no_device_on_a_two_gpu_trace_is_a_timeline_of_its_own_not_the_first_gpus(
    tmp_path, fmt
):
    """Two GPUs, one kernel each (0-1000 µs); a copy naming no device (2000-2500 µs) could be either GPU's: it is
    on a third timeline, "unknown", and GPU 0's figures hold its kernel alone (window 1 ms, no copy)."""
    path = WRITERS[fmt](tmp_path, [(0, 0, 1000, 1), (1, 0, 1000, 2)], [(None, 2000, 500)], [1, 2])
    ranks = trace_figures.figures([path])["ranks"]
    assert [(r["device"], r["ops"], r["kernels"]) for r in ranks] == [(0, 1, 1), (1, 1, 1), ("unknown", 1, 0)]
    assert [_steps(r)["copy_busy_ms"] for r in ranks] == [0, 0, 0.5]
    assert [_steps(r)["window_ms"] for r in ranks] == [1.0, 1.0, 0.5]


def test_two_rocpd_dispatches_alike_but_for_their_gpu_are_two_kernels_not_one_written_twice(tmp_path):
    """Dispatches with no event row (no launch known: correlation none) on agents 0 and 1, at the same instants
    on the same queue and stream numbers: the agent is part of a dispatch's identity, so each GPU keeps its
    kernel (compute 1 ms each) and none is counted a duplicate."""
    db = Db(tmp_path / "300_results.db").strings()
    db.add("rocpd_info_kernel_symbol", 31, "guid-a", "gemm", "gemm")
    for rid, agent in ((1, 0), (2, 1)):
        db.add("rocpd_kernel_dispatch", rid, "guid-a", 1, agent, 31, 1, 11, T0, T0 + 1_000_000, None)
    ranks = trace_figures.figures([db.close()])["ranks"]
    assert [(r["device"], r["kernels"], r["duplicates_dropped"]["device_ops"]) for r in ranks] == [
        (0, 1, 0),
        (1, 1, 0),
    ]
    assert [_steps(r)["compute_busy_ms"] for r in ranks] == [1.0, 1.0]


def test_launches_no_kernel_answers_on_two_gpus_are_counted_once_on_the_first_gpus_exact_figures(tmp_path):
    """Kineto keeps the launches whose kernel it lost (5 and 6): they name no GPU, so they are counted once, on
    GPU 0's timeline (its step figures and its note), and GPU 1's figures say none."""
    kernels = [(0, 0, 1000, 1), (1, 0, 1000, 2), (0, 3000, 500, 3), (1, 3000, 500, 4)]
    ranks = trace_figures.figures([_kineto(tmp_path, kernels, [(1, 2000, 500)], [1, 2, 3, 4, 5, 6])])["ranks"]
    assert [r["launches_without_kernel"] for r in ranks] == [2, 0]
    assert [r["steps"][0]["launches_without_kernel"] for r in ranks] == [2, 0]
    assert "; 2 kernel launches with no kernel in the trace" in ranks[0]["note"]
    assert "no kernel in the trace" not in ranks[1]["note"]


def test_a_one_gpu_trace_is_said_as_ranks_from_files_not_one_timeline_per_device(tmp_path):
    """The "one timeline per device" words are said only where a process ran on several GPUs."""
    path = _kineto(tmp_path, [(0, 0, 1000, 1)], [(None, 1000, 500)], [1])
    result = trace_figures.figures([path])
    assert "one timeline per device" not in result["ranks_from"] and "across_ranks" not in result
