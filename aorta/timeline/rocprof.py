"""rocprofv3's outputs read as device ops, and figures per hardware queue (pure: no torch; stdlib csv, sqlite3).

rocprofv3 (rocprofiler-sdk, ROCm 6.2+) writes, by ``--output-format``:

- ``rocpd`` (the default since ROCm 7): one SQLite database (``.db``). Read through the views the schema
  defines over its per-session tables (rocprofiler-sdk ``source/share/rocprofiler-sdk-rocpd/rocpd_tables.sql``
  and ``rocpd_views.sql``; docs ``how-to/using-rocpd-output-format.rst``): ``rocpd_kernel_dispatch`` (``start``,
  ``end`` in ns, ``queue_id``, ``stream_id``, ``kernel_id`` -> ``rocpd_info_kernel_symbol.kernel_name``,
  ``event_id`` -> ``rocpd_event.correlation_id``), ``rocpd_memory_copy`` (``name_id`` -> ``rocpd_string``) and
  ``rocpd_region`` (host API calls: ``name_id``, and ``event_id`` -> ``rocpd_event.category_id`` ->
  ``rocpd_string``, e.g. ``HIP_RUNTIME_API``, ``RCCL_API``).
- ``csv``: one file per record kind, told apart here by their columns: kernel dispatches (``Kind``
  ``KERNEL_DISPATCH``, ``Queue_Id``, ``Stream_Id``, ``Kernel_Name``, ``Correlation_Id``, ``Start_Timestamp`` /
  ``End_Timestamp`` in ns), memory copies (``Kind`` ``MEMORY_COPY``, ``Direction``) and API calls (``Domain``,
  ``Function``: HIP runtime, RCCL ...). One rank's output is a folder (every ``.csv`` in it) or a
  ``<prefix>kernel_trace.csv`` file with its siblings of the same prefix (rocprofv3 names them
  ``<pid>_kernel_trace.csv``, ``<pid>_hip_api_trace.csv`` ...); CSV files of other records (``agent_info.csv``
  ...) are listed as not read.
- ``json``, ``pftrace`` (Perfetto), ``otf2``: not read; refused in one sentence saying what is.

A kernel dispatch is linked to its launch by ``Correlation_Id`` where the output holds the HIP API call with
that id (``DeviceOp.link`` ``correlation``). Every op keeps its hardware queue (``DeviceOp.queue``): the AMD
queue its dispatch packet went to (``GPU_MAX_HW_QUEUES`` per device per process, 4 by default), which a Kineto
trace does not record.
"""

from __future__ import annotations

import csv
import gzip
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aorta.timeline import overlap
from aorta.timeline.device_op import DeviceOp

KINETO, CSV, ROCPD = "kineto", "rocprofv3-csv", "rocpd"
READ = (
    "Kineto Chrome traces (torch.profiler .json / .json.gz), rocprofv3 CSV (a .csv file or a folder of them) "
    "and the rocpd SQLite database (.db)"
)
_SQLITE_MAGIC = b"SQLite format 3\x00"
_NOT_READ = {  # suffix -> what it is
    ".pftrace": "a Perfetto protobuf trace (rocprofv3 --output-format pftrace)",
    ".perfetto-trace": "a Perfetto protobuf trace",
    ".otf2": "an OTF2 archive (rocprofv3 --output-format otf2)",
    ".nsys-rep": "an Nsight Systems report",
    ".qdrep": "an Nsight Systems report",
}


class RocprofFileError(ValueError):
    """A rocprofv3 output or a file of a format not read: the message names the file and what is wrong."""


@dataclass
class RocprofTrace:
    path: Path
    source: str  # CSV or ROCPD
    ops: list[DeviceOp]
    api_calls: dict[str, int] = field(default_factory=dict)  # "DOMAIN function" -> calls
    records: dict[str, int] = field(default_factory=dict)  # record kind -> rows read
    not_read: list[str] = field(
        default_factory=list
    )  # CSV files of a rank's output that hold no trace record


def format_of(path: Path) -> str:
    """KINETO, CSV or ROCPD for a file aorta reads; ``RocprofFileError`` in one sentence for any other."""
    if path.is_dir():
        if any(path.glob("*.csv")):
            return CSV
        raise RocprofFileError(f"{path}: a folder with no .csv file; read are {READ}")
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError as exc:
        raise RocprofFileError(f"{path}: cannot read: {exc}") from None
    name = path.name.lower()
    for suffix, what in _NOT_READ.items():
        if name.endswith(suffix):
            raise RocprofFileError(f"{path}: {what} is not read; read are {READ}")
    if head.startswith(_SQLITE_MAGIC):
        return ROCPD
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as g:
                head = g.read(4096)
        except (OSError, EOFError):
            return KINETO  # the Chrome trace loader names the damage
    text = head.lstrip()
    if b'"rocprofiler-sdk-tool"' in head:
        raise RocprofFileError(
            f"{path}: rocprofv3's JSON output (--output-format json) is not read; read are {READ}"
        )
    if text[:1] in (b"{", b"["):
        return KINETO
    if name.endswith(".csv") or text.startswith((b'"Kind"', b'"Domain"', b"Kind,", b"Domain,")):
        return CSV
    raise RocprofFileError(f"{path}: not a trace aorta reads; read are {READ}")


def read(path: Path, kind: str) -> RocprofTrace:
    """A rocprofv3 output, CSV (a file or a folder of them) or ROCPD."""
    return _read_rocpd(path) if kind == ROCPD else _read_csv(path)


# --------------------------------------------------------------------------- CSV
def _ns(value: str, where: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise RocprofFileError(f"{where}: timestamp {value!r} is not an integer of ns") from None


def _span_us(row: dict, where: str, what: str) -> tuple[float, float]:
    """(start µs, duration µs) from a row's ns timestamps; the duration from the integers, so it is exact."""
    start, end = _ns(row.get("Start_Timestamp", ""), where), _ns(row.get("End_Timestamp", ""), where)
    if end < start:
        raise RocprofFileError(f"{where}: {what} ends before it starts")
    return start / 1e3, (end - start) / 1e3


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None


def _csv_rows(path: Path) -> Iterable[tuple[int, dict]]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            yield from enumerate(csv.DictReader(f), start=2)  # line 1 is the header
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise RocprofFileError(f"{path}: not a readable CSV file ({exc})") from None


KERNEL_SUFFIX = "kernel_trace.csv"


def _rank_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(path.glob("*.csv"))
    if path.name.endswith(KERNEL_SUFFIX):
        prefix = path.name[: -len(KERNEL_SUFFIX)]
        return sorted(p for p in path.parent.glob(f"{prefix}*.csv") if p.name.startswith(prefix))
    return [path]


def _is_record_file(path: Path) -> bool:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return False
    return "Kind" in header or {"Domain", "Function"} <= set(header)


def _read_csv(path: Path) -> RocprofTrace:
    files = _rank_files(path)
    not_read = [f.name for f in files if len(files) > 1 and not _is_record_file(f)]
    files = [f for f in files if f.name not in not_read]
    kernels: list[tuple[dict, str]] = []
    copies: list[tuple[dict, str]] = []
    launches: dict[int, float] = {}
    api: Counter[str] = Counter()
    records: Counter[str] = Counter()
    for f in files:
        for line, row in _csv_rows(f):
            where = f"{f}: line {line}"
            kind = row.get("Kind")
            if kind == "KERNEL_DISPATCH":
                kernels.append((row, where))
            elif kind == "MEMORY_COPY":
                copies.append((row, where))
            elif row.get("Domain") and row.get("Function"):
                api[f"{row['Domain']} {row['Function']}"] += 1
                corr = _int_or_none(row.get("Correlation_Id"))
                start = _ns(row.get("Start_Timestamp", ""), where) / 1e3
                if corr is not None and row["Domain"].startswith("HIP"):
                    launches[corr] = min(start, launches.get(corr, start))
                kind = row["Domain"]
            else:
                raise RocprofFileError(
                    f"{where}: a row that is no kernel dispatch, memory copy or API call of rocprofv3 "
                    f"(columns {', '.join(list(row)[:4])} ...)"
                )
            records[kind] += 1
    ops = [_kernel_op(r, w, launches) for r, w in kernels] + [_copy_op(r, w, launches) for r, w in copies]
    return RocprofTrace(
        path, CSV, sorted(ops, key=lambda o: (o.start_us, o.end_us)), dict(api), dict(records)
    )


def _linked(corr: int | None, launches: dict[int, float]) -> tuple[float | None, str | None]:
    t = launches.get(corr) if corr is not None else None
    return t, ("correlation" if t is not None else None)


def _kernel_op(row: dict, where: str, launches: dict[int, float]) -> DeviceOp:
    start, dur = _span_us(row, where, "kernel")
    corr = _int_or_none(row.get("Correlation_Id"))
    launch, link = _linked(corr, launches)
    grid = tuple(_int_or_none(row.get(f"Grid_Size_{a}")) or 0 for a in "XYZ")
    block = tuple(_int_or_none(row.get(f"Workgroup_Size_{a}")) or 0 for a in "XYZ")
    return DeviceOp(
        name=row.get("Kernel_Name") or "",
        stream=_int_or_none(row.get("Stream_Id")) or 0,
        start_us=start,
        dur_us=dur,
        grid=grid if any(grid) else None,
        block=block if any(block) else None,
        launch_us=launch,
        correlation=corr,
        queue=_int_or_none(row.get("Queue_Id")),
        link=link,
    )


def _copy_op(row: dict, where: str, launches: dict[int, float]) -> DeviceOp:
    start, dur = _span_us(row, where, "memory copy")
    corr = _int_or_none(row.get("Correlation_Id"))
    launch, link = _linked(corr, launches)
    return DeviceOp(
        name=row.get("Direction") or "MEMORY_COPY",
        stream=_int_or_none(row.get("Stream_Id")) or 0,
        start_us=start,
        dur_us=dur,
        category="gpu_memcpy",
        launch_us=launch,
        correlation=corr,
        link=link,
    )


# --------------------------------------------------------------------------- rocpd (SQLite)
_KERNELS = """
SELECT K.start, K."end", K.queue_id, K.stream_id, COALESCE(S.kernel_name, S.display_name, ''), E.correlation_id
FROM rocpd_kernel_dispatch K
LEFT JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id
LEFT JOIN rocpd_event E ON E.id = K.event_id
"""
_COPIES = """
SELECT M.start, M."end", M.queue_id, M.stream_id, COALESCE(N.string, 'MEMORY_COPY'), E.correlation_id
FROM rocpd_memory_copy M
LEFT JOIN rocpd_string N ON N.id = M.name_id
LEFT JOIN rocpd_event E ON E.id = M.event_id
"""
_CALLS = """
SELECT R.start, COALESCE(N.string, ''), COALESCE(C.string, ''), E.correlation_id
FROM rocpd_region R
LEFT JOIN rocpd_string N ON N.id = R.name_id
LEFT JOIN rocpd_event E ON E.id = R.event_id
LEFT JOIN rocpd_string C ON C.id = E.category_id
"""


def _read_rocpd(path: Path) -> RocprofTrace:
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise RocprofFileError(f"{path}: cannot open the rocpd database ({exc})") from None
    try:
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        if "rocpd_kernel_dispatch" not in names:
            raise RocprofFileError(
                f"{path}: an SQLite database without rocprofv3's rocpd_kernel_dispatch view; read are {READ}"
            )
        api: Counter[str] = Counter()
        calls: Counter[str] = Counter()
        launches: dict[int, float] = {}
        if {"rocpd_region", "rocpd_string", "rocpd_event"} <= names:
            for start, name, category, corr in con.execute(_CALLS):
                api[f"{category} {name}".strip()] += 1
                calls[category or "REGION"] += 1
                if corr is not None and category.startswith("HIP"):
                    launches[int(corr)] = min(start / 1e3, launches.get(int(corr), start / 1e3))
        ops = [_db_op(row, "kernel", launches, path) for row in con.execute(_KERNELS)]
        records = {"KERNEL_DISPATCH": len(ops), **calls}
        if "rocpd_memory_copy" in names:
            copies = [_db_op(row, "gpu_memcpy", launches, path) for row in con.execute(_COPIES)]
            ops += copies
            records["MEMORY_COPY"] = len(copies)
    except sqlite3.Error as exc:
        raise RocprofFileError(f"{path}: not a readable rocpd database ({exc})") from None
    finally:
        con.close()
    return RocprofTrace(path, ROCPD, sorted(ops, key=lambda o: (o.start_us, o.end_us)), dict(api), records)


def _db_op(row: Sequence, category: str, launches: dict[int, float], path: Path) -> DeviceOp:
    start, end, queue, stream, name, corr = row
    if not isinstance(start, int) or not isinstance(end, int) or end < start:
        raise RocprofFileError(f"{path}: a {category} record with start {start!r} and end {end!r} (ns)")
    corr = int(corr) if corr is not None else None
    launch, link = _linked(corr, launches)
    return DeviceOp(
        name=name,
        stream=stream if stream is not None else 0,
        start_us=start / 1e3,
        dur_us=(end - start) / 1e3,
        category=category,
        launch_us=launch,
        correlation=corr,
        queue=queue,
        link=link,
    )


# --------------------------------------------------------------------------- figures per hardware queue
def queue_figures(ops: Sequence[DeviceOp]) -> list[dict]:
    """Per hardware queue that ran kernels: kernels, busy time (union of its kernels, ms) and the streams whose
    kernels went to it; [] where no op says its queue (a Kineto trace). The union is taken on whole ns (the
    profiler's own timestamps, recovered from µs exactly: a float64 near 1.5e12 µs is off by < 0.001 ns)."""
    by_queue: dict[int, list[DeviceOp]] = {}
    for op in ops:
        if op.queue is not None and op.category == "kernel":
            by_queue.setdefault(op.queue, []).append(op)
    out = []
    for q, ks in sorted(by_queue.items()):
        spans = [(round(k.start_us * 1e3), round(k.start_us * 1e3) + round(k.dur_us * 1e3)) for k in ks]
        out.append(
            {
                "queue": q,
                "kernels": len(ks),
                "busy_ms": sum(e - s for s, e in overlap.union(spans)) / 1e6,
                "streams": sorted({k.stream for k in ks}, key=str),
            }
        )
    return out
