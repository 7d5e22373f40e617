"""Storage faults said as what they are (issue 56, class 4): a full disk or a quota is never called a damaged
history ("move it aside" would throw a healthy history away), every writer leaves nothing partial and says the
fault, and a SQLite history is read in its latest committed state (its write-ahead log included) or refused."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3

import pytest
from history_docs import run_doc

from aorta.cli import main
from aorta.exit_codes import EXIT_WRITE_FAILED
from aorta.history import store as history_store
from aorta.history.run_rows import run_rows
from aorta.history.store import HistoryError, HistoryStorageFault, HistoryWriteError, open_store
from aorta.record import atomic
from aorta.record.atomic import append_text, write_json_atomic
from aorta.record.storage_faults import WriteFailed, fault_words, folder_fault


def _history(path) -> str:
    open_store(str(path)).close()
    return str(path)


def _fault(code):
    return lambda folder: OSError(code, os.strerror(code))


@pytest.mark.parametrize(
    "code,words", [(errno.ENOSPC, "no space left on the device"), (errno.EDQUOT, "over the disk quota")]
)
def test_a_full_disk_or_a_quota_is_said_never_damaged(tmp_path, monkeypatch, code, words):
    path = _history(tmp_path / "h.db")
    monkeypatch.setattr(history_store, "folder_fault", _fault(code))
    refusal = history_store._sqlite_refusal(tmp_path / "h.db", sqlite3.OperationalError("disk I/O error"))
    assert isinstance(refusal, HistoryStorageFault)
    assert words in str(refusal) and "not damaged" in str(refusal)
    assert "move it aside" not in str(refusal)
    assert os.path.getsize(path) > 0


def test_a_sound_history_that_cannot_be_opened_for_writing_is_not_called_damaged(tmp_path, monkeypatch):
    _history(tmp_path / "h.db")
    monkeypatch.setattr(history_store, "folder_fault", lambda folder: None)
    refusal = history_store._sqlite_refusal(tmp_path / "h.db", sqlite3.OperationalError("disk I/O error"))
    assert isinstance(refusal, HistoryWriteError) and "not damaged" in str(refusal)
    assert "move it aside" not in str(refusal)


def test_only_a_file_that_is_not_a_sound_database_is_called_damaged(tmp_path, monkeypatch):
    bad = tmp_path / "h.db"
    bad.write_bytes(b"SQLite format 3\0" + b"\xff" * 200)
    monkeypatch.setattr(history_store, "folder_fault", lambda folder: None)
    refusal = history_store._sqlite_refusal(bad, sqlite3.DatabaseError("file is not a database"))
    assert "damaged" in str(refusal) and "move it aside" in str(refusal)


def test_the_folder_probe_answers_with_the_faults_own_number(tmp_path):
    assert folder_fault(tmp_path) is None
    assert list(tmp_path.iterdir()) == []  # the probe is removed
    assert isinstance(folder_fault(tmp_path / "missing"), FileNotFoundError)
    assert fault_words(OSError(errno.EROFS, "x")).startswith("a read-only filesystem (EROFS)")


def _disk(*, free_blocks: int, available_blocks: int):
    """A fake ``os.statvfs`` of a disk with ``free_blocks`` free, ``available_blocks`` of them for non-root
    writers (the rest is root's reserve, ext4's 5% by default)."""
    st = os.statvfs_result((4096, 4096, 1000, free_blocks, available_blocks, 100, 50, 50, 0, 255))
    return lambda folder: st


@pytest.mark.parametrize(
    "euid,free,available,fault",
    [
        (1000, 50, 0, errno.ENOSPC),  # a non-root writer at the root reserve: its next write fails
        (0, 50, 0, None),  # root writes into its reserve
        (1000, 50, 50, None),  # room for everyone
        (1000, 50, 1, None),  # one block left is room
    ],
    ids=["user-at-reserve", "root-at-reserve", "room", "one-block"],
)
def test_a_non_root_writer_at_the_disks_root_reserve_is_told_no_space(
    tmp_path, monkeypatch, euid, free, available, fault
):
    # The probe's small write succeeds on a disk whose only free blocks are root's reserve (the blocks it took may
    # be root's, or the filesystem's slack); the next real write of a non-root user fails: the free blocks it may
    # use (f_bavail), not all the free blocks (f_bfree), tell. The suite runs as root, where the branch is skipped,
    # so the writer's id is faked too.
    monkeypatch.setattr(os, "statvfs", _disk(free_blocks=free, available_blocks=available))
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    got = folder_fault(tmp_path)
    if fault is None:
        assert got is None
    else:
        assert isinstance(got, OSError) and got.errno == fault
    assert list(tmp_path.iterdir()) == []  # the probe is removed either way


def test_a_folder_whose_filesystem_answers_no_statvfs_is_no_fault_once_the_probe_wrote(tmp_path, monkeypatch):
    # The probe's write is the evidence; a filesystem without statvfs (some FUSE mounts: ENOSYS) only means the
    # root reserve cannot be asked, not that the folder cannot be written.
    def no_statvfs(folder):
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))

    monkeypatch.setattr(os, "statvfs", no_statvfs)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert folder_fault(tmp_path) is None
    assert list(tmp_path.iterdir()) == []


def test_a_disk_with_free_inodes_and_no_free_blocks_is_a_full_disk(tmp_path, monkeypatch):
    # An empty file takes an inode and no block: the probe writes more than a block, so a disk out of blocks
    # answers ENOSPC to it though creating the file succeeded.
    real_write = os.write

    def no_blocks(fd, data):
        if len(data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", no_blocks)
    got = folder_fault(tmp_path)
    assert isinstance(got, OSError) and got.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("code", [errno.EDQUOT, errno.ENOSPC, errno.EIO])
def test_a_fault_the_filesystem_reports_only_at_fsync_is_the_folders_fault(tmp_path, monkeypatch, code):
    # NFS and other network filesystems report a quota or a full disk when the data is flushed, not at write():
    # the probe is synced, and that fault is the answer (the probe removed all the same).
    def fsync(fd):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fsync", fsync)
    got = folder_fault(tmp_path)
    assert isinstance(got, OSError) and got.errno == code
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "code,said",
    [
        (errno.ENOSPC, "no space left on the device (ENOSPC): free space there and run again"),
        (
            errno.EDQUOT,
            "over the disk quota (EDQUOT): free space within your quota (or raise it) and run again",
        ),
        (errno.EROFS, "a read-only filesystem (EROFS): give a place on a writable filesystem"),
        (errno.EACCES, "no permission to write there (EACCES): give a place you may write to"),
        (errno.EPERM, "no permission to write there (EPERM): give a place you may write to"),
        (errno.EIO, "an I/O error of the device (EIO): check the device (dmesg) before writing there again"),
        (errno.EFBIG, "a file larger than the filesystem allows (EFBIG): give a place on another filesystem"),
        (errno.EEXIST, "File exists"),  # no storage fault: the error's own words
    ],
    ids=lambda v: errno.errorcode[v] if isinstance(v, int) else None,
)
def test_each_storage_fault_is_said_by_its_own_number_and_what_to_do(code, said):
    assert fault_words(OSError(code, os.strerror(code))) == said


def _copy_with_uncheckpointed_wal(tmp_path, *, runs: int) -> tuple[str, sqlite3.Connection]:
    """A history whose last commits are still in its write-ahead log, copied with it (a writer holds the log)."""
    src = tmp_path / "src" / "h.db"
    src.parent.mkdir()
    _history(src)
    held = sqlite3.connect(src, isolation_level=None)
    held.execute("PRAGMA wal_autocheckpoint = 0")
    held.execute("SELECT count(*) FROM sqlite_master").fetchone()
    for k in range(runs):
        held.execute(
            "INSERT INTO runs (run_key, recorded_at, added_at, machine_model, machine_id, host, stack_label, "
            "fingerprint, source, commit_id, settings) VALUES (?, '2026', '2026', 'm', 'i', 'h', 's', '{}', 'x', "
            "'c', '{}')",
            (f"k{k}",),
        )
    copy = tmp_path / "copy"
    copy.mkdir()
    for suffix in ("", "-wal", "-shm"):
        shutil.copy(f"{src}{suffix}", f"{copy / 'h.db'}{suffix}")
    assert os.path.getsize(copy / "h.db-wal") > 0
    return str(copy / "h.db"), held


def test_a_read_only_history_with_its_write_ahead_log_is_read_in_its_latest_state(tmp_path, monkeypatch):
    path, held = _copy_with_uncheckpointed_wal(tmp_path, runs=3)
    monkeypatch.setattr(
        history_store, "_unwritable", lambda p: True
    )  # a read-only mount (root ignores modes)
    with open_store(path, create=False, write=False) as store:
        assert store.count()[0] == 3  # immutable=1 read the file alone: 0 runs
    held.close()


def test_a_read_only_history_whose_log_cannot_be_read_is_refused_not_read_old(tmp_path, monkeypatch):
    path, held = _copy_with_uncheckpointed_wal(tmp_path, runs=2)
    monkeypatch.setattr(history_store, "_unwritable", lambda p: True)
    real = sqlite3.connect

    def connect(
        database, *a, **kw
    ):  # as on a read-only mount without the -shm file: SQLite cannot open the log
        if "mode=ro" in str(database) and "immutable" not in str(database):
            raise sqlite3.OperationalError("unable to open database file")
        return real(database, *a, **kw)

    monkeypatch.setattr(history_store.sqlite3, "connect", connect)
    with pytest.raises(HistoryError, match="write-ahead log .* holds commits not yet in the file"):
        open_store(path, create=False, write=False)
    held.close()


def _disk_full(*args):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_the_one_writer_says_the_fault_and_leaves_nothing(tmp_path, monkeypatch):
    target = tmp_path / "out.json"
    monkeypatch.setattr(atomic.os, "fsync", _disk_full)
    with pytest.raises(WriteFailed, match=r"out\.json: could not be written: no space left on the device"):
        write_json_atomic(target, {"a": 1})
    assert list(tmp_path.iterdir()) == []  # no 0-byte file, no temp file


def test_an_append_is_whole_or_cut_back(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("before\n")
    monkeypatch.setattr(atomic.os, "fsync", _disk_full)
    with pytest.raises(WriteFailed, match="no space left"):
        append_text(summary, "a markdown table\n")
    assert summary.read_text() == "before\n"


def test_a_command_whose_write_fails_exits_3_with_one_line(tmp_path, monkeypatch, capsys):
    from history_docs import run_doc

    runs = []
    for k in range(2):
        p = tmp_path / f"run{k}.json"
        p.write_text(json.dumps(run_doc(f"2026-11-0{k + 1}T00:00:00+00:00", 10.0 + k)))
        runs.append(str(p))
    monkeypatch.setattr(atomic.os, "fsync", _disk_full)
    out = tmp_path / "noise.json"
    assert main(["noise", *runs, "--json", str(out)]) == EXIT_WRITE_FAILED
    err = capsys.readouterr().err
    assert (
        err.startswith(f"aorta noise: error: {out}: could not be written: no space left")
        and err.count("\n") == 1
    )
    assert not out.exists()


def test_history_page_on_a_full_disk_says_the_fault_once(tmp_path, monkeypatch, capsys):
    from test_history_cli import write_runs

    db = str(tmp_path / "h.db")
    assert main(["history", "--history", db, "add", *write_runs(tmp_path, n=2)]) == 0
    capsys.readouterr()
    monkeypatch.setattr(atomic.os, "fsync", _disk_full)
    out = tmp_path / "page.html"
    assert main(["history", "--history", db, "page", str(out)]) == EXIT_WRITE_FAILED
    err = capsys.readouterr().err
    assert err == (
        f"aorta history page: error: {out} could not be written: no space left on the device (ENOSPC): free "
        "space there and run again\n"
    )
    assert not out.exists()


# -- which place is asked, and what a refused read says, word for word (issue 58) ----------------------------------


def test_the_fault_asked_about_is_the_one_of_the_history_s_own_folder(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(history_store, "folder_fault", lambda folder: asked.append(str(folder)) or None)
    (tmp_path / "sub").mkdir()
    assert history_store._storage_fault(tmp_path / "sub" / "h.db") is None
    monkeypatch.chdir(tmp_path)
    assert history_store._storage_fault(history_store.Path("h.db")) is None
    assert asked == [str(tmp_path / "sub"), "."]
    monkeypatch.setattr(history_store, "folder_fault", _fault(errno.ENOSPC))
    assert history_store._storage_fault(tmp_path / "h.db") == fault_words(OSError(errno.ENOSPC, "x"))


def test_a_bare_file_name_is_unwritable_where_the_working_folder_is(tmp_path, monkeypatch):
    asked = []
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(history_store.os, "access", lambda p, mode: asked.append(str(p)) or False)
    assert history_store._unwritable(history_store.Path("h.db"))
    assert asked == ["."]


def test_a_refused_read_of_a_log_says_why_word_for_word(tmp_path, monkeypatch):
    path, held = _copy_with_uncheckpointed_wal(tmp_path, runs=2)
    monkeypatch.setattr(history_store, "_unwritable", lambda p: True)
    real = sqlite3.connect

    def failing(database, *a, **kw):
        if "immutable" not in str(database):
            raise sqlite3.OperationalError("unable to open database file")
        return real(database, *a, **kw)

    monkeypatch.setattr(history_store.sqlite3, "connect", failing)
    with pytest.raises(HistoryError) as exc:
        open_store(path, create=False, write=False)
    assert str(exc.value) == (
        f"{path}: is on a read-only place (file, folder or mount), and its write-ahead log {path}-wal holds commits "
        "not yet in the file, which SQLite cannot read without writing beside it: aorta will not show an older "
        "state; copy the file with its -wal and -shm to a writable folder and read it there"
    )
    held.close()


def test_a_log_that_opens_but_cannot_be_read_is_refused_too(tmp_path, monkeypatch):
    path, held = _copy_with_uncheckpointed_wal(tmp_path, runs=2)
    monkeypatch.setattr(history_store, "_unwritable", lambda p: True)
    real = sqlite3.connect
    closed = []

    class Unreadable:
        def execute(self, *a):
            raise sqlite3.DatabaseError("disk I/O error")

        def close(self):
            closed.append(True)

    monkeypatch.setattr(
        history_store.sqlite3,
        "connect",
        lambda database, *a, **kw: real(database, *a, **kw) if "immutable" in str(database) else Unreadable(),
    )
    with pytest.raises(HistoryError, match="holds commits not yet in the file"):
        open_store(path, create=False, write=False)
    assert closed == [True]
    held.close()


@pytest.mark.parametrize("log", ["none", "empty"])
def test_a_history_without_commits_in_a_log_is_read_as_the_file_is(tmp_path, monkeypatch, log):
    path = _history(tmp_path / "h.db")
    for name in ("h.db-wal", "h.db-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    if log == "empty":
        (tmp_path / "h.db-wal").write_bytes(b"")
    monkeypatch.setattr(history_store, "_unwritable", lambda p: True)
    opened = []
    real = sqlite3.connect
    monkeypatch.setattr(
        history_store.sqlite3,
        "connect",
        lambda database, *a, **kw: opened.append(str(database)) or real(database, *a, **kw),
    )
    with open_store(path, create=False, write=False) as store:
        assert store.count() == (0, 0)
    assert opened[0] == f"{(tmp_path / 'h.db').resolve().as_uri()}?mode=ro&immutable=1"


# -- add_runs: each failure said as what it is, word for word (issue 58) -------------------------------------------


def _failing_store(tmp_path, monkeypatch, error, dialect="sqlite"):
    where = str(tmp_path / "h.db") if dialect == "sqlite" else "postgresql://u:***@h/db"
    store = history_store.HistoryStore(None, dialect, where)

    def add_run(run, added_at):
        raise error

    monkeypatch.setattr(store, "add_run", add_run)
    return store, run_rows(run_doc(), "run.json", "now")


@pytest.mark.parametrize(
    "said,kind",
    [("database is locked", history_store.HistoryLocked), ("attempt to write a readonly database", None)],
)
def test_a_run_refused_by_a_lock_or_a_read_only_place_is_said_so(tmp_path, monkeypatch, said, kind):
    store, runs = _failing_store(tmp_path, monkeypatch, sqlite3.OperationalError(said))
    with pytest.raises(HistoryError) as exc:
        history_store.add_runs(store, runs, "now")
    if kind is not None:
        assert isinstance(exc.value, kind)
        assert str(exc.value).startswith(f"{tmp_path / 'h.db'}: held by another writer (")
    else:
        assert str(exc.value).startswith(f"{tmp_path / 'h.db'}: is read-only here ")


def test_a_run_not_written_for_a_fault_of_the_place_says_the_fault_and_not_damaged(tmp_path, monkeypatch):
    store, runs = _failing_store(tmp_path, monkeypatch, sqlite3.OperationalError("database or disk is full"))
    asked = []
    monkeypatch.setattr(
        history_store, "folder_fault", lambda folder: asked.append(str(folder)) or OSError(errno.ENOSPC, "x")
    )
    with pytest.raises(HistoryWriteError) as exc:
        history_store.add_runs(store, runs, "now")
    assert str(exc.value) == (
        f"{tmp_path / 'h.db'}: the run of 2026-11-26T08:00:00+00:00 (run.json) could not be written: "
        f"{fault_words(OSError(errno.ENOSPC, 'x'))} (database or disk is full); the history is not damaged; nothing "
        "of it was kept, the runs before it are"
    )
    assert asked == [str(tmp_path)]


def test_a_full_history_without_a_fault_of_the_place_says_to_free_space_other_errors_do_not(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(history_store, "folder_fault", lambda folder: None)
    store, runs = _failing_store(tmp_path, monkeypatch, sqlite3.OperationalError("database or disk is full"))
    with pytest.raises(HistoryWriteError) as exc:
        history_store.add_runs(store, runs, "now")
    assert str(exc.value) == (
        f"{tmp_path / 'h.db'}: the run of 2026-11-26T08:00:00+00:00 (run.json) could not be written: database or "
        "disk is full; free disk space and add it again; nothing of it was kept, the runs before it are"
    )
    store, runs = _failing_store(tmp_path, monkeypatch, sqlite3.IntegrityError("UNIQUE constraint failed"))
    with pytest.raises(HistoryWriteError) as exc:
        history_store.add_runs(store, runs, "now")
    assert str(exc.value).endswith(
        "could not be written: UNIQUE constraint failed; nothing of it was kept, the runs before it are"
    )


def test_a_postgresql_write_that_fails_never_probes_a_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(history_store, "folder_fault", lambda folder: pytest.fail(f"probed {folder}"))
    store, runs = _failing_store(
        tmp_path, monkeypatch, RuntimeError("could not extend file: disk full"), dialect="postgresql"
    )
    with pytest.raises(HistoryWriteError) as exc:
        history_store.add_runs(store, runs, "now")
    assert str(exc.value) == (
        "postgresql://u:***@h/db: the run of 2026-11-26T08:00:00+00:00 (run.json) could not be written: could not "
        "extend file: disk full; free disk space and add it again; nothing of it was kept, the runs before it are"
    )


def test_a_history_error_inside_a_run_passes_as_it_is(tmp_path, monkeypatch):
    refusal = history_store.HistoryLocked("held")
    store, runs = _failing_store(tmp_path, monkeypatch, refusal)
    with pytest.raises(history_store.HistoryLocked) as exc:
        history_store.add_runs(store, runs, "now")
    assert exc.value is refusal
