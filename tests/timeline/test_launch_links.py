"""Device work linked to its launch by correlation id, else by Kineto's flow events, and launches no device event
answers; on hand-written traces shaped like the real ROCm ones (tests/fsdp/test_amd_damaged_traces.py has the
real MI300X trace with its correlation ids removed)."""

from __future__ import annotations

from aorta.fsdp.profiled_steps import split_by_step
from aorta.fsdp.trace_analysis import parse_chrome_trace
from aorta.timeline.launch_links import launch_links, unanswered


def call(name, ts, corr=None):
    ev = {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 10, "tid": 10, "ts": ts, "dur": 2}
    if corr is not None:
        ev["args"] = {"correlation": corr}
    return ev


def device(cat, name, ts, dur, corr=None):
    ev = {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": 2,
        "tid": 4,
        "ts": ts,
        "dur": dur,
        "args": {"stream": 4},
    }
    if corr is not None:
        ev["args"]["correlation"] = corr
    return ev


def flow(ph, fid, pid, tid, ts):
    ev = {"ph": ph, "id": fid, "pid": pid, "tid": tid, "ts": ts, "cat": "ac2g", "name": "ac2g"}
    return ev | ({"bp": "e"} if ph == "f" else {})


# Two steps; a kernel launched in each, a memset in step 1 (ROCm writes its flow as two "f" ends), and a
# kernel from before the window (a flow end with no start), all without correlation ids.
TRACE = [
    {
        "ph": "X",
        "cat": "user_annotation",
        "name": "ProfilerStep#1",
        "pid": 10,
        "tid": 10,
        "ts": 0,
        "dur": 100,
    },
    {
        "ph": "X",
        "cat": "user_annotation",
        "name": "ProfilerStep#2",
        "pid": 10,
        "tid": 10,
        "ts": 100,
        "dur": 100,
    },
    call("hipLaunchKernel", 10),
    flow("s", 7, 10, 10, 10),
    device("kernel", "gemm", 150, 30),  # runs in step 2's host range: the GPU is behind
    flow("f", 7, 2, 4, 150),
    call("hipMemsetAsync", 120),
    flow("f", 8, 10, 10, 120),
    device("gpu_memset", "Memset (Device)", 190, 5),
    flow("f", 8, 2, 4, 190),
    call("hipLaunchKernel", 130),
    flow("s", 9, 10, 10, 130),
    device("kernel", "add", 200, 10),
    flow("f", 9, 2, 4, 200),
    device("kernel", "early", 1, 2),
    flow("f", 3, 2, 4, 1),
]


def test_without_correlation_ids_each_op_takes_its_launch_from_the_flow_and_says_so():
    ops = {op.name: op for op in parse_chrome_trace(TRACE)}
    assert {n: (op.launch_us, op.link, op.correlation) for n, op in ops.items()} == {
        "early": (None, None, 3),  # the flow id stands for the correlation id: below every launched one
        "gemm": (10.0, "flow", 7),
        "Memset (Device)": (120.0, "flow", 8),
        "add": (130.0, "flow", 9),
    }
    split = split_by_step(list(ops.values()), [(0, 100), (100, 200)])
    assert [[op.name for op in ks] for ks in split.by_step] == [["gemm"], ["Memset (Device)", "add"]]
    assert split.before_window == 1 and split.links == ({"flow": 1}, {"flow": 2})
    assert split.step_notes() == [
        "step 0: 1 ops linked to their launch by flow events (no correlation id)",
        "step 1: 2 ops linked to their launch by flow events (no correlation id)",
    ]


def test_a_correlation_id_wins_over_the_flow():
    trace = [call("hipLaunchKernel", 10, corr=5), call("hipLaunchKernel", 50, corr=6)] + [
        device("kernel", "gemm", 150, 30, corr=5),
        flow("s", 6, 10, 10, 50),
        flow("f", 6, 2, 4, 150),  # a flow that disagrees: the correlation id is the profiler's own link
    ]
    (op,) = parse_chrome_trace(trace)
    assert (op.launch_us, op.link, op.correlation) == (10.0, "correlation", 5)


def test_kernel_launches_that_no_device_event_answers_are_missing_gpu_work():
    trace = [
        call("hipLaunchKernel", 10, corr=1),
        call("hipExtModuleLaunchKernel", 20, corr=2),
        call("hipMemcpyAsync", 25, corr=3),  # not a one-kernel launch: a copy is looked for elsewhere
        call("hipStreamSynchronize", 30, corr=4),  # launches nothing
        call("hipLaunchKernel", 40),  # neither an id nor a flow: cannot be checked, not counted
        device("kernel", "gemm", 150, 30, corr=1),
    ]
    links = launch_links(trace)
    answered = {links.link(ev)[0] for ev in trace if ev["cat"] == "kernel"}
    assert [(c.name, c.ts_us) for c in unanswered(links, answered)] == [("hipExtModuleLaunchKernel", 20.0)]
    ops = parse_chrome_trace(trace)
    split = split_by_step(ops, [(0, 15), (15, 50)], missing_launches_us=[20.0])
    assert split.missing == (0, 1)
    assert split.step_notes() == [
        "step 1: 1 kernel launches with no kernel in the trace (the profiler lost their records: the step's "
        "figures miss that work)"
    ]
