"""The history store: one SQLite file (the default, ``.aorta/history.db``) or a PostgreSQL database by URL
(``postgresql://...``, through psycopg 3). The same statements run on both.

Nothing saved is lost: every run is added in one transaction (its row, its figures and its verdicts, or
nothing), writers queue for the database (SQLite: ``BEGIN IMMEDIATE`` and a busy timeout, WAL journal;
PostgreSQL: row inserts and an advisory lock around migrations), and a database this aorta cannot read (newer
schema, a damaged file, not a database) is refused with a ``HistoryError`` that names it, before anything is
written.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aorta.history.run_rows import RunRow, VerdictRow
from aorta.history.schema import SCHEMA_VERSION, statements
from aorta.record.output_arguments import special_file
from aorta.record.output_paths import check_path_names
from aorta.record.redact import (
    LIBPQ_KEYWORDS,
    conninfo_secrets,
    libpq_fields,
    redact_argv,
    redact_conninfo,
    redact_text,
    redact_url,
    url_password,
)
from aorta.record.storage_faults import fault_words, folder_fault

DEFAULT_PATH = Path(".aorta") / "history.db"
BUSY_TIMEOUT_MS = 60_000  # a writer waits this long for another to commit before giving up
WAIT_NOTICE_MS = 250  # a writer held up longer than this says who holds the history, then waits
MIGRATION_LOCK = 40_040  # PostgreSQL advisory lock key: one process migrates at a time


class HistoryError(ValueError):
    """The history store cannot be used or written: the message names it and what to do."""


class HistoryWriteError(HistoryError):
    """A run could not be written (disk full, locked past the timeout); nothing of it was kept."""


class HistoryMissing(HistoryError):
    """A command that only reads was given a history that does not exist: nothing is created."""


class HistoryLocked(HistoryWriteError):
    """Another writer held the history past the timeout: nothing was written (exit 3, as a run not written)."""


def holders(path: str | os.PathLike) -> str:
    """Which other processes hold ``path`` (or its -wal / -shm files) open, in words: "pid 123 (aorta history
    add ...)", from /proc (Linux; "another process" elsewhere or where none can be read)."""
    names = {os.path.realpath(f"{path}{suffix}") for suffix in ("", "-wal", "-shm", "-journal")}
    found = []
    for pid in (
        sorted((d for d in os.listdir("/proc") if d.isdigit()), key=int) if os.path.isdir("/proc") else ()
    ):
        if int(pid) == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.path.realpath(f"/proc/{pid}/fd/{fd}") in names for fd in fds):
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    argv = [w.decode(errors="replace") for w in fh.read().split(b"\0") if w]
                found.append(f"pid {pid} ({' '.join(' '.join(redact_argv(argv)).split())[:80]})")
        except OSError:
            continue
    return ", ".join(found) or "another process"


def _unwritable(path: Path) -> bool:
    """The history cannot be written here: its file, or the folder its journal files go in (a read-only
    folder or mount; ``os.access`` answers for the mount even to root)."""
    folder = path.parent  # "." for a bare file name: a Path's parent is never empty
    return not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK))


class HistoryStorageFault(HistoryWriteError):
    """The place the history lives cannot be written now (no space, over quota, an I/O error): the history is
    not damaged (exit 3, as a run not written)."""


def _storage_fault(p: Path) -> str | None:
    """What stops a write beside ``p`` now, in words (no space, quota, read-only), or None."""
    fault = folder_fault(p.parent)
    return None if fault is None else fault_words(fault)


def _sound_sqlite(p: Path) -> bool:
    """``p`` reads as a sound SQLite database (its header, then ``PRAGMA quick_check`` read-only): a write that
    failed on it is a fault of the place, not of the history."""
    try:
        with open(p, "rb") as fh:
            if not fh.read(16).startswith(b"SQLite format 3\0"):
                return False
        conn = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            return conn.execute("PRAGMA quick_check").fetchone() == ("ok",)
        finally:
            conn.close()
    except (OSError, sqlite3.DatabaseError):
        return False


def _sqlite_refusal(p: Path, exc: BaseException) -> HistoryError:
    """Why a SQLite history cannot be used, told apart: locked by a writer, read-only here, no space or quota
    (issue 56: a full disk was called "damaged ... move it aside"), or damaged: said only of a file that does
    not read as a sound SQLite database."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return HistoryLocked(
            f"{p}: held by another writer ({holders(p)}) for more than {BUSY_TIMEOUT_MS / 1000:.0f} s: nothing "
            "was written; the history is not damaged: run again when that writer has finished"
        )
    if "readonly" in text or "read-only" in text or _unwritable(p):
        return HistoryError(
            f"{p}: is read-only here (a read-only file, folder or mount): the history is not damaged, but aorta "
            "cannot write it or its journal beside it; give a writable --history, or copy the file somewhere "
            "writable"
        )
    fault = _storage_fault(p)
    if fault is not None:
        return HistoryStorageFault(
            f"{p}: cannot be written here: {fault}; the history is not damaged ({exc})"
        )
    if _sound_sqlite(p):
        return HistoryWriteError(
            f"{p}: could not be opened for writing ({exc}), though it reads as a sound SQLite history: it is not "
            "damaged; check the space, quota and permissions of its folder and run again"
        )
    return HistoryError(
        f"{p}: is not a readable SQLite history ({exc}): a damaged file, or not a database; "
        "move it aside (aorta starts a new one) or restore it from a copy"
    )


def is_postgresql(url: str) -> bool:
    """A PostgreSQL history: a ``postgresql://`` URL or a libpq key=value string (``host=h dbname=d``)."""
    return url.startswith(("postgresql://", "postgres://")) or libpq_fields(url) is not None


_KEY_VALUE = re.compile(r"^\s*[A-Za-z_]+\s*=")


def parse_history_url(text: str) -> str:
    """``--aorta-history`` / ``--history``: a SQLite file path (or ``sqlite:///path``), a ``postgresql://``
    URL or a libpq key=value string (``host=h dbname=d user=u password=pw``, PostgreSQL's own form); ``ValueError``
    naming the value and what is allowed. Text that starts as key=value and is not libpq's is refused, never taken
    as a file name (issue 56: a file named with the password was created, and the shared history never got the
    run)."""
    value = str(text).strip()
    if not value:
        raise ValueError(
            "--aorta-history='': give a SQLite file (e.g. .aorta/history.db) or a postgresql:// URL"
        )
    if is_postgresql(value):
        return value
    if _KEY_VALUE.match(value) and "://" not in value:
        raise ValueError(
            f"--aorta-history={redact_conninfo(value)!r}: reads as key=value but not as a libpq connection "
            f"string (keywords: {', '.join(sorted(LIBPQ_KEYWORDS))}); for a SQLite file whose name holds '=', "
            "write it as ./NAME"
        )
    if "://" in value and not value.startswith("sqlite:///"):
        raise ValueError(
            f"--aorta-history={redact_url(value)!r}: unknown scheme {value.split('://')[0]!r}; allowed: a file path, "
            "sqlite:///PATH or postgresql://USER@HOST/DB"
        )
    path = Path(value[len("sqlite:///") :] if value.startswith("sqlite:///") else value)
    try:  # a name longer than the filesystem takes, a link that leads nowhere: refused here, not an OSError
        check_path_names("--aorta-history", path)
    except ValueError as exc:
        raise ValueError(str(exc)) from None
    if os.path.isdir(path):
        raise ValueError(f"--aorta-history={value!r}: is a folder; give a file such as {path / 'history.db'}")
    return str(path)


@dataclass(frozen=True)
class StoredRun:
    id: int
    recorded_at: str
    machine_model: str
    machine_id: str
    stack_label: str
    fingerprint: dict
    settings: dict
    commit_id: str
    source: str


@dataclass(frozen=True)
class StoredFigure:
    run_id: int
    benchmark: str
    figure: str
    value: float
    unit: str
    higher_is_better: bool
    samples: tuple[float, ...]


class HistoryStore:
    """An open history database. ``open_store(url)`` opens (creating or migrating) it."""

    def __init__(self, conn: Any, dialect: str, where: str, secrets: tuple[str, ...] = ()) -> None:
        self.conn, self.dialect, self.where = conn, dialect, where
        self.secrets = secrets  # hidden from every message that quotes the server (aorta/record/redact.py)

    def said(self, exc: BaseException) -> str:
        """An error of the database, as it may be printed."""
        return redact_text(str(exc).strip(), self.secrets)

    # ------------------------------------------------------------------ low level
    def _sql(self, text: str) -> str:
        return text.replace("?", "%s") if self.dialect == "postgresql" else text

    def execute(self, text: str, params: Sequence = ()) -> Any:
        cur = self.conn.cursor()
        cur.execute(self._sql(text), tuple(params))
        return cur

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction: everything in it is kept, or nothing."""
        if self.dialect == "sqlite":
            self._begin_immediate()  # take the write lock now: writers queue, none deadlocks
            try:
                yield
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
        else:
            with self.conn.transaction():
                yield

    def _begin_immediate(self) -> None:
        """``BEGIN IMMEDIATE``; where another writer holds the lock, say who before waiting for it (up to
        ``BUSY_TIMEOUT_MS``), so a wait is never silent."""
        self.conn.execute(f"PRAGMA busy_timeout = {min(WAIT_NOTICE_MS, BUSY_TIMEOUT_MS)}")
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
        finally:
            self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        print(
            f"aorta history: {self.where} is held by another writer ({holders(self.where)}): waiting up to "
            f"{BUSY_TIMEOUT_MS / 1000:.0f} s",
            file=sys.stderr,
            flush=True,
        )
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise _sqlite_refusal(Path(self.where), exc) from None

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ schema
    def version(self) -> int:
        """The schema version the database is at (0: empty)."""
        if self.dialect == "sqlite":
            found = self.execute("SELECT name FROM sqlite_master WHERE type='table' AND name='aorta_schema'")
        else:
            found = self.execute(
                "SELECT tablename FROM pg_tables WHERE tablename='aorta_schema' AND schemaname = current_schema()"
            )
        if found.fetchone() is None:
            tables = self._table_count()
            if tables:
                raise HistoryError(
                    f"{self.where}: holds {tables} tables but none is aorta's (no aorta_schema): not an aorta "
                    "history; give another file or database"
                )
            return 0
        row = self.execute("SELECT version FROM aorta_schema").fetchone()
        return int(row[0]) if row else 0

    def _table_count(self) -> int:
        if self.dialect == "sqlite":
            q = "SELECT count(*) FROM sqlite_master WHERE type='table'"
        else:
            q = "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
        return int(self.execute(q).fetchone()[0])

    def migrate(self) -> int:
        """Create or migrate the schema to ``SCHEMA_VERSION`` in one transaction; refuse a newer one. Every read
        of the store's state is made where it cannot straddle another writer's migration (issue 56: two catalog
        reads outside the lock saw a half-made history, "4 tables but none is aorta's", and refused it):
        PostgreSQL reads it under the advisory lock that guards the migration; SQLite reads it in one snapshot
        (a read transaction), then again under its write lock before migrating. A history already at this version
        is only read (no write lock: a reader is never held up by a writer)."""
        if self.dialect == "postgresql":
            with self.transaction():
                self.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
                return self._migrate_held()
        self.conn.execute("BEGIN")  # one snapshot: both catalog reads see the same committed state
        try:
            found = self.version()
            if found == SCHEMA_VERSION:
                _check_rows(self)
        finally:
            self.conn.execute("COMMIT")
        if found == SCHEMA_VERSION:
            return found
        with self.transaction():
            return self._migrate_held()

    def _migrate_held(self) -> int:
        """The migration, with the lock that guards it held: the version read again, then raised."""
        found = self.version()
        if found > SCHEMA_VERSION:
            raise HistoryError(
                f"{self.where}: history schema version {found} was written by a newer aorta; this aorta "
                f"reads up to version {SCHEMA_VERSION}: update aorta (the database is left as it is)"
            )
        if found:  # a history's JSON side read before it is migrated or written (issue 65)
            _check_rows(self)
        if found < SCHEMA_VERSION:
            for stmt in statements(self.dialect, found):
                self.execute(stmt)
            self.execute("DELETE FROM aorta_schema")
            self.execute("INSERT INTO aorta_schema (version) VALUES (?)", (SCHEMA_VERSION,))
        return found

    # ------------------------------------------------------------------ writing
    def add_run(self, run: RunRow, added_at: str) -> int | None:
        """Add one run, whole or not at all; its id, or None where the same run is already kept. Whether it is
        kept is asked by the insert itself (``ON CONFLICT DO NOTHING``), under the row lock of its key: a check
        before the insert let two PostgreSQL writers of one run both see none, and the second then failed."""
        with self.transaction():
            key = run.run_key
            cur = self.execute(
                "INSERT INTO runs (run_key, recorded_at, added_at, machine_model, machine_id, host, "
                "stack_label, fingerprint, source, commit_id, settings) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_key) DO NOTHING RETURNING id",
                (
                    key,
                    run.recorded_at,
                    added_at,
                    run.machine_model,
                    run.machine_id,
                    run.host,
                    run.stack_label,
                    json.dumps(run.fingerprint, sort_keys=True),
                    run.source,
                    run.commit_id,
                    json.dumps(run.settings, sort_keys=True),
                ),
            )
            row = cur.fetchone()
            if row is None:  # the same run is kept already
                return None
            run_id = int(row[0])
            self.conn.cursor().executemany(
                self._sql(
                    "INSERT INTO figures (run_id, benchmark, figure, value, unit, higher_is_better, samples) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)"
                ),
                [
                    (
                        run_id,
                        f.benchmark,
                        f.figure,
                        f.value,
                        f.unit,
                        int(f.higher_is_better),
                        json.dumps(f.samples),
                    )
                    for f in run.figures
                ],
            )
            if run.verdicts:
                self.conn.cursor().executemany(
                    self._sql(
                        "INSERT INTO verdicts (run_id, benchmark, figure, verdict, change) VALUES (?, ?, ?, ?, ?)"
                    ),
                    [(run_id, v.benchmark, v.figure, v.verdict, v.change) for v in run.verdicts],
                )
        return run_id

    def add_verdicts(self, source: str, verdicts: Sequence[VerdictRow]) -> int:
        """Attach the gate's verdicts to every run added from ``source`` (the runs the verdicts judged), in one
        transaction; how many runs got them. A verdict a run already holds is kept as it was."""
        with self.transaction():
            ids = [
                int(r[0]) for r in self.execute("SELECT id FROM runs WHERE source = ?", (source,)).fetchall()
            ]
            for run_id in ids:
                for v in verdicts:
                    self.execute(
                        "INSERT INTO verdicts (run_id, benchmark, figure, verdict, change) VALUES (?, ?, ?, ?, ?) "
                        "ON CONFLICT (run_id, benchmark, figure) DO NOTHING",
                        (run_id, v.benchmark, v.figure, v.verdict, v.change),
                    )
        return len(ids)

    def prune(self, before: str) -> int:
        """Delete the runs recorded before ``before`` (ISO UTC), with their figures; how many went."""
        with self.transaction():
            ids = [
                r[0] for r in self.execute("SELECT id FROM runs WHERE recorded_at < ?", (before,)).fetchall()
            ]
            for table in ("verdicts", "figures"):
                self.execute(
                    f"DELETE FROM {table} WHERE run_id IN (SELECT id FROM runs WHERE recorded_at < ?)",
                    (before,),
                )
            self.execute("DELETE FROM runs WHERE recorded_at < ?", (before,))
        return len(ids)

    # ------------------------------------------------------------------ reading
    def runs(self, machine_model: str | None = None, stack_label: str | None = None) -> list[StoredRun]:
        """The kept runs, oldest first (by when they ran), optionally of one machine model and stack."""
        q = (
            "SELECT id, recorded_at, machine_model, machine_id, stack_label, fingerprint, settings, commit_id, "
            "source FROM runs"
        )
        where, params = [], []
        if machine_model is not None:
            where.append("machine_model = ?")
            params.append(machine_model)
        if stack_label is not None:
            where.append("stack_label = ?")
            params.append(stack_label)
        if where:
            q += " WHERE " + " AND ".join(where)
        rows = self.execute(q + " ORDER BY recorded_at, id", params).fetchall()
        with self._damaged_rows("runs"):
            return [
                StoredRun(int(r[0]), r[1], r[2], r[3], r[4], json.loads(r[5]), json.loads(r[6]), r[7], r[8])
                for r in rows
            ]

    @contextmanager
    def _damaged_rows(self, table: str) -> Iterator[None]:
        """A row that does not decode (its JSON cut or changed, a NULL where a value belongs): the history is
        damaged, said in one line naming it; never a JSONDecodeError traceback (issue 65)."""
        try:
            yield
        except (ValueError, TypeError) as exc:
            raise HistoryError(
                f"{self.where}: is a damaged history: a row of its {table} table does not read ({exc}); nothing "
                "was written; restore it from a copy, or move it aside (aorta starts a new one)"
            ) from None

    def figures(self, run_ids: Sequence[int] | None = None) -> list[StoredFigure]:
        q = "SELECT run_id, benchmark, figure, value, unit, higher_is_better, samples FROM figures"
        rows = self.execute(q + " ORDER BY run_id, benchmark, figure").fetchall()
        keep = None if run_ids is None else set(run_ids)
        with self._damaged_rows("figures"):
            return [
                StoredFigure(int(r[0]), r[1], r[2], float(r[3]), r[4], bool(r[5]), tuple(json.loads(r[6])))
                for r in rows
                if keep is None or int(r[0]) in keep
            ]

    def verdicts(self) -> dict[tuple[int, str, str], tuple[str, float | None]]:
        rows = self.execute("SELECT run_id, benchmark, figure, verdict, change FROM verdicts").fetchall()
        return {(int(r[0]), r[1], r[2]): (r[3], r[4]) for r in rows}

    def count(self) -> tuple[int, int]:
        """(runs, figure rows) kept."""
        return (
            int(self.execute("SELECT count(*) FROM runs").fetchone()[0]),
            int(self.execute("SELECT count(*) FROM figures").fetchone()[0]),
        )


def _read_only_connection(p: Path, why: str) -> sqlite3.Connection:
    """``p`` opened for reading where nothing can be written beside it (``why``: a read-only place, a full disk),
    in its latest committed state or refused (issue 56: a history copied with its write-ahead log, or on a
    read-only mount, was read in an older state without a word). Without a write-ahead log the file is that
    state; with one, SQLite reads it read-only where it can, and otherwise the history is refused."""
    uri = p.resolve().as_uri()
    wal = Path(f"{p}-wal")
    if not (wal.exists() and wal.stat().st_size > 0):
        return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, isolation_level=None)
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.DatabaseError:
        conn = None
    if conn is not None:
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # reads the log's commits too
            return conn
        except sqlite3.DatabaseError:
            conn.close()
    raise HistoryError(
        f"{p}: {why}, and its write-ahead log {wal} holds commits not yet in the file, which SQLite cannot read "
        "without writing beside it: aorta will not show an older state; copy the file with its -wal and -shm "
        "to a writable folder and read it there"
    )


SQLITE_HEADER = b"SQLite format 3\x00"


def _wal_or_new(p: Path) -> bool:
    """``p`` is a history to put in WAL mode: new or empty (aorta creates it so), or in WAL mode already (the
    pragma only opens its log). Any other file is left as it is until it is known: switching its journal rewrote
    the header of another program's database, or of a damaged one, before either was refused (issue 65)."""
    try:
        with open(p, "rb") as fh:
            header = fh.read(20)
    except OSError:
        return True  # nothing there yet (or nothing to read): SQLite says what it is
    if not header:
        return True
    return header[:16] == SQLITE_HEADER and header[18:20] == b"\x02\x02"


def _open_sqlite(path: str, create: bool, write: bool) -> HistoryStore:
    p = Path(path)
    kind = special_file(p)
    if kind:  # SQLite would wait on a named pipe for a writer forever (issue 65)
        raise HistoryError(f"{p}: is {kind}, not a history file: give the SQLite file itself")
    if not create and not os.path.isfile(p):
        raise HistoryMissing(
            f"{p}: no history here ({'a folder' if p.is_dir() else 'no such file'}): nothing created; give the "
            f"history with --history or $AORTA_HISTORY (runs are kept there by --aorta-history or aorta history add)"
        )
    read_only = not write and _unwritable(p)
    try:
        if read_only:  # a history on a read-only place is read as it is: no journal can be made beside it
            conn = _read_only_connection(p, "is on a read-only place (file, folder or mount)")
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(p, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            try:
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                if _wal_or_new(p):  # readers never block the writer; a killed one rolls back
                    conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA foreign_keys = ON")
            except sqlite3.DatabaseError:
                conn.close()
                fault = None if write or not os.path.isfile(p) else _storage_fault(p)
                if fault is None:
                    raise
                conn = _read_only_connection(p, f"cannot be opened for writing here ({fault})")
    except sqlite3.DatabaseError as exc:
        raise _sqlite_refusal(p, exc) from None
    except OSError as exc:
        raise HistoryError(f"{p}: cannot be created: {fault_words(exc)}") from None
    return HistoryStore(conn, "sqlite", str(p))


def _open_postgresql(url: str) -> HistoryStore:
    try:
        import psycopg
    except ImportError:
        raise HistoryError(
            f"{redact_conninfo(url)}: a PostgreSQL history needs psycopg 3: pip install 'aorta[postgresql]'"
        ) from None
    secret = conninfo_secrets(url)
    try:
        conn = psycopg.connect(url, autocommit=True)
    except psycopg.Error as exc:
        hint = "; a password that holds @ is written %40 in a URL" if "@" in url_password(url) else ""
        said = redact_text(str(exc).strip(), secret)
        raise HistoryError(f"{redact_conninfo(url)}: cannot connect: {said}{hint}") from None
    return HistoryStore(conn, "postgresql", redact_conninfo(url), tuple(secret))


def _check_sound(store: HistoryStore) -> None:
    """A SQLite history whose pages do not read whole (``PRAGMA quick_check``: SQLite's own test of a damaged
    file, pages, indexes and rows) is refused before anything is read or written: issue 65, a damaged history
    gave DatabaseError tracebacks and ``history add`` wrote into it, exit 0."""
    found = [row[0] for row in store.conn.execute("PRAGMA quick_check(3)").fetchall()]
    if found != ["ok"]:
        raise HistoryError(
            f"{store.where}: is a damaged SQLite history (SQLite's check: {' '.join(' '.join(map(str, found)).split())}): nothing "
            "was read or written; move it aside (aorta starts a new one) or restore it from a copy"
        )


# The JSON side of a history: each column a row keeps as JSON text (or a number), and the kind it must read as.
JSON_COLUMNS = (
    ("runs", "id", "fingerprint", "object"),
    ("runs", "id", "settings", "object"),  # schema 2 on
    ("figures", "run_id", "samples", "array"),
)
NUMBER_COLUMNS = (("figures", "run_id", "value"),)
_JSON_KINDS = {"object": dict, "array": list}


def _columns(store: HistoryStore, table: str) -> set[str]:
    if store.dialect == "sqlite":
        return {str(r[1]) for r in store.conn.execute(f"PRAGMA table_info({table})").fetchall()}
    rows = store.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ? AND table_schema = current_schema()",
        (table,),
    ).fetchall()
    return {str(r[0]) for r in rows}


def _first_bad_row(store: HistoryStore, table: str, key: str, column: str, kind: str) -> object | None:
    """The key of the first row of ``table`` whose ``column`` does not read as ``kind`` (a JSON object or array,
    or a number), or None. SQLite asks its own JSON functions (one scan, no row decoded in Python); another
    server's rows are decoded here."""
    if store.dialect == "sqlite":
        if kind == "number":
            test = f"typeof({column}) NOT IN ('real', 'integer')"
        else:
            test = f"(CASE WHEN json_valid({column}) THEN json_type({column}) END) IS NOT '{kind}'"
        row = store.conn.execute(f"SELECT {key} FROM {table} WHERE {test} LIMIT 1").fetchone()
        return None if row is None else row[0]
    for ident, value in store.execute(f"SELECT {key}, {column} FROM {table}").fetchall():
        try:
            ok = (
                isinstance(value, (int, float)) or float(value) == float(value)
                if kind == "number"
                else isinstance(json.loads(value), _JSON_KINDS[kind])
            )
        except (TypeError, ValueError):
            ok = False
        if not ok:
            return ident
    return None


def _check_rows(store: HistoryStore) -> None:
    """A history whose file is sound but whose JSON side does not read (a fingerprint cut, samples that are no
    list, a value that is no number) is refused before anything is written into it (issue 65, leftover 3:
    ``history add`` wrote into one while ``show`` refused it). One line: the history, the table, the row and
    what does not read."""
    tables = {t: _columns(store, t) for t in ("runs", "figures")}
    checks = [(t, k, c, kind) for t, k, c, kind in JSON_COLUMNS] + [
        (t, k, c, "number") for t, k, c in NUMBER_COLUMNS
    ]
    for table, key, column, kind in checks:
        if column not in tables[table]:
            continue  # an older schema, migrated after this check
        bad = _first_bad_row(store, table, key, column, kind)
        if bad is not None:
            what = "a number" if kind == "number" else f"a JSON {kind}"
            raise HistoryError(
                f"{store.where}: is a damaged history: a row of its {table} table does not read (run {bad}: its "
                f"{column} is not {what}); nothing was read or written; restore it from a copy, or move it aside "
                "(aorta starts a new one)"
            )


def open_store(url: str, *, create: bool = True, write: bool = True) -> HistoryStore:
    """Open the history at ``url`` (a parsed ``parse_history_url``), creating or migrating its schema. With
    ``create=False`` a SQLite file that does not exist is ``HistoryMissing``; with ``write=False`` (a command
    that only reads) one on a read-only place is read as it is. Locked, read-only, missing and damaged are told apart."""
    if is_postgresql(url):
        return _ready(_open_postgresql(url))
    made = [f for f in _sqlite_files(url) if not os.path.lexists(f)]
    try:
        return _ready(_open_sqlite(url, create, write))
    except HistoryError as exc:
        if url in made and not isinstance(exc, HistoryLocked) and not _holds_history(Path(url)):
            _remove_made(made)  # never another writer's history, created meanwhile
        raise


def _sqlite_files(path: str) -> list[str]:
    return [path, f"{path}-wal", f"{path}-shm", f"{path}-journal"]


def _holds_history(p: Path) -> bool:
    """``p`` holds an aorta history (its schema table committed), read without writing anything."""
    try:
        conn = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True)
        try:
            found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'aorta_schema'").fetchone()
        finally:
            conn.close()
    except (OSError, sqlite3.DatabaseError):
        return False
    return found is not None


def _remove_made(made: Sequence[str]) -> None:
    """A history this open was to create, refused (a full disk, a read-only place): the files it made are
    removed, so no empty or half-made history is left behind (issue 65: a full disk left one)."""
    for f in made:
        try:
            os.unlink(f)
        except OSError:
            pass


def _ready(store: HistoryStore) -> HistoryStore:
    """``store`` checked (sound, its JSON side read) and at this schema version, or refused and closed."""
    try:
        if store.dialect == "sqlite":
            _check_sound(store)  # before anything reads it or writes into it (issue 65)
        store.migrate()  # its JSON side checked there too, in the same snapshot, before anything is written
    except HistoryError:
        store.close()
        raise
    except sqlite3.DatabaseError as exc:
        store.close()
        raise _sqlite_refusal(Path(store.where), exc) from None
    except Exception as exc:  # psycopg's errors: the server refused the schema statements
        store.close()
        raise HistoryError(
            f"{store.where}: the schema could not be read or created: {store.said(exc)}"
        ) from None
    return store


WRITE_ERRORS: tuple[type[BaseException], ...] = (sqlite3.OperationalError, OSError)


def add_runs(store: HistoryStore, runs: Sequence[RunRow], added_at: str) -> list[int | None]:
    """Add each run in its own transaction; ``HistoryWriteError`` (nothing of that run kept) on a write that
    fails: a full disk, a lock held past the timeout, a server gone."""
    out = []
    for run in runs:
        try:
            out.append(store.add_run(run, added_at))
        except HistoryError:
            raise
        except Exception as exc:
            if isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "readonly" in str(exc)):
                raise _sqlite_refusal(Path(store.where), exc) from None
            text = store.said(exc)
            fault = _storage_fault(Path(store.where)) if store.dialect == "sqlite" else None
            full = "full" in text.lower() and fault is None
            raise HistoryWriteError(
                f"{store.where}: the run of {run.recorded_at} ({run.source}) could not be written: "
                + (f"{fault} ({text}); the history is not damaged" if fault else text)
                + ("; free disk space and add it again" if full else "")
                + "; nothing of it was kept, the runs before it are"
            ) from None
    return out
