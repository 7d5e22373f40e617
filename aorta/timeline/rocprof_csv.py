"""rocprofv3's CSV output read as device ops, one process at a time (pure: no torch; stdlib csv).

``--output-format csv`` writes one file per record kind and process, ``<pid>_<kind>.csv`` in the host's
folder (``%hostname%/%pid%``); the documentation's samples drop the ``<pid>_``. The files are told apart by
their header, not their names:

- ``Kind`` ``KERNEL_DISPATCH`` rows (``kernel_trace.csv``): ``Queue_Id``, ``Stream_Id``, ``Kernel_Name``,
  ``Correlation_Id`` (the internal id), ``Start_Timestamp`` / ``End_Timestamp`` in ns;
- ``Kind`` ``MEMORY_COPY`` rows (``memory_copy_trace.csv``): ``Direction``, the same ids and times;
- rows of other kinds (``--sys-trace`` adds ``MEMORY_ALLOCATION``, ``SCRATCH_MEMORY`` ...): counted, in no figure;
- API calls (``hip_api_trace.csv``, ``hsa_api_trace.csv``, ``marker_api_trace.csv``, ``rccl_api_trace.csv``
  ...: ``Domain``, ``Function``, ``Correlation_Id``, times): counted per call, and a HIP call with a kernel's
  correlation id is its launch;
- any other CSV (``agent_info.csv``, ``kernel_stats.csv`` ...): listed as not read.

Every row is held to the format rocprofv3 writes, or refused in one line naming the file, the line and why:
a line cut short (fewer fields than the header, or a last line without its newline whose last timestamp lost
digits: the file was cut; a last line complete without its newline is read, as the documentation's samples
are written), a
timestamp that is not an integer of ns, an end before its start, a kernel dispatch without its ``Queue_Id``.
A row repeated (the same op or call: ``_identity``, held as one hash per row so memory stays bounded) is
dropped and counted, as the Kineto reader drops duplicated events. A file may be gzipped (``.csv.gz``) or come through a pipe (read once: aorta/timeline/trace_source.py).
"""

from __future__ import annotations

import csv
import io
import re
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from aorta.timeline.device_identity import device_value
from aorta.timeline.op_table import INT64_MAX, INT64_MIN, OpTable, OpTableBuilder
from aorta.timeline.rocprof import CSV, RocprofFileError, RocprofTrace, same_run, with_launches
from aorta.timeline.trace_source import DAMAGED_GZIP, Source, damaged_gzip, open_source

KERNEL_SUFFIX = "kernel_trace.csv"
_PID_PREFIX = re.compile(r"^(\d+)_")
_OPS = {"KERNEL_DISPATCH": "kernel", "MEMORY_COPY": "gpu_memcpy"}
_KIND = re.compile(r"[A-Z][A-Z0-9_]*")  # KERNEL_DISPATCH, MEMORY_ALLOCATION ...: others are counted, not read


@dataclass
class _File:
    """One CSV file's records, before the files of a process are put together."""

    name: str
    ops: range = range(0)  # its ops' rows in the process's table
    kernels: int = 0
    launch_ids: array = field(default_factory=lambda: array("q"))  # HIP calls' correlation ids
    launch_ns: array = field(default_factory=lambda: array("q"))  # and their starts
    api: Counter[str] = field(default_factory=Counter)
    records: Counter[str] = field(default_factory=Counter)
    others: Counter[str] = field(default_factory=Counter)  # rows of kinds no figure reads
    duplicates: Counter[str] = field(default_factory=Counter)
    span_ns: tuple[int, int] | None = None  # first start to last end of its rows


def _ns(value: str | None, where: str, column: str) -> int:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise RocprofFileError(f"{where}: {column} {value!r} is not an integer of ns") from None


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None


class _Lines:
    """The text's lines, remembering whether the last one ended with its newline (rocprofv3 ends every line)."""

    def __init__(self, text: Iterable[str]) -> None:
        self._text, self.ended = text, True

    def __iter__(self) -> Iterator[str]:
        for line in self._text:
            self.ended = line.endswith(("\n", "\r"))
            yield line


# Every column read, as rocprofv3 spells it; a header's cells are matched to them whatever their case, spaces,
# '_' or '-' (``Correlation_ID``, ``kernel_name``, ``Start-Timestamp``), and the older rocprof names below.
COLUMNS = (
    "Kind", "Domain", "Function", "Direction", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Process_Id",
    "Kernel_Name", "Correlation_Id", "Start_Timestamp", "End_Timestamp", "Source_Agent_Id", "Destination_Agent_Id",
    "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z", "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z",
)  # fmt: skip
_ALIASES = {  # rocprof v1/v2's names of the same fields
    "beginns": "Start_Timestamp",
    "startns": "Start_Timestamp",
    "endns": "End_Timestamp",
    "gpuid": "Agent_Id",
    "agent": "Agent_Id",
}


def _spelling(cell: str) -> str:
    return re.sub(r"[\s_\-]", "", cell.lstrip("\ufeff")).lower()


_CANONICAL = {**_ALIASES, **{_spelling(c): c for c in COLUMNS}}


def canonical_header(header: list[str]) -> list[str]:
    """A header's cells by the names read here (``COLUMNS``); cells of no column read are kept, stripped."""
    return [_CANONICAL.get(_spelling(cell), cell.strip()) for cell in header]


def _rows(source: Source) -> Iterator[tuple[int, dict[str, str]]]:
    """(line, row by column) of a CSV file; a row with fewer fields than the header, or a last line that
    lost its newline, is refused as cut short."""
    path = source.path
    lines = _Lines(io.TextIOWrapper(source.stream, encoding="utf-8", newline=""))
    reader = csv.reader(lines)
    try:
        header = canonical_header(next(reader, []))
        last: tuple[int, list[str]] | None = None
        before: list[str] | None = None
        for row in reader:
            if not any(row):  # a blank line (an editor's trailing one): no record
                continue
            if last is not None:
                yield _row(path, header, *last)
                before = last[1]
            last = (reader.line_num, row)
        if last is not None:
            if not lines.ended and _cut(header, last[1], before):
                raise RocprofFileError(
                    f"{path}: line {last[0]}: the file ends inside it (no newline at its end: cut short)"
                )
            yield _row(path, header, *last)
    except csv.Error as exc:
        raise RocprofFileError(
            f"{path}: line {reader.line_num}: not a readable CSV line ({exc})"  # the line it stopped in
        ) from None
    except UnicodeDecodeError as exc:
        raise RocprofFileError(f"{path}: not a readable CSV file ({exc})") from None
    except DAMAGED_GZIP as exc:
        raise RocprofFileError(damaged_gzip(path, exc)) from None


def _cut(header: list[str], row: list[str], before: list[str] | None) -> bool:
    """Whether a last line without its newline was cut: fewer fields than the header, or a last timestamp with
    fewer digits than the row before it (a run's ns never lose a digit). Otherwise it is complete, as the
    documentation's samples are written (every field there, no newline after the last)."""
    if len(row) != len(header):
        return True
    if before is None or len(before) != len(row) or not header[-1].endswith("_Timestamp"):
        return False
    return len(row[-1].strip()) < len(before[-1].strip())


def _row(path: Path, header: list[str], line: int, row: list[str]) -> tuple[int, dict[str, str]]:
    if row == header or (
        row and _spelling(row[0]) == _spelling(header[0]) and canonical_header(row) == header
    ):
        raise RocprofFileError(f"{path}: line {line}: the header again (two outputs joined into one file?)")
    if len(row) != len(header):
        raise RocprofFileError(
            f"{path}: line {line}: {len(row)} fields where the header has {len(header)} (the line is cut short "
            "or has extra fields)"
        )
    return line, dict(zip(header, row))


def _correlation(row: dict[str, str], where: str) -> int | None:
    """The row's internal correlation id; None where it has none; refused where it is no integer (a damaged
    cell would unlink the kernel from its launch, silently)."""
    value = row.get("Correlation_Id")
    corr = _int_or_none(value)
    if corr is None and value not in (None, ""):
        raise RocprofFileError(f"{where}: Correlation_Id {value!r} is not an integer")
    return corr


_GRID = ("Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z")
_BLOCK = ("Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z")


def _dims(row: dict[str, str], names: tuple[str, str, str]) -> tuple[int, ...]:
    """A launch's three sizes; 0 for a size absent or no integer."""
    try:
        return (int(row[names[0]]), int(row[names[1]]), int(row[names[2]]))
    except (KeyError, ValueError, TypeError):
        return tuple(_int_or_none(row.get(n)) or 0 for n in names)


def _op(row: dict[str, str], where: str, category: str, shared: dict, ops: OpTableBuilder) -> tuple[int, int]:
    """The row's op appended to ``ops``, and its span (ns); ``shared``: launch dims held once for the file."""
    start = _ns(row.get("Start_Timestamp"), where, "Start_Timestamp")
    end = _ns(row.get("End_Timestamp"), where, "End_Timestamp")
    if end < start:
        raise RocprofFileError(
            f"{where}: the {row['Kind'].lower()} ends before it starts ({end} < {start} ns)"
        )
    queue = _int_or_none(row.get("Queue_Id"))
    if category == "kernel" and queue is None:
        raise RocprofFileError(
            f"{where}: a kernel dispatch with Queue_Id {row.get('Queue_Id')!r} (rocprofv3 writes the hardware "
            "queue of every dispatch)"
        )
    if "Stream_Id" in row and _int_or_none(row["Stream_Id"]) is None:  # older rocprofv3 has no such column
        raise RocprofFileError(f"{where}: a {row['Kind'].lower()} with Stream_Id {row['Stream_Id']!r}")
    grid = _dims(row, _GRID)
    block = _dims(row, _BLOCK)
    name = (row.get("Kernel_Name") if category == "kernel" else row.get("Direction")) or row["Kind"]
    corr = _correlation(row, where)
    try:
        ops.add(
            name,
            _int_or_none(row.get("Stream_Id")) or 0,
            start / 1e3,
            (end - start) / 1e3,  # from the integers, so it is exact
            category,
            shared.setdefault(grid, grid) if any(grid) else None,
            shared.setdefault(block, block) if any(block) else None,
            correlation=corr,
            queue=queue if category == "kernel" else None,
            device=_agent(row),
            start_ns=start,
            dur_ns=end - start,
        )
    except ValueError as exc:  # a number past 64 bits
        raise RocprofFileError(f"{where}: {exc}") from None
    return start, end


def _agent(row: dict[str, str]) -> int | str | None:
    """The agent a row ran on: a kernel's ``Agent_Id``; a copy's GPU end (its destination, its source for a
    copy to the host). rocprofv3 writes ``Agent 4`` (or a bare index): the number where there is one."""
    to_host = str(row.get("Direction", "")).endswith("DEVICE_TO_HOST")
    ends = (
        ("Source_Agent_Id", "Destination_Agent_Id")
        if to_host
        else ("Destination_Agent_Id", "Source_Agent_Id")
    )
    value = row.get("Agent_Id") or row.get(ends[0]) or row.get(ends[1])
    return device_value(value)


def _span(span: tuple[int, int] | None, start: int, end: int) -> tuple[int, int]:
    return (start, end) if span is None else (min(span[0], start), max(span[1], end))


_OP_IDENTITY = ("Kind", "Kernel_Name", "Direction", "Agent_Id", "Queue_Id", "Stream_Id", "Correlation_Id")
_CALL_IDENTITY = ("Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id")


def _identity(row: dict[str, str], kind: str | None) -> int:
    """A row's identity as one hash (bounded memory: a set of ints, not every row's fields): a device op by its
    kind, name, agent, queue, stream, correlation id, start and end; an API call by its domain, function,
    process, thread, correlation id, start and end; a record of another kind by every field."""
    fields = _OP_IDENTITY if kind in _OPS else _CALL_IDENTITY if not kind else tuple(row)
    return hash((*map(row.get, fields), row.get("Start_Timestamp"), row.get("End_Timestamp")))


def _read_file(source: Source, seen: set[int], ops: OpTableBuilder) -> _File:
    """One file's records, its ops appended to the process's ``ops``; ``seen``: the rows of the process's files
    read so far (a row repeated in another file of the process, a file copied beside itself, is a duplicate
    too)."""
    out = _File(source.path.name)
    first = len(ops)
    shared: dict = {}
    at = f"{source.path}: line "
    for line, row in _rows(source):
        where = at + str(line)
        kind = row.get("Kind")
        domain, function = row.get("Domain"), row.get("Function")
        what = kind or (domain if domain and function else None)
        if not what:
            raise RocprofFileError(
                f"{where}: a row that is no record of rocprofv3 (no Kind, no Domain and Function: columns "
                f"{', '.join(list(row)[:4])} ...)"
            )
        if kind and not _KIND.fullmatch(kind):
            raise RocprofFileError(
                f"{where}: Kind {kind!r} is no record kind rocprofv3 writes (a damaged line?)"
            )
        key = _identity(row, kind)
        if key in seen:
            out.duplicates[what] += 1
            continue
        seen.add(key)
        out.records[what] += 1
        if kind in _OPS:
            out.span_ns = _span(out.span_ns, *_op(row, where, _OPS[kind], shared, ops))
            out.kernels += kind == "KERNEL_DISPATCH"
        elif kind:
            out.others[kind] += 1
        else:
            out.api[f"{domain} {function}"] += 1
            start = _ns(row.get("Start_Timestamp"), where, "Start_Timestamp")
            end = _ns(row.get("End_Timestamp"), where, "End_Timestamp")
            if end < start:
                raise RocprofFileError(f"{where}: the {domain} call {function} ends before it starts")
            out.span_ns = _span(out.span_ns, start, end)
            corr = _correlation(row, where)
            if corr is not None and str(domain).startswith("HIP"):
                if not INT64_MIN <= corr <= INT64_MAX:
                    raise RocprofFileError(f"{where}: Correlation_Id {corr} does not fit a 64-bit integer")
                out.launch_ids.append(corr)
                out.launch_ns.append(start)
    out.ops = range(first, len(ops))
    return out


def _is_record_file(path: Path) -> bool:
    try:
        with open_source(path) as source:
            header = next(csv.reader(io.TextIOWrapper(source.stream, encoding="utf-8", newline="")), [])
    except (OSError, UnicodeDecodeError, csv.Error, ValueError, *DAMAGED_GZIP):
        return False
    names = set(canonical_header(header))
    return "Kind" in names or {"Domain", "Function"} <= names


def _csv_files(folder: Path) -> list[Path]:
    return sorted([*folder.glob("*.csv"), *folder.glob("*.csv.gz")])


def _by_process(path: Path) -> dict[int | None, list[Path]]:
    """The files of each process: a folder's by their ``<pid>_`` prefix; a ``<prefix>kernel_trace.csv`` with
    its siblings of the same prefix; any other file alone."""
    if path.is_dir():
        groups: dict[int | None, list[Path]] = {}
        for f in _csv_files(path):
            m = _PID_PREFIX.match(f.name)
            groups.setdefault(int(m.group(1)) if m else None, []).append(f)
        if None in groups and len(groups) > 1:
            pids = ", ".join(str(p) for p in sorted(p for p in groups if p is not None))
            loose = ", ".join(f.name for f in groups[None][:3])
            raise RocprofFileError(
                f"{path}: files of processes {pids} beside files named without a process id ({loose}): "
                "which process they belong to cannot be told; move them apart"
            )
        return groups
    name = path.name
    for suffix in (KERNEL_SUFFIX, KERNEL_SUFFIX + ".gz"):
        if name.endswith(suffix) and path.parent.is_dir():
            prefix = name[: -len(suffix)]
            m = _PID_PREFIX.match(prefix)
            siblings = [p for p in _csv_files(path.parent) if p.name.startswith(prefix)]
            if prefix == "":  # an unprefixed kernel_trace.csv: the unprefixed files beside it
                siblings = [p for p in siblings if not _PID_PREFIX.match(p.name)]
            return {int(m.group(1)) if m else None: siblings or [path]}
    return {None: [path]}


def files_read(path: Path) -> list[Path]:
    """Every file the reader opens for ``path``: a ``<prefix>kernel_trace.csv``'s siblings of its prefix too (an
    output written over one replaced a trace the figures came from, issue 65), a folder's CSV files."""
    try:
        return [f for files in _by_process(path).values() for f in files]
    except (RocprofFileError, OSError):
        return [path]


def _process(
    path: Path, pid: int | None, files: list[_File], ops: OpTable, not_read: list[str]
) -> RocprofTrace:
    """One process's files put together: ops and launches of the files whose times meet the kernels'."""
    ref = [f.span_ns for f in files if f.span_ns and f.kernels]
    ref = ref or [f.span_ns for f in files if f.span_ns and f.ops]
    lo, hi = (min(s[0] for s in ref), max(s[1] for s in ref)) if ref else (0, 0)
    kept, apart = [], []
    for f in files:
        if ref and f.span_ns and not same_run(f.span_ns, (lo, hi)):
            apart.append(
                f"{f.name} ({f.span_ns[0] / 1e6:.3f} to {f.span_ns[1] / 1e6:.3f} ms; the kernels' "
                f"{lo / 1e6:.3f} to {hi / 1e6:.3f} ms)"
            )
        else:
            kept.append(f)
    none = np.empty(0, np.int64)
    mine = ops.take(np.concatenate([np.arange(f.ops.start, f.ops.stop) for f in kept] or [none]))
    ids = np.concatenate([np.frombuffer(f.launch_ids, np.int64) for f in kept if f.launch_ids] or [none])
    starts = np.concatenate([np.frombuffer(f.launch_ns, np.int64) for f in kept if f.launch_ns] or [none])
    mine = with_launches(mine, ids, starts)
    total = sum((f.records for f in files), Counter())
    return RocprofTrace(
        path,
        CSV,
        mine.take(np.lexsort((mine.end_us, mine.columns["start_us"]))),
        dict(sum((f.api for f in files), Counter())),
        dict(total),
        not_read,
        process=pid,
        duplicates=dict(sum((f.duplicates for f in files), Counter())),
        apart=apart,
        not_in_figures=dict(sum((f.others for f in files), Counter())),
    )


def _read_files(paths: list[Path]) -> tuple[list[_File], OpTable]:
    """One process's files and their ops; the identities seen (for duplicates across its files) are let go on
    return, before the ops are put together."""
    files, seen, ops = [], set(), OpTableBuilder()  # type: ignore[var-annotated]
    for p in paths:
        with open_source(p) as s:
            files.append(_read_file(s, seen, ops))
    return files, ops.table()


def read_processes(path: Path, source: Source | None = None) -> list[RocprofTrace]:
    """rocprofv3 CSV output (a file, a ``<prefix>kernel_trace.csv`` with its siblings, or a host's folder),
    one ``RocprofTrace`` per process in pid order. ``source``: ``path`` already opened (a pipe: read once)."""
    if source is not None and not path.is_dir() and not path.name.endswith(KERNEL_SUFFIX):
        builder = OpTableBuilder()
        return [_process(path, None, [_read_file(source, set(), builder)], builder.table(), [])]
    out = []
    for pid, paths in sorted(_by_process(path).items(), key=lambda kv: (kv[0] is not None, kv[0] or 0)):
        not_read = [p.name for p in paths if len(paths) > 1 and not _is_record_file(p)]
        files, ops = _read_files([p for p in paths if p.name not in not_read])
        out.append(_process(path, pid, files, ops, not_read))
    with_work = [t for t in out if len(t.ops)]
    if not with_work or len(with_work) == len(out):
        return out
    # processes with no device work (a data-loader worker's empty files, a launcher): said, not a rank, as in rocpd
    with_work[0].without_work += [
        f"process {t.process}: {sum(t.records.values())} records, no device work"
        for t in out
        if not len(t.ops)
    ]
    return with_work
