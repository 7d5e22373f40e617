"""The history's states told apart at unit level (aorta/history/store.py, issue 58): held by a writer (locked
or busy: exit 3, not damaged), read-only here, damaged; a read command given a folder or a missing file creates
nothing; a command that writes never opens the history read-only, a command that only reads does where the place
cannot be written."""

import sqlite3

import pytest

from aorta.history import store as history


@pytest.mark.parametrize("said", ["database is locked", "database is busy"])
def test_a_history_held_by_a_writer_is_locked_not_damaged(tmp_path, said):
    err = history._sqlite_refusal(tmp_path / "h.db", sqlite3.OperationalError(said))
    assert isinstance(err, history.HistoryLocked)
    assert "the history is not damaged: run again when that writer has finished" in str(err)


def test_a_history_that_cannot_be_written_here_is_read_only_not_damaged(tmp_path):
    err = history._sqlite_refusal(
        tmp_path / "h.db", sqlite3.OperationalError("attempt to write a readonly database")
    )
    assert not isinstance(err, history.HistoryLocked)
    assert str(err).startswith(f"{tmp_path / 'h.db'}: is read-only here (a read-only file, folder or mount)")


def test_anything_else_is_a_damaged_file_to_move_aside(tmp_path):
    err = history._sqlite_refusal(tmp_path / "h.db", sqlite3.DatabaseError("file is not a database"))
    assert str(err) == (
        f"{tmp_path / 'h.db'}: is not a readable SQLite history (file is not a database): a damaged file, or "
        "not a database; move it aside (aorta starts a new one) or restore it from a copy"
    )


@pytest.mark.parametrize(("make", "what"), [("folder", "a folder"), ("nothing", "no such file")])
def test_a_read_command_given_a_folder_or_nothing_creates_nothing(tmp_path, make, what):
    p = tmp_path / "history.db"
    if make == "folder":
        p.mkdir()
    with pytest.raises(history.HistoryMissing) as exc:
        history.open_store(str(p), create=False)
    assert str(exc.value).startswith(f"{p}: no history here ({what}): nothing created; ")
    assert p.is_dir() == (make == "folder") and not (tmp_path / "history.db-wal").exists()


def test_a_writer_never_opens_the_history_read_only_a_reader_does_where_it_cannot_write(
    tmp_path, monkeypatch
):
    p = tmp_path / "h.db"
    history.open_store(str(p)).close()
    monkeypatch.setattr(history, "_unwritable", lambda path: True)  # as a read-only mount answers
    with history.open_store(str(p), write=True) as st:  # tries to write: here it can
        with st.transaction():
            st.execute("CREATE TABLE written (x)")
    with history.open_store(str(p), write=False) as st:  # only reads: opened as it is, nothing written
        assert st.execute("SELECT count(*) FROM written").fetchone() == (0,)
        with pytest.raises(sqlite3.OperationalError, match="readonly"), st.transaction():
            st.execute("CREATE TABLE never (x)")


def test_a_read_only_refusal_word_for_word_whatever_the_drivers_spelling(tmp_path):
    for said in ("attempt to write a readonly database", "database is read-only"):
        err = history._sqlite_refusal(tmp_path / "h.db", sqlite3.OperationalError(said))
        assert str(err) == (
            f"{tmp_path / 'h.db'}: is read-only here (a read-only file, folder or mount): the history is not "
            "damaged, but aorta cannot write it or its journal beside it; give a writable --history, or copy the "
            "file somewhere writable"
        )
    locked = history._sqlite_refusal(tmp_path / "h.db", sqlite3.OperationalError("database is locked"))
    assert "for more than 60 s: nothing was written" in str(locked)


def test_a_history_is_unwritable_where_its_folder_or_its_file_cannot_be_written(tmp_path, monkeypatch):
    folder, file = tmp_path / "f", tmp_path / "f" / "h.db"
    folder.mkdir()
    file.write_text("")
    denied: set = set()
    monkeypatch.setattr(history.os, "access", lambda p, mode: str(p) not in denied)
    assert not history._unwritable(file)
    denied = {str(file)}  # a read-only file in a writable folder
    assert history._unwritable(file)
    denied = {str(folder)}  # a writable file in a read-only folder: its journal cannot be made
    assert history._unwritable(file)


def test_an_error_other_than_a_lock_at_the_start_of_a_write_is_raised_at_once(tmp_path, capsys):
    class Failing:
        def __init__(self, conn):
            self.conn = conn

        def execute(self, sql, *a):
            if sql == "BEGIN IMMEDIATE":
                raise sqlite3.OperationalError("disk I/O error")
            return self.conn.execute(sql, *a)

    with history.open_store(str(tmp_path / "h.db")) as st:
        real = st.conn
        st.conn = Failing(real)
        with pytest.raises(sqlite3.OperationalError, match="disk I/O error"), st.transaction():
            pass
        st.conn = real
    assert capsys.readouterr().err == ""  # no "held by another writer ... waiting" for what is no lock
