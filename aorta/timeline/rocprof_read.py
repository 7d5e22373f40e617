"""rocprofv3's outputs read by format, one ``RocprofTrace`` per process (pure: no torch): the rocpd database
(aorta/timeline/rocpd.py) or CSV (aorta/timeline/rocprof_csv.py). Apart from aorta/timeline/rocprof.py, whose
types and format sniffing both readers import, so no reader and its types import each other."""

from __future__ import annotations

from pathlib import Path

from aorta.timeline import rocpd, rocprof_csv
from aorta.timeline.rocprof import ROCPD, RocprofFileError, RocprofTrace
from aorta.timeline.trace_source import Source


def read_processes(path: Path, kind: str, source: Source | None = None) -> list[RocprofTrace]:
    """A rocprofv3 output (a file, or a folder: one host's), one ``RocprofTrace`` per process in pid order.
    ``source``: the file already opened (a pipe reads once)."""
    if kind == ROCPD:
        return rocpd.read_processes(path)
    return rocprof_csv.read_processes(path, source)


def read(path: Path, kind: str) -> RocprofTrace:
    """A rocprofv3 output of one process; ``RocprofFileError`` naming the pids where it holds several."""
    traces = read_processes(path, kind)
    if len(traces) > 1:
        pids = ", ".join(str(t.process) for t in traces)
        raise RocprofFileError(f"{path}: holds {len(traces)} processes (pids {pids}): read each as a rank")
    return traces[0]
