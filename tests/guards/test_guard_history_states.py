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
