"""Sweeps prove each knob took effect: evidence from the cell's own run (library report lines, collective
kernels in the trace, the recorded config, cells that differ only in the knob), and the flag when there is
none. Pure cases first; one slow test runs a real sweep (FSDP on CPU, gloo) over a real setting and a no-op."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aorta.sweep.knob_evidence import (
    CONTRADICTED,
    NO_EVIDENCE,
    NO_EVIDENCE_TEXT,
    TOOK_EFFECT,
    CellRun,
    library_reports,
    sweep_evidence,
)

# NCCL_DEBUG=INFO lines as NCCL 2.x prints them (host:pid:tid [device] NCCL INFO ...)
NCCL_LOG = """\
h100-node:4107:4107 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>
h100-node:4107:4107 [0] NCCL INFO NCCL_PROTO set by environment to Simple
h100-node:4107:4107 [0] NCCL INFO NCCL_MAX_NCHANNELS set by environment to 4.
h100-node:4107:4107 [0] NCCL INFO Channel 00/04 :    0   1
"""


def kernels(*rows):
    return {
        "kernels": [
            {"name": n, "family": f, "launches": 1.0, "device_ms": 1.0, "streams": 1, "grid": g, "block": b}
            for n, f, g, b in rows
        ]
    }


def doc(summary=None, env=None, concurrency=None, config=None):
    extra = {}
    if summary is not None:
        extra["kernel_summary"] = summary
    if concurrency is not None:
        extra["effective_concurrency"] = concurrency
    if config is not None:
        extra["config"] = config
    return {
        "machine_info": {"aorta": {"env": env or {}}},
        "benchmarks": [{"fullname": "t::b", "extra_info": extra}],
    }


AR = "collective:all_reduce"


def knobs(cells):
    return {row["cell"]: row["knobs"] for row in sweep_evidence(cells)}


def test_library_report_lines_are_read_with_their_values():
    assert library_reports(NCCL_LOG) == {"NCCL_PROTO": "Simple", "NCCL_MAX_NCHANNELS": "4"}


def test_collective_kernels_and_the_librarys_report_show_a_protocol_took_effect():
    k = kernels(("ncclDevKernel_AllReduce_Sum_bf16_RING_SIMPLE", AR, [4, 1, 1], [512, 1, 1]))
    cell = CellRun(
        "c1", env={"NCCL_PROTO": "Simple"}, doc=doc(k, env={"NCCL_PROTO": "Simple"}), log_text=NCCL_LOG
    )
    got = knobs([cell])["c1"]["NCCL_PROTO"]
    assert got["status"] == TOOK_EFFECT
    assert [e["kind"] for e in got["evidence"]] == ["library_report", "trace", "env_read_back"]
    assert "collective kernels ran with SIMPLE" in got["summary"]


def test_a_channel_cap_the_trace_exceeds_is_contradicted():
    k = kernels(("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", AR, [16, 1, 1], [512, 1, 1]))
    cell = CellRun("c1", env={"NCCL_MAX_NCHANNELS": "4"}, doc=doc(k))
    got = knobs([cell])["c1"]["NCCL_MAX_NCHANNELS"]
    assert got["status"] == CONTRADICTED
    assert got["summary"] == "collective kernels' grid x: [16] (setting <= 4)"


def test_a_variable_read_back_but_seen_by_nothing_is_flagged():
    k = kernels(("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", AR, [16, 1, 1], [512, 1, 1]))
    cells = [
        CellRun(
            f"c{v}", env={"NCCL_TYPO_THREADS": v}, doc=doc(k, env={"NCCL_TYPO_THREADS": v}, concurrency=3.0)
        )
        for v in ("256", "512")
    ]
    got = knobs(cells)
    for cell in ("c256", "c512"):
        assert got[cell]["NCCL_TYPO_THREADS"]["status"] == NO_EVIDENCE
        assert got[cell]["NCCL_TYPO_THREADS"]["summary"].startswith(NO_EVIDENCE_TEXT)
    assert "the run recorded NCCL_TYPO_THREADS=256" in got["c256"]["NCCL_TYPO_THREADS"]["summary"]


def test_cells_that_differ_only_in_the_knob_and_ran_other_kernels_or_concurrency_are_evidence():
    def cell(conns, name, conc):
        k = kernels((name, "gemm", None, None))
        return CellRun(
            f"c{conns}", env={"CUDA_DEVICE_MAX_CONNECTIONS": conns, "X": "1"}, doc=doc(k, concurrency=conc)
        )

    got = knobs([cell("1", "nvjet_a", 1.0), cell("8", "nvjet_b", 7.5)])
    assert got["c1"]["CUDA_DEVICE_MAX_CONNECTIONS"]["status"] == TOOK_EFFECT
    assert (
        "ran other kernels with CUDA_DEVICE_MAX_CONNECTIONS=8 (cell c8)"
        in got["c1"]["CUDA_DEVICE_MAX_CONNECTIONS"]["summary"]
    )
    got = knobs([cell("1", "nvjet_a", 1.0), cell("8", "nvjet_a", 7.5)])
    assert (
        "effective concurrency 7.5 with CUDA_DEVICE_MAX_CONNECTIONS=8"
        in got["c1"]["CUDA_DEVICE_MAX_CONNECTIONS"]["summary"]
    )
    assert got["c1"]["X"]["status"] == NO_EVIDENCE  # X is 1 in both: no cell differs only in it
    got = knobs([cell("1", "nvjet_a", 6.5), cell("8", "nvjet_a", 7.5)])  # 13% apart: within run-to-run noise
    assert got["c1"]["CUDA_DEVICE_MAX_CONNECTIONS"]["status"] == NO_EVIDENCE


def test_an_override_is_read_back_from_the_recorded_config():
    ok = CellRun("c1", overrides={"training.steps": "5"}, doc=doc(config={"training": {"steps": 5}}))
    bad = CellRun("c2", overrides={"training.steps": "7"}, doc=doc(config={"training": {"steps": 5}}))
    got = knobs([ok, bad])
    assert got["c1"]["training.steps"]["status"] == TOOK_EFFECT
    assert got["c2"]["training.steps"]["status"] == CONTRADICTED


def test_a_cell_without_a_run_gets_no_row():
    assert sweep_evidence([CellRun("c1", env={"A": "1"}, doc=None)]) == []


def test_a_failed_cells_leftover_json_is_no_evidence_and_gets_no_row(tmp_path):
    # cell 2 failed after its JSON was written (a crash in teardown): what it wrote is not a finished run
    from aorta.sweep.knob_check import check_knobs

    for name, value in (("c1", "1"), ("c2", "2")):
        (tmp_path / f"{name}.json").write_text(json.dumps(doc(env={"NCCL_ALGO": value})))
        (tmp_path / f"{name}.log").write_text(f"NCCL INFO NCCL_ALGO set by environment to {value}\n")
    manifest = {
        "cells": [
            {
                "id": "NCCL_ALGO=1",
                "env": {"NCCL_ALGO": "1"},
                "status": "ok",
                "benchmark_json": "c1.json",
                "log": "c1.log",
            },
            {
                "id": "NCCL_ALGO=2",
                "env": {"NCCL_ALGO": "2"},
                "status": "failed",
                "benchmark_json": "c2.json",
                "log": "c2.log",
            },
        ]
    }
    out = io.StringIO()
    report = check_knobs(tmp_path, manifest, out=out)
    assert [row["cell"] for row in report] == ["NCCL_ALGO=1"]


@pytest.mark.slow  # four torchrun launches of the FSDP baseline scenario on CPU (about 12 s each)
def test_a_real_sweep_flags_the_no_op_variable_and_not_the_real_setting(tmp_path):
    from test_fsdp_torchrun_cpu import FSDP_BASELINE_2

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "TORCH_NCCL_HIGH_PRIORITY"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    out = tmp_path / "sw"
    cmd = [
        sys.executable,
        "-m",
        "aorta",
        "sweep",
        "--override",
        "training.steps=4,5",
        "--grid",
        "AORTA_NO_SUCH_KNOB=a,b",
        "--output",
        str(out),
        "--cell-timeout",
        "240",
        "--",
        *FSDP_BASELINE_2,
    ]
    done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((out / "knobs.json").read_text())["cells"]
    assert len(report) == 4
    for row in report:
        assert row["knobs"]["training.steps"]["status"] == TOOK_EFFECT
        assert row["knobs"]["AORTA_NO_SUCH_KNOB"]["status"] == NO_EVIDENCE
    assert "(4 with no evidence;" in done.stdout
    assert "AORTA_NO_SUCH_KNOB=a: NO EVIDENCE: no evidence the knob took effect" in done.stdout


def test_a_kernel_that_only_dropped_into_the_other_bucket_is_no_change_but_another_grid_is():
    def cell(v, rows, other_ms):
        s = kernels(*rows)
        s["other"] = {"kernels": 1, "launches": 1.0, "device_ms": other_ms}
        return CellRun(f"c{v}", env={"NCCL_FOO": v}, doc=doc(s))

    a = ("k_a", "k_a", [8, 1, 1], [128, 1, 1])
    b = ("k_b", "k_b", [8, 1, 1], [128, 1, 1])
    # k_b is in one list and, by timing noise, in the other's bucket (1 ms there, as much as k_b's own)
    got = knobs([cell("1", [a, b], 0.0), cell("2", [a], 1.0)])
    assert got["c1"]["NCCL_FOO"]["status"] == NO_EVIDENCE
    wider = ("k_a", "k_a", [16, 1, 1], [128, 1, 1])
    got = knobs([cell("1", [a], 0.0), cell("2", [wider], 0.0)])
    assert got["c1"]["NCCL_FOO"]["status"] == TOOK_EFFECT
