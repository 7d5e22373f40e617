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


# -- the history's place refused before anything is made, word for word (issue 58) ---------------------------------


@pytest.mark.parametrize("text", ["", "   "])
def test_no_history_named_is_refused_saying_what_to_give(text):
    with pytest.raises(ValueError) as exc:
        history.parse_history_url(text)
    assert str(exc.value) == (
        "--aorta-history='': give a SQLite file (e.g. .aorta/history.db) or a postgresql:// URL"
    )


def test_key_value_text_that_is_not_libpq_s_is_refused_never_a_file_name_its_password_hidden(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as exc:
        history.parse_history_url("db=x password=hunter2")
    assert str(exc.value) == (
        "--aorta-history='db=x password=***': reads as key=value but not as a libpq connection string (keywords: "
        f"{', '.join(sorted(history.LIBPQ_KEYWORDS))}); for a SQLite file whose name holds '=', write it as ./NAME"
    )
    assert "sslmode" in history.LIBPQ_KEYWORDS and list(tmp_path.iterdir()) == []
    assert history.parse_history_url("./db=x") == "db=x"  # the file, written as ./NAME


def test_a_scheme_other_than_sqlite_or_postgresql_is_refused_its_password_hidden():
    for text, scheme in (
        ("ftp://u:hunter2@h/x", "ftp"),
        ("sqlite://host/h.db", "sqlite"),
        ("AORTA_HISTORY=postgresql://u:hunter2@h/db", "AORTA_HISTORY=postgresql"),  # a pasted assignment
    ):
        with pytest.raises(ValueError) as exc:
            history.parse_history_url(text)
        assert str(exc.value) == (
            f"--aorta-history={history.redact_url(text)!r}: unknown scheme {scheme!r}; allowed: a file path, "
            "sqlite:///PATH or postgresql://USER@HOST/DB"
        )
        assert "hunter2" not in str(exc.value)


def test_a_postgresql_history_is_a_url_of_either_scheme_or_a_libpq_string_taken_as_given():
    for text in ("postgresql://u@h/db", "postgres://u@h/db", "host=h dbname=db user=u"):
        assert history.parse_history_url(f"  {text} ") == text
        assert history.is_postgresql(text)
    assert not history.is_postgresql("h.db") and not history.is_postgresql("sqlite:///h.db")


def test_a_sqlite_history_is_a_path_with_or_without_its_scheme_spaces_around_it_dropped(tmp_path):
    assert history.parse_history_url(f" {tmp_path / 'h.db'} ") == str(tmp_path / "h.db")
    assert history.parse_history_url(f"sqlite:///{tmp_path / 'h.db'}") == str(tmp_path / "h.db")
    assert history.parse_history_url("sqlite:///h.db") == "h.db"


def test_a_history_path_that_cannot_be_a_file_is_refused_as_a_value_error(tmp_path):
    long = tmp_path / ("h" * 300)
    with pytest.raises(ValueError) as exc:
        history.parse_history_url(str(long))
    assert type(exc.value) is ValueError
    assert str(exc.value).startswith(f"--aorta-history {long}: the name {'h' * 40}... is 300 bytes long; ")
    (tmp_path / "gone").symlink_to(tmp_path / "missing")
    with pytest.raises(ValueError, match=r"is a symbolic link that leads nowhere"):
        history.parse_history_url(str(tmp_path / "gone" / "h.db"))
    with pytest.raises(ValueError) as exc:
        history.parse_history_url(f"sqlite:///{tmp_path}")
    assert str(exc.value) == (
        f"--aorta-history='sqlite:///{tmp_path}': is a folder; give a file such as {tmp_path / 'history.db'}"
    )


# -- opening a SQLite history: its folders made, what stops it said word for word (issue 58) ------------------------


def test_a_new_history_s_folders_are_made_and_a_file_in_the_way_is_said(tmp_path):
    deep = tmp_path / "a" / "b" / "h.db"
    history.open_store(str(deep)).close()
    assert deep.is_file()
    (tmp_path / "f").write_text("")
    blocked = tmp_path / "f" / "h.db"
    with pytest.raises(history.HistoryError) as exc:
        history.open_store(str(blocked))
    assert str(exc.value).startswith(f"{blocked}: cannot be created: ")
    assert str(exc.value) != f"{blocked}: cannot be created: None"


def test_a_file_that_is_no_database_is_refused_quoting_sqlite(tmp_path):
    bad = tmp_path / "h.db"
    bad.write_bytes(b"not a database, just text " * 200)
    with pytest.raises(history.HistoryError) as exc:
        history.open_store(str(bad))
    assert str(exc.value) == (
        f"{bad}: is not a readable SQLite history (file is not a database): a damaged file, or not a database; "
        "move it aside (aorta starts a new one) or restore it from a copy"
    )


@pytest.mark.parametrize("write", [False, True])
def test_a_reader_whose_history_cannot_take_its_journal_reads_it_as_it_is_a_writer_is_refused(
    tmp_path, monkeypatch, write
):
    import errno

    p = tmp_path / "h.db"
    history.open_store(str(p)).close()
    real = history.sqlite3.connect

    class NoJournal:  # a full disk: the journal setting cannot be written
        def __init__(self, conn):
            self.conn = conn

        def execute(self, sql, *a):
            if sql.startswith("PRAGMA journal_mode"):
                raise sqlite3.OperationalError("disk I/O error")
            return self.conn.execute(sql, *a)

        def close(self):
            self.conn.close()

    def connect(database, *a, **kw):
        conn = real(database, *a, **kw)
        return conn if "immutable" in str(database) else NoJournal(conn)

    monkeypatch.setattr(history.sqlite3, "connect", connect)
    monkeypatch.setattr(
        history, "folder_fault", lambda folder: OSError(errno.ENOSPC, "No space left on device")
    )
    if write:
        with pytest.raises(history.HistoryStorageFault):
            history.open_store(str(p), write=True)
        return
    with history.open_store(str(p), write=False) as st:
        assert st.count() == (0, 0)
    monkeypatch.setattr(
        history, "folder_fault", lambda folder: None
    )  # no fault of the place: refused as it is
    with pytest.raises(history.HistoryError):
        history.open_store(str(p), write=False)
