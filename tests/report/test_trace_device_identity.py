"""A device timeline is (process or rank, device), from every field that says so (issue 64).

Before: the device was ``args.device`` taken literally: Kineto ops without it on two GPUs became one timeline
(the pid, which is Kineto's device, was not read), and ``args.device`` 0 and "0" became two GPUs.
"""

from __future__ import annotations

import json

import pytest

from aorta.cli import main
from aorta.report import trace_figures
from aorta.timeline.device_identity import device_value, kineto_device, kineto_stream, merged_ranks


@pytest.mark.parametrize(
    ("value", "device"),
    [(0, 0), (0.0, 0), ("0", 0), (" 3 ", 3), ("Agent 4", 4), ("GPU 1", 1), ("cuda:2", 2), ("hip:3", 3), ("HIP 5", 5), ("Device 6", 6), ("gfx942", "gfx942"),
     (None, None), ("", None), (True, None), (1.5, "1.5")],
)  # fmt: skip
def test_a_device_value_is_normalised_to_its_index(value, device):
    assert device_value(value) == device


def test_a_kineto_op_without_args_device_is_on_the_gpu_of_its_pid():
    assert kineto_device({"pid": 3, "args": {}}) == 3
    assert kineto_device({"pid": 3, "args": {"device": "1"}}) == 1


def test_a_kineto_ops_stream_is_args_stream_else_its_tid():
    assert kineto_stream({"tid": 7, "args": {"stream": 3}}) == 3
    assert kineto_stream({"tid": 7, "args": {"stream": 0}}) == 0  # stream 0 is a stream, not "none"
    assert kineto_stream({"tid": 7, "args": {}}) == 7
    assert kineto_stream({"args": {}}) == 0


def test_a_merged_traces_ranks_are_found_by_the_pid_that_holds_each():
    # aorta trace merge puts each rank in a process of its own: the events' pid finds the rank, not its number
    doc = {"otherData": {"aorta_merge": {"ranks": {"0": {"pid": 100}, "1": {"pid": 101}, "2": {}, "x": {}}}}}
    assert merged_ranks(doc) == {100: {"rank": 0, "pid": 100}, 101: {"rank": 1, "pid": 101}, 2: {"rank": 2}}
    assert merged_ranks({"otherData": {}}) == {} and merged_ranks({}) == {}


def _trace(kernels: list[dict]) -> dict:
    events = []
    for i, k in enumerate(kernels, start=1):
        events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 9,
                "tid": 1,
                "ts": 100.0 + i,
                "dur": 1,
                "args": {"correlation": i},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": "gemm",
                "tid": 7,
                "ts": 200.0 + 10 * i,
                "dur": 5,
                **k,
                "args": {"stream": 7, "correlation": i, **k.get("args", {})},
            }
        )
    return {"traceEvents": events}  # fmt: skip


def test_kineto_ops_without_args_device_on_two_gpus_are_two_timelines(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_trace([{"pid": 0}, {"pid": 1}, {"pid": 0}, {"pid": 1}])))
    result = trace_figures.figures([path])
    assert [(e["device"], e["kernels"]) for e in result["ranks"]] == [(0, 2), (1, 2)]  # before: one of 4


def test_args_device_0_and_the_string_0_are_one_gpu(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps(_trace([{"pid": 0, "args": {"device": 0}}, {"pid": 0, "args": {"device": "0"}}]))
    )
    result = trace_figures.figures([path])
    assert [(e.get("device"), e["kernels"]) for e in result["ranks"]] == [(0, 2)]  # before: two GPUs of 1


def test_a_kernel_written_twice_with_its_device_spelled_two_ways_is_one_kernel(tmp_path):
    path = tmp_path / "t.json"
    doc = _trace([{"pid": 0, "args": {"device": 0}}])
    doc["traceEvents"].append(
        dict(doc["traceEvents"][1], args={"device": "0", "stream": 7, "correlation": 1})
    )
    path.write_text(json.dumps(doc))
    (entry,) = trace_figures.figures([path])["ranks"]
    assert entry["kernels"] == 1 and entry["duplicates_dropped"]["device_ops"] == 1


def test_a_folder_of_kineto_traces_is_read_whole_each_trace_named(tmp_path):
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(json.dumps(_trace([{"pid": 0}])))
    result = trace_figures.figures([tmp_path])
    assert [e["path"] for e in result["ranks"]] == [str(tmp_path / "a.json"), str(tmp_path / "b.json")]


def test_a_folder_with_csv_and_a_database_is_refused_not_read_in_part(tmp_path, capsys):
    (tmp_path / "1_kernel_trace.csv").write_text('"Kind","Agent_Id"\n')
    (tmp_path / "1_results.db").write_bytes(b"SQLite format 3\x00")
    assert main(["trace", "figures", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "a folder of traces in 2 formats" in err and "1_results.db" in err and "Traceback" not in err


def test_plausibility_is_judged_per_gpu_so_one_on_another_clock_keeps_its_ops(tmp_path):
    """Before: judged before the split, by the median start of both GPUs: device 1's two ops, on a clock
    1e12 µs ahead, were left out as implausible."""
    ks = [{"pid": 0}, {"pid": 0}, {"pid": 0}, {"pid": 1}, {"pid": 1}]
    doc = _trace(ks)
    for e in doc["traceEvents"]:
        if e["cat"] == "kernel" and e["pid"] == 1:
            e["ts"] += 1e12
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    result = trace_figures.figures([path])
    assert [(e["device"], e["kernels"]) for e in result["ranks"]] == [(0, 3), (1, 2)]
    assert all("implausible" not in (e["note"] or "") for e in result["ranks"])


def test_a_reader_that_closes_the_pipe_ends_it_quietly_with_no_traceback(tmp_path):
    """``aorta trace figures ... | head``: before, a BrokenPipeError traceback. As coreutils: quiet, 141."""
    import os
    import subprocess
    import sys

    path = tmp_path / "t.json"
    path.write_text(json.dumps(_trace([{"pid": 0}])))
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "aorta",
                "trace",
                "figures",
                str(path),
                "--json",
                str(tmp_path / "f.json"),
            ],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 141 and proc.stderr == ""
    assert (
        json.loads((tmp_path / "f.json").read_text())["ranks"][0]["kernels"] == 1
    )  # written before the table
