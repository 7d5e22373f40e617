"""The waits aorta puts a writer through, each made to matter in about a second (issue 58): a history writer's
busy timeout, set to the 250 ms probe only to say who holds the history and set back to the full wait after it
(whether the probe found the history free or held), the refusal of a history held past the wait, and the
baseline lock (held, waited for with one line, refused naming its holder, freed). Holders are other
connections and other open files of this process: no child process."""

from __future__ import annotations

import fcntl
import os
import socket
import sqlite3
import threading
import time

import pytest

from aorta.history import store as history
from aorta.processes import lock


def busy_timeout_ms(st: history.HistoryStore) -> int:
    return int(st.conn.execute("PRAGMA busy_timeout").fetchone()[0])


def hold_write_lock(path, release_after_s: float) -> threading.Thread:
    """Another writer: ``BEGIN IMMEDIATE`` on its own connection, committed after ``release_after_s``."""
    held = threading.Event()

    def writer():
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        held.set()
        time.sleep(release_after_s)
        conn.execute("COMMIT")
        conn.close()

    t = threading.Thread(target=writer)
    t.start()
    assert held.wait(5.0)
    return t


def test_a_free_history_is_written_with_the_full_busy_timeout_set_back_after_the_probe(tmp_path):
    with history.open_store(str(tmp_path / "h.db")) as st:
        assert busy_timeout_ms(st) == history.BUSY_TIMEOUT_MS
        with st.transaction():
            # inside the transaction too: a statement that waits for a reader's lock waits the full time
            assert busy_timeout_ms(st) == history.BUSY_TIMEOUT_MS
        assert busy_timeout_ms(st) == history.BUSY_TIMEOUT_MS == 60_000


def test_a_writer_held_up_past_the_probe_says_who_holds_it_then_waits_the_full_timeout(tmp_path, capsys):
    path = tmp_path / "h.db"
    with history.open_store(str(path)) as st:
        other = hold_write_lock(path, release_after_s=0.7)  # almost three times the 250 ms probe
        t0 = time.monotonic()
        with st.transaction():
            st.execute("CREATE TABLE kept (x)")
        waited = time.monotonic() - t0
        other.join()
        assert waited >= 0.45  # it waited for the other writer past the probe, and was not refused
        assert busy_timeout_ms(st) == history.BUSY_TIMEOUT_MS
        err = capsys.readouterr().err
        assert err.startswith(f"aorta history: {path} is held by another writer (")
        assert err.rstrip().endswith("): waiting up to 60 s")
        assert err.count("\n") == 1  # said once
        assert st.execute("SELECT count(*) FROM kept").fetchone()[0] == 0  # the table was made


def test_a_history_held_past_the_timeout_is_refused_and_nothing_is_written(tmp_path, monkeypatch):
    path = tmp_path / "h.db"
    with history.open_store(str(path)) as st:
        monkeypatch.setattr(history, "BUSY_TIMEOUT_MS", 300)
        other = hold_write_lock(path, release_after_s=1.2)
        try:
            with pytest.raises(history.HistoryLocked) as exc, st.transaction():
                st.execute("CREATE TABLE never (x)")
        finally:
            other.join()
        assert str(exc.value).startswith(f"{path}: held by another writer (")
        assert "nothing was written; the history is not damaged" in str(exc.value)
        found = st.execute("SELECT name FROM sqlite_master WHERE name = 'never'").fetchone()
        assert found is None


def hold_lock(target, holder: str = "pid 1 on elsewhere\n") -> int:
    """Hold ``target``'s lock as another process would: an open file of its own, its holder written in."""
    fd = os.open(lock.lock_path(target), os.O_RDWR | os.O_CREAT, 0o666)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.pwrite(fd, holder.encode(), 0)
    return fd


def test_a_held_lock_is_refused_at_once_with_no_wait_naming_its_holder_and_file(tmp_path, monkeypatch):
    monkeypatch.setattr(lock, "WAIT_S", 0.3)  # a 0 taken for "the default" waits, says so and fails fast
    target = tmp_path / "base.json"
    fd = hold_lock(target)
    said = []
    try:
        with (
            pytest.raises(lock.LockBusy) as exc,
            lock.locked(target, wait_s=0, what="sweep folder", say=said.append),
        ):
            pass
    finally:
        os.close(fd)
    assert str(exc.value) == (
        f"the sweep folder is in use by pid 1 on elsewhere: lock {tmp_path / '.base.lock'}; "
        "wait for it to finish, or stop it"
    )
    assert said == []  # refused at once: no line about waiting


def test_a_held_lock_is_waited_for_saying_so_once_and_taken_when_freed(tmp_path):
    target = tmp_path / "base.json"
    fd = hold_lock(target)
    threading.Timer(0.6, os.close, (fd,)).start()  # the holder ends
    said: list[str] = []
    t0 = time.monotonic()
    with lock.locked(target, wait_s=10, say=said.append):
        waited = time.monotonic() - t0
        assert lock.lock_path(target).read_text() == f"pid {os.getpid()} on {socket.gethostname()}\n"
    assert 0.5 <= waited < 9.0
    assert said == [
        f"aorta: the baseline is in use by pid 1 on elsewhere (lock {tmp_path / '.base.lock'}); "
        "waiting up to 10 s"
    ]


def test_a_lock_held_past_its_wait_is_refused_saying_how_long_it_waited(tmp_path, monkeypatch):
    target = tmp_path / "base.json"
    fd = hold_lock(target, "")
    monkeypatch.setattr(lock, "POLL_S", 0.05)
    try:
        t0 = time.monotonic()
        with pytest.raises(lock.LockBusy) as exc, lock.locked(target, wait_s=0.3, say=lambda line: None):
            pass
    finally:
        os.close(fd)
    assert 0.3 <= time.monotonic() - t0 < 5.0
    assert str(exc.value).startswith("the baseline is in use by another process (waited 0.3 s): lock ")


def test_the_lock_is_freed_when_its_holder_leaves_the_block(tmp_path):
    target = tmp_path / "base.json"
    with lock.locked(target, wait_s=0):
        pass
    with lock.locked(target, wait_s=0):  # not still held by the first
        pass


def test_only_the_temporary_files_of_the_target_are_removed(tmp_path):
    target = tmp_path / "base.json"
    stale = [tmp_path / ".base.json.1a2b.tmp", tmp_path / ".base.json.ffff.tmp"]
    kept = [tmp_path / "base.json", tmp_path / ".other.json.1a2b.tmp", tmp_path / ".base.json.1a2b.log"]
    for p in (*stale, *kept):
        p.write_text("x")
    assert sorted(lock.remove_stale_temps(target)) == sorted(stale)
    assert [p.exists() for p in stale] == [False, False] and all(p.exists() for p in kept)


def test_the_holder_is_read_as_written_up_to_200_bytes_undecodable_bytes_replaced(tmp_path, monkeypatch):
    target = tmp_path / "base.json"
    fd = os.open(lock.lock_path(target), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        os.pwrite(fd, b"pid 1 on h\xff\n", 0)
        assert lock._holder(fd) == "pid 1 on h\ufffd"
        os.pwrite(fd, b"pid 1 on " + b"h" * 300, 0)
        assert lock._holder(fd) == "pid 1 on " + "h" * 191  # the first 200 bytes
        os.ftruncate(fd, 0)
        assert lock._holder(fd) == "another process"  # a holder that wrote nothing yet

        def unreadable(*a):
            raise OSError("EIO")

        monkeypatch.setattr(lock.os, "pread", unreadable)
        assert lock._holder(fd) == "another process"
    finally:
        os.close(fd)


def test_a_temporary_file_gone_before_it_is_removed_is_no_error(tmp_path, monkeypatch):
    target = tmp_path / "base.json"
    for name in (".base.json.1.tmp", ".base.json.2.tmp"):
        (tmp_path / name).write_text("x")
    real_unlink = type(target).unlink

    def racing_unlink(self, missing_ok=False):
        if self.name == ".base.json.1.tmp":
            raise FileNotFoundError(self)  # another cleaner got there first
        real_unlink(self, missing_ok)

    monkeypatch.setattr(type(target), "unlink", racing_unlink)
    assert lock.remove_stale_temps(target) == [tmp_path / ".base.json.2.tmp"]


# -- who holds a history: each of its files, each process by pid and command line, secrets hidden ------------------


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(w) for w in fh.read().split()]
    except OSError:
        return []


def _execd_sleep(pids: list[int]) -> bool:
    """One child, and its command line is ``sleep``'s (not the forked shell's, before its exec)."""
    if len(pids) != 1:
        return False
    try:
        with open(f"/proc/{pids[0]}/cmdline", "rb") as fh:
            return fh.read().split(b"\0")[0] == b"sleep"
    except OSError:
        return False


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm", "-journal"])
def test_a_process_holding_any_file_of_the_history_is_named_by_pid_and_command(tmp_path, suffix):
    import subprocess

    path = tmp_path / "h.db"
    held = tmp_path / f"h.db{suffix}"
    held.write_bytes(b"")
    (tmp_path / "h.db-other").write_bytes(b"")
    with open(tmp_path / "h.db-other") as other:
        bystander = subprocess.Popen(["sleep", "30"], stdin=other)
    with open(held) as fh:
        proc = subprocess.Popen(["sleep", "30"], stdin=fh)
    try:
        assert history.holders(path) == f"pid {proc.pid} (sleep 30)"
        assert history.holders(str(tmp_path / "elsewhere.db")) == "another process"
        refusal = history._sqlite_refusal(path, sqlite3.OperationalError("database is locked"))
        assert str(refusal) == (
            f"{path}: held by another writer (pid {proc.pid} (sleep 30)) for more than 60 s: nothing was written; "
            "the history is not damaged: run again when that writer has finished"
        )
    finally:
        for p in (proc, bystander):
            p.kill()
            p.wait()


def test_holders_are_listed_in_pid_order_their_command_lines_cut_to_80_characters_secrets_hidden(tmp_path):
    import subprocess

    path = tmp_path / "h.db"
    path.write_bytes(b"")
    script = "sleep 30;\n   : postgresql://u:hunter2@h/db " + "x" * 80
    with open(path) as fh:  # an argument that is no UTF-8 is read with its bytes replaced
        shell = subprocess.Popen(["sh", "-c", script, b"\xff"], stdin=fh)
    try:
        # Waits for the state it reads: the child forked *and* exec'd sleep (between the two its command line
        # is still the shell's).
        deadline = time.monotonic() + 10
        while not _execd_sleep(_children(shell.pid)) and time.monotonic() < deadline:
            time.sleep(0.01)
        (child,) = _children(shell.pid)
        line = "sh -c sleep 30; : postgresql://u:***@h/db " + "x" * 80
        assert history.holders(path) == f"pid {shell.pid} ({line[:80]}), pid {child} (sleep 30)"
        assert "hunter2" not in history.holders(path)
    finally:
        for pid in (*_children(shell.pid), shell.pid):
            os.kill(pid, 9)
        shell.wait()


def test_this_process_is_never_its_own_holder(tmp_path):
    path = tmp_path / "h.db"
    with history.open_store(str(path)):
        assert history.holders(path) == "another process"


def test_a_history_busy_at_the_probe_is_waited_for_like_a_locked_one(tmp_path, capsys):
    with history.open_store(str(tmp_path / "h.db")) as st:
        real = st.conn
        begins = []

        class BusyOnce:  # the driver's other word for a writer holding the history
            def execute(self, sql, *a):
                if sql == "BEGIN IMMEDIATE":
                    begins.append(sql)
                    if len(begins) == 1:
                        raise sqlite3.OperationalError("database is busy")
                return real.execute(sql, *a)

            def __getattr__(self, name):
                return getattr(real, name)

        st.conn = BusyOnce()
        with st.transaction():
            st.execute("CREATE TABLE kept (x)")
        st.conn = real
        assert len(begins) == 2
        assert capsys.readouterr().err.startswith(
            f"aorta history: {tmp_path / 'h.db'} is held by another writer ("
        )
