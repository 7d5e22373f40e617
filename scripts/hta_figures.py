"""Holistic Trace Analysis's figures of single-rank Kineto traces, to compare with ``aorta trace figures``.

Run with a Python that has HTA (not the project's: HTA pins its own pandas), e.g.

    python3 -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install HolisticTraceAnalysis 'pandas<3'
    /tmp/hta-venv/bin/python scripts/hta_figures.py ../shared/amd_traces/*.json* tests/data/kernels_*.json

Each trace is read by HTA twice: as HTA reads by default (every start rounded up and every end rounded down to a
whole µs: ``round_down_time_stamps``) and with that rounding off (``HTA_DISABLE_NS_ROUNDING=1``). Printed per
trace and reading, as JSON: HTA's temporal breakdown (``kernel_time``: first kernel start to last kernel end,
``compute_time``, ``idle_time``, µs), its computation-communication overlap (percent), the communication busy
time it divides by (the union of its COMMUNICATION kernels, from its own ``merge_kernel_intervals``) and how many
device ops of each kind it kept. The trace files are linked into a temporary folder (HTA reads a folder), never
copied.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import warnings
from pathlib import Path


def figures(path: Path, rounding: bool) -> dict:
    from hta.trace_analysis import TraceAnalysis
    from hta.utils.utils import get_kernel_type, merge_kernel_intervals

    os.environ["HTA_DISABLE_NS_ROUNDING"] = "0" if rounding else "1"
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / path.name).symlink_to(path.resolve())
        analysis = TraceAnalysis(trace_dir=d)
        breakdown = analysis.get_temporal_breakdown(visualize=False).to_dict("records")[0]
        overlap = analysis.get_comm_comp_overlap(visualize=False).to_dict("records")[0]
        t = analysis.t
        df = t.get_trace(t.get_ranks()[0])
        names = t.symbol_table.get_sym_table()
        gpu = df[df["stream"].ne(-1)].copy()
        gpu["type"] = gpu["name"].map(lambda i: get_kernel_type(names[i]))
        comm = merge_kernel_intervals(gpu[gpu["type"].eq("COMMUNICATION")].copy())
    return {
        "window_us": float(breakdown["kernel_time(us)"]),
        "compute_us": float(breakdown["compute_time(us)"]),
        "idle_us": float(breakdown["idle_time(us)"]),
        "comm_us": float((comm["end"] - comm["ts"]).sum()),
        "overlap_pctg": None
        if overlap["comp_comm_overlap_pctg"] != overlap["comp_comm_overlap_pctg"]
        else float(overlap["comp_comm_overlap_pctg"]),  # fmt: skip
        "device_ops": {str(k): int(v) for k, v in gpu["type"].value_counts().items()},
    }


def main() -> None:
    warnings.filterwarnings("ignore")
    logging.disable(logging.CRITICAL)
    for arg in sys.argv[1:]:
        path = Path(arg)
        out = {"trace": path.name}
        for rounding in (True, False):
            try:
                out["rounded" if rounding else "exact"] = figures(path, rounding)
            except Exception as exc:  # HTA's own failure on a trace is a result to report
                out["rounded" if rounding else "exact"] = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(out))


if __name__ == "__main__":
    main()
