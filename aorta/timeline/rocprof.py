"""rocprofv3's outputs read as device ops, and figures per hardware queue (pure: no torch; stdlib csv, sqlite3).

rocprofv3 (rocprofiler-sdk, ROCm 6.2+) writes, by ``--output-format``:

- ``rocpd`` (the default since ROCm 7): one SQLite database per process (``<pid>_results.db``), read in
  aorta/timeline/rocpd.py.
- ``csv``: one file per record kind and process (``<pid>_kernel_trace.csv``, ``<pid>_hip_api_trace.csv`` ...;
  the documentation's samples drop the pid), read in aorta/timeline/rocprof_csv.py.
- ``json``, ``pftrace`` (Perfetto), ``otf2``: not read; refused in one sentence saying what is.

rocprofv3's default output folder is one per host (``%hostname%/%pid%``): every process of the host in one
folder. Each process is read as one rank (``RocprofTrace.process``: its pid), never summed with another.

A kernel dispatch is linked to its launch by the internal correlation id (the CSV's ``Correlation_Id``,
rocpd's ``rocpd_event.stack_id``) where the output holds the HIP API call with that id (``DeviceOp.link``
``correlation``). Every op keeps its hardware queue (``DeviceOp.queue``): the AMD queue its dispatch packet
went to (``GPU_MAX_HW_QUEUES`` per device per process, 4 by default), which a Kineto trace does not record.

The files of one process are one run: a file whose times are apart from the kernels' (``same_run``: another
run's file copied beside them, as the documentation's samples are) is counted but left out of the figures and
the links, and the rank's note says which file and why (``RocprofTrace.apart``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from aorta.timeline import interval_arrays as ia
from aorta.timeline.device_op import DeviceOp
from aorta.timeline.op_table import LINKS, OpTable
from aorta.timeline.trace_source import Source, TraceFileError, open_source

KINETO, CSV, ROCPD = "kineto", "rocprofv3-csv", "rocpd"
READ = (
    "Kineto Chrome traces (torch.profiler .json / .json.gz), rocprofv3 CSV (a .csv file or a folder of them) "
    "and the rocpd SQLite database (.db)"
)
SQLITE_MAGIC = b"SQLite format 3\x00"
_NOT_READ = {  # suffix -> what it is
    ".pftrace": "a Perfetto protobuf trace (rocprofv3 --output-format pftrace)",
    ".perfetto-trace": "a Perfetto protobuf trace",
    ".otf2": "an OTF2 archive (rocprofv3 --output-format otf2)",
    ".nsys-rep": "an Nsight Systems report",
    ".qdrep": "an Nsight Systems report",
}


class RocprofFileError(TraceFileError):
    """A rocprofv3 output or a file of a format not read: the message names the file and what is wrong."""


@dataclass
class RocprofTrace:
    path: Path
    source: str  # CSV or ROCPD
    ops: Sequence[DeviceOp]  # an OpTable (aorta/timeline/op_table.py)
    api_calls: dict[str, int] = field(default_factory=dict)  # "DOMAIN function" -> calls
    records: dict[str, int] = field(default_factory=dict)  # record kind -> rows read
    not_read: list[str] = field(
        default_factory=list
    )  # CSV files of a rank's output that hold no trace record
    process: int | None = None  # the process's pid, where the output says (file names, rocpd_info_process)
    duplicates: dict[str, int] = field(default_factory=dict)  # rows dropped as exact repeats, by record kind
    apart: list[str] = field(default_factory=list)  # files / tables left out: times apart from the kernels'
    not_in_figures: dict[str, int] = field(default_factory=dict)  # records of kinds no figure reads
    without_work: list[str] = field(
        default_factory=list
    )  # other processes of the output, with no device work


def sniff(source: Source) -> str:
    """KINETO, CSV or ROCPD from a file's first bytes; ``RocprofFileError`` in one sentence for any other."""
    path, head, name = source.path, source.head, source.path.name.lower()
    for suffix, what in _NOT_READ.items():
        if name.endswith(suffix):
            raise RocprofFileError(f"{path}: {what} is not read; read are {READ}")
    if head.startswith(SQLITE_MAGIC):
        if source.gzipped:
            raise RocprofFileError(f"{path}: a gzipped SQLite database: decompress it first (gunzip)")
        return ROCPD
    text = head.lstrip()
    if b'"rocprofiler-sdk-tool"' in head:
        raise RocprofFileError(
            f"{path}: rocprofv3's JSON output (--output-format json) is not read; read are {READ}"
        )
    if text[:1] in (b"{", b"["):
        return KINETO
    if name.endswith((".csv", ".csv.gz")) or text.lower().startswith(
        (b'"kind"', b'"domain"', b"kind,", b"domain,")
    ):
        return CSV
    if not text:
        raise RocprofFileError(f"{path}: an empty file; read are {READ}")
    raise RocprofFileError(f"{path}: not a trace aorta reads; read are {READ}")


FOLDER_PATTERNS = {  # what a folder's files are, by name
    CSV: ("*.csv", "*.csv.gz"),
    ROCPD: ("*.db",),
    KINETO: ("*.json", "*.json.gz"),
}


def folder_files(path: Path) -> dict[str, list[Path]]:
    """A folder's trace files by format (only the formats it holds), each list sorted."""
    out = {}
    for kind, patterns in FOLDER_PATTERNS.items():
        files = sorted({f for pattern in patterns for f in path.glob(pattern) if f.is_file()})
        if files:
            out[kind] = files
    return out


def folder_format(path: Path) -> str:
    """CSV, ROCPD or KINETO for a folder read whole: every trace in it is read; a folder of several formats
    is refused naming them (rocprofv3's CSV beside its database, or a Kineto trace beside rocprofv3's output,
    are one process's work recorded twice, or two runs: before, one was read and the other dropped
    silently)."""
    kinds = folder_files(path)
    if len(kinds) > 1:
        said = "; ".join(
            f"{kind}: {', '.join(f.name for f in files[:3])}{' ...' if len(files) > 3 else ''}"
            for kind, files in kinds.items()
        )
        raise RocprofFileError(
            f"{path}: a folder of traces in {len(kinds)} formats ({said}), which cannot be combined into one "
            "reading (the same work recorded twice, or different runs): name the files of one format"
        )
    if kinds:
        return next(iter(kinds))
    raise RocprofFileError(f"{path}: a folder with no .csv, .db or .json trace; read are {READ}")


def format_of(path: Path) -> str:
    """KINETO, CSV or ROCPD for a file or folder aorta reads; ``RocprofFileError`` in one sentence for any
    other. (Readers that go on to read the file take ``sniff`` of an ``open_source``: one pass.)"""
    if path.is_dir():
        return folder_format(path)
    with open_source(path) as source:
        return sniff(source)


ONE_RUN_GAP_NS = 10**9


def same_run(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Two files' spans (ns) that can be one run: they overlap, or the gap between them is under 1 s or under
    both spans' lengths together (calls made only at start-up, before the first kernel, are the same run;
    the documentation's samples, days apart, are not)."""
    gap = max(a[0], b[0]) - min(a[1], b[1])
    return gap <= max(ONE_RUN_GAP_NS, (a[1] - a[0]) + (b[1] - b[0]))


def apart_note(trace: RocprofTrace) -> str | None:
    """What a rank's note says of the files left out and the records no figure reads."""
    parts = []
    if trace.apart:
        parts.append(
            "left out of the figures and the launch links, their times apart from the kernels' (another "
            "run's records?): " + "; ".join(trace.apart)
        )
    if trace.not_in_figures:
        parts.append(
            "records read but in no figure: "
            + ", ".join(f"{k} {v}" for k, v in sorted(trace.not_in_figures.items()))
        )
    parts += trace.without_work
    return "; ".join(parts) or None


def with_launches(ops: OpTable, ids: np.ndarray, starts_ns: np.ndarray) -> OpTable:
    """``ops`` linked to their launches: an op whose correlation id a HIP call has gets the earliest such call's
    start (µs, from its ns) as ``launch_us``, linked by ``correlation``."""
    order = np.lexsort((starts_ns, ids))
    ids, starts_ns = ids[order], starts_ns[order]
    first = np.ones(len(ids), dtype=bool)
    first[1:] = ids[1:] != ids[:-1]
    ids, starts_ns = ids[first], starts_ns[first]
    c = ops.columns
    if not len(ids):
        return ops
    at = np.clip(np.searchsorted(ids, c["correlation"]), 0, len(ids) - 1)
    found = c["has_correlation"] & (ids[at] == c["correlation"])
    return ops.with_columns(
        launch_us=np.where(found, starts_ns[at] / 1e3, np.nan),
        link=np.where(found, LINKS.index("correlation"), 0).astype(np.int8),
    )


# --------------------------------------------------------------------------- figures per hardware queue
def queue_figures(ops: Sequence[DeviceOp]) -> list[dict]:
    """Per hardware queue that ran kernels: kernels, busy time (union of its kernels, ms) and the streams whose
    kernels went to it; [] where no op says its queue (a Kineto trace). The union is taken on the profiler's own
    integer ns (``DeviceOp.start_ns``), never rebuilt from float µs."""
    table = OpTable.of(ops)
    c = table.columns
    mine = np.flatnonzero(c["has_queue"] & (c["category"] == 0))
    if not len(mine):
        return []
    exact = c["has_start_ns"][mine] & c["has_dur_ns"][mine]
    # an op built without its ns (none of rocprofv3's readers): rounded from its µs
    start = np.where(exact, c["start_ns"][mine], np.rint(c["start_us"][mine] * 1e3).astype(np.int64))
    dur = np.where(exact, c["dur_ns"][mine], np.rint(c["dur_us"][mine] * 1e3).astype(np.int64))
    queues = c["queue"][mine]
    streams = np.array(table.tables.streams + [None], dtype=object)
    out = []
    for q in np.unique(queues).tolist():
        at = queues == q
        s, e = ia.union(start[at], start[at] + dur[at])
        out.append(
            {
                "queue": q,
                "kernels": int(at.sum()),
                "busy_ms": int((e - s).sum()) / 1e6,
                "streams": sorted(set(streams[c["stream"][mine][at]].tolist()), key=str),
            }
        )
    return out
