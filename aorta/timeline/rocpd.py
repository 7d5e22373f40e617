"""rocprofv3's rocpd SQLite database read as device ops, one process at a time (pure: no torch; stdlib sqlite3).

The schema is rocprofiler-sdk's (``source/share/rocprofiler-sdk-rocpd/rocpd_tables.sql``, ``rocpd_views.sql``;
docs ``how-to/using-rocpd-output-format.rst``), as its writer (``source/lib/output/generateRocpd.cpp``) fills
it:

- the tables are per session, named with a uuid suffix (``rocpd_kernel_dispatch_<uuid>`` ...); the views of
  ``rocpd_views.sql`` without the suffix (``rocpd_kernel_dispatch`` ...) are what is read here;
- every row carries its session's ``guid``, and every join here matches it (a database merged from several
  sessions holds the same ids once per guid);
- times (``start``, ``end``) are ns on the host's clock;
- ``rocpd_event.stack_id`` is the **internal** correlation id (the CSV's ``Correlation_Id``: a kernel's and its
  launch's are the same), ``rocpd_event.correlation_id`` the **external** one (0 in a plain rocprofv3 run:
  joining on it ties every op to one unrelated call); a region (an API call) with no event has its
  ``rocpd_region.id``;
- a kernel's ``agent_id`` is its GPU (``DeviceOp.device``: one timeline per GPU), a copy's the GPU end of it;
- ``pid`` of a record is ``rocpd_info_process.id``, whose ``pid`` is the process's; ``queue_id`` and
  ``stream_id`` are ``rocpd_info_queue.id`` and ``rocpd_info_stream.id``; ``agent_id`` is
  ``rocpd_info_agent.id`` (``type`` GPU / CPU, ``absolute_index``).

A database of several processes gives one ``RocprofTrace`` each; a kernel dispatch on an agent that is not a
GPU, or with no start or end of ns, is refused in one line naming the table and the row.
"""

from __future__ import annotations

import re
import sqlite3
from array import array
from collections import Counter
from pathlib import Path

import numpy as np

from aorta.timeline.device_identity import device_value
from aorta.timeline.op_table import INT64_MAX, INT64_MIN, OpTableBuilder
from aorta.timeline.rocprof import READ, ROCPD, RocprofFileError, RocprofTrace, same_run, with_launches

# a record's pid column is rocpd_info_process.id; the process's own pid is that row's pid
_PROCESS = (
    "COALESCE((SELECT P.pid FROM rocpd_info_process P WHERE P.id = {t}.pid AND P.guid IS {t}.guid), {t}.pid)"
)
_KERNELS = """
SELECT K.id, K.start, K."end", K.queue_id, K.stream_id, COALESCE(S.kernel_name, S.display_name, ''), E.stack_id,
    K.agent_id, {process}, K.guid
FROM rocpd_kernel_dispatch K
LEFT JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid IS K.guid
LEFT JOIN rocpd_event E ON E.id = K.event_id AND E.guid IS K.guid
"""
_COPIES = """
SELECT M.id, M.start, M."end", M.queue_id, M.stream_id, COALESCE(N.string, 'MEMORY_COPY'), E.stack_id,
    CASE WHEN N.string LIKE '%DEVICE_TO_HOST' THEN M.src_agent_id ELSE COALESCE(M.dst_agent_id, M.src_agent_id) END,
    {process}, M.guid
FROM rocpd_memory_copy M
LEFT JOIN rocpd_string N ON N.id = M.name_id AND N.guid IS M.guid
LEFT JOIN rocpd_event E ON E.id = M.event_id AND E.guid IS M.guid
"""
_CALLS = """
SELECT R.start, R."end", COALESCE(N.string, ''), COALESCE(C.string, ''), COALESCE(E.stack_id, R.id),
    {process}, R.guid
FROM rocpd_region R
LEFT JOIN rocpd_string N ON N.id = R.name_id AND N.guid IS R.guid
LEFT JOIN rocpd_event E ON E.id = R.event_id AND E.guid IS R.guid
LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid IS E.guid
"""


def _query(sql: str, alias: str, names: set[str]) -> str:
    process = _PROCESS.format(t=alias) if "rocpd_info_process" in names else f"{alias}.pid"
    return sql.format(process=process)


class _Process:
    def __init__(self) -> None:
        self.api: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.launch_ids, self.launch_ns = array("q"), array("q")  # HIP calls' internal ids and starts
        self.launches_ns: tuple[int, int] | None = None  # first to last HIP call: where the launches are
        self.ops = OpTableBuilder()  # its kernels, then its copies (the tables are read in that order)
        self.count = {"kernel": 0, "gpu_memcpy": 0}
        self.span: dict[str, tuple[int, int] | None] = {"kernel": None, "gpu_memcpy": None}
        self.duplicates: Counter[str] = Counter()  # rows dropped as the same record again, by kind

    def add(self, path: Path, table: str, row: tuple, category: str) -> None:
        rid, start, end, queue, stream, name, corr, agent, _, _ = row
        self.count[category] += 1
        was = self.span[category] or (start, end)
        self.span[category] = (min(was[0], start), max(was[1], end))
        try:
            self.ops.add(
                name,
                stream if stream is not None else 0,
                start / 1e3,
                (end - start) / 1e3,
                category,
                correlation=int(corr) if corr is not None else None,
                queue=queue,  # a copy keeps its queue too; queue figures count kernels only
                device=device_value(agent),
                start_ns=start,
                dur_ns=end - start,
            )
        except ValueError as exc:  # a number past 64 bits
            raise RocprofFileError(f"{path}: table {table}, row id {rid}: {exc}") from None


_KINDS = {"kernel": "KERNEL_DISPATCH", "gpu_memcpy": "MEMORY_COPY"}  # the CSV's record kinds, for the counts


def _check(path: Path, table: str, row: tuple) -> None:
    rid, start, end, queue = row[:4]
    if not isinstance(start, int) or not isinstance(end, int) or end < start:
        raise RocprofFileError(
            f"{path}: table {table}, row id {rid}: start {start!r} and end {end!r} are no span of ns"
        )
    if table == "rocpd_kernel_dispatch" and not isinstance(queue, int):
        raise RocprofFileError(
            f"{path}: table {table}, row id {rid}: queue_id {queue!r} (rocprofv3 writes the queue of every dispatch)"
        )


def _trace(path: Path, pid: int | None, p: _Process) -> RocprofTrace:
    ops = p.ops.table()
    n_kernels, n_copies = p.count["kernel"], p.count["gpu_memcpy"]
    ref = p.span["kernel"] or p.span["gpu_memcpy"]
    apart = []
    rows = np.arange(len(ops))
    if ref and n_copies and n_kernels and not same_run(p.span["gpu_memcpy"], ref):  # type: ignore[arg-type]
        apart.append(f"rocpd_memory_copy ({n_copies} rows)")
        rows = rows[:n_kernels]
    ids, starts = np.frombuffer(p.launch_ids, np.int64), np.frombuffer(p.launch_ns, np.int64)
    if not len(ids):
        ids = starts = np.empty(0, np.int64)
    if ref and p.launches_ns and not same_run(p.launches_ns, ref):
        hip = {c: n for c, n in p.calls.items() if c.startswith("HIP")}
        apart.append(f"rocpd_region's {', '.join(hip)} calls ({sum(hip.values())})")
        ids = starts = np.empty(0, np.int64)
    mine = with_launches(ops.take(rows), ids, starts)
    records = {"KERNEL_DISPATCH": n_kernels, **p.calls}
    if n_copies:
        records["MEMORY_COPY"] = n_copies
    return RocprofTrace(
        path,
        ROCPD,
        mine.take(np.lexsort((mine.end_us, mine.columns["start_us"]))),
        dict(p.api),
        records,
        process=pid,
        apart=apart,
        duplicates=dict(p.duplicates),
    )


def read_processes(path: Path) -> list[RocprofTrace]:
    """A rocpd database (or a folder of them: one per process, as rocprofv3 writes ``<pid>_results.db``)."""
    if path.is_dir():
        traces = [t for db in sorted(path.glob("*.db")) for t in read_processes(db)]
        return sorted(traces, key=lambda t: (t.process is None, t.process or 0))  # pid order, as the CSV's
    _no_hot_journal(path)
    try:
        # read-only and immutable: nothing is written beside the trace (no -shm, no rollback), whatever the
        # folder's permissions; a path's '?' or '#' is escaped by as_uri
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error as exc:
        raise RocprofFileError(f"{path}: cannot open the rocpd database ({exc})") from None
    try:
        return _read(path, con)
    except sqlite3.Error as exc:
        raise RocprofFileError(f"{path}: not a readable rocpd database ({exc})") from None
    finally:
        con.close()


JOURNAL_MAGIC = bytes.fromhex(
    "d9d505f920a163d7"
)  # a rollback journal's header while it is hot (sqlite.org/fileformat)


def _no_hot_journal(path: Path) -> None:
    """``RocprofFileError`` where a write to the database was left unfinished: a hot rollback journal
    (``<db>-journal`` starting with its magic) or a write-ahead log with frames (``<db>-wal``). SQLite would
    roll the journal back into the file (a write, refused on a read-only trace: "attempt to write a readonly
    database"), and a database read without its log misses what the log holds: neither is read as it is."""
    for suffix, what in (("-journal", "a hot rollback journal"), ("-wal", "a write-ahead log")):
        side = path.with_name(path.name + suffix)
        try:
            with side.open("rb") as f:
                head = f.read(len(JOURNAL_MAGIC))
        except OSError:
            continue  # none (the usual case), or not readable: SQLite would not read it either
        if (suffix == "-journal" and head == JOURNAL_MAGIC) or (suffix == "-wal" and head):
            raise RocprofFileError(
                f"{path}: {what} beside it ({side.name}): a write to the database was not finished, and aorta "
                "reads traces without writing to them; open a copy of both files once with sqlite3 (which "
                "completes or rolls back the write) and read the copy"
            )


_TABLES = (
    "rocpd_string",
    "rocpd_event",
    "rocpd_region",
    "rocpd_kernel_dispatch",
    "rocpd_memory_copy",
    "rocpd_info_kernel_symbol",
    "rocpd_info_process",
)
_SESSION = re.compile(
    r"_[0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12}"
)  # rocpd's {{uuid}} suffix


def _views(con: sqlite3.Connection) -> set[str]:
    """The tables and views by the names read here. A database whose views were dropped (or a tool that copied
    only the tables) still holds each session's ``<table>_<uuid>``: read through temporary views over them
    (every session's rows: their guids keep them apart), in the connection's own temp schema, so the file
    stays unchanged."""
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    for base in _TABLES:
        sessions = sorted(n for n in names if n.startswith(base) and _SESSION.fullmatch(n[len(base) :]))
        if base not in names and sessions:
            union = " UNION ALL ".join(f'SELECT * FROM "{t}"' for t in sessions)
            con.execute(f'CREATE TEMP VIEW "{base}" AS {union}')
            names.add(base)
    return names


def _read(path: Path, con: sqlite3.Connection) -> list[RocprofTrace]:
    names = _views(con)
    if "rocpd_kernel_dispatch" not in names:
        raise RocprofFileError(
            f"{path}: an SQLite database without rocprofv3's rocpd_kernel_dispatch view; read are {READ}"
        )
    # one process of one session (a database merged from several runs holds one guid per session)
    procs: dict[tuple[int | None, str | None], _Process] = {}
    if {"rocpd_region", "rocpd_string", "rocpd_event"} <= names:
        for start, end, name, category, corr, pid, guid in con.execute(_query(_CALLS, "R", names)):
            p = procs.setdefault((pid, guid), _Process())
            p.api[f"{category} {name}".strip()] += 1
            p.calls[category or "REGION"] += 1
            if isinstance(start, int) and isinstance(end, int):
                if category.startswith("HIP"):
                    was = p.launches_ns or (start, end)
                    p.launches_ns = (min(was[0], start), max(was[1], end))
                    if corr is not None:
                        if not INT64_MIN <= int(corr) <= INT64_MAX:
                            raise RocprofFileError(f"{path}: rocpd_region: an id {corr} past 64 bits")
                        p.launch_ids.append(int(corr))
                        p.launch_ns.append(start)
    for table, category, query, alias in (
        ("rocpd_kernel_dispatch", "kernel", _KERNELS, "K"),
        ("rocpd_memory_copy", "gpu_memcpy", _COPIES, "M"),
    ):
        if table not in names:
            continue
        seen: set[int] = set()  # a row's identity, its id aside: one hash per row
        for row in con.execute(_query(query, alias, names)):
            _check(path, table, row)
            proc = procs.setdefault((row[-2], row[-1]), _Process())
            identity = hash(row[1:])  # times, queue, stream, name, correlation, agent, process, session
            if identity in seen:  # the same dispatch written twice under a new id: one dispatch
                proc.duplicates[_KINDS[category]] += 1
                continue
            seen.add(identity)
            proc.add(path, table, row, category)
    with_work = {pid: p for pid, p in procs.items() if p.count["kernel"] or p.count["gpu_memcpy"]}
    chosen = with_work or procs or {(None, None): _Process()}

    def order(key: tuple[int | None, str | None]) -> tuple:  # by pid, then a pid's sessions by time
        spans = [s for s in procs[key].span.values() if s] if key in procs else []
        return (key[0] is not None, key[0] or 0, min((s[0] for s in spans), default=0), key[1] or "")

    out = [_trace(path, key[0], chosen[key]) for key in sorted(chosen, key=order)]
    # processes with API calls and no device work (a launcher, or another run's records): said, not a rank
    out[0].without_work = [
        f"process {key[0]}: {sum(procs[key].calls.values())} API calls, no device work"
        for key in sorted(procs, key=order)
        if key not in chosen
    ]
    return out
