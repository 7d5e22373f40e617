"""Two writers opening a new history at once both succeed (issue 56, class 5): every read of the store's state
is made under the lock that guards the migration (PostgreSQL's advisory lock) or in one snapshot (SQLite), so
the second writer's two catalog reads never straddle the first writer's committing migration. The straddle is
forced: the other writer's whole open runs between the two reads."""

from __future__ import annotations

import threading

import pytest

from aorta.history import store as history_store
from aorta.history.schema import SCHEMA_VERSION
from aorta.history.store import HistoryStore, open_store


@pytest.fixture
def other_writer_between_the_reads(monkeypatch):
    """The first ``_table_count`` (the second catalog read of the first opener) lets another writer open the
    same history in a thread, waiting up to 2 s for it (it waits on the lock where the guard holds)."""
    original = HistoryStore._table_count
    state: dict = {"url": None, "thread": None, "error": None, "finished_inside": None}

    def other() -> None:
        try:
            open_store(state["url"]).close()
        except Exception as exc:  # noqa: BLE001 - reported by the test
            state["error"] = exc

    def table_count(self: HistoryStore) -> int:
        if state["thread"] is None:
            state["thread"] = threading.Thread(target=other)
            state["thread"].start()
            state["thread"].join(2.0)
            state["finished_inside"] = not state["thread"].is_alive()
        return original(self)

    monkeypatch.setattr(HistoryStore, "_table_count", table_count)
    return state


def test_two_writers_opening_a_new_history_at_once_both_succeed(history_url, other_writer_between_the_reads):
    state = other_writer_between_the_reads
    state["url"] = history_url
    with open_store(history_url) as store:  # refused as "not an aorta history" where the reads straddled
        assert store.version() == SCHEMA_VERSION
    state["thread"].join(30)
    assert state["error"] is None, state["error"]
    with open_store(history_url) as store:
        assert store.version() == SCHEMA_VERSION


def test_postgresql_takes_the_lock_before_reading_any_state():
    """Without a server: the statements a PostgreSQL migrate sends, in order."""
    sent: list[str] = []

    class Cursor:
        def __init__(self) -> None:
            self.rows: list = []

        def execute(self, sql, params=()):
            sent.append(sql)
            if "pg_tables WHERE tablename" in sql:
                self.rows = [("aorta_schema",)]
            elif "SELECT version" in sql:
                self.rows = [(SCHEMA_VERSION,)]
            else:
                self.rows = [(0,)]

        def fetchone(self):
            return self.rows[0] if self.rows else None

        def fetchall(self):  # the JSON side's columns, read under the lock too
            return self.rows

    class Conn:
        def cursor(self):
            return Cursor()

        def transaction(self):
            import contextlib

            return contextlib.nullcontext()

    assert HistoryStore(Conn(), "postgresql", "pg").migrate() == SCHEMA_VERSION
    assert sent[0].startswith("SELECT pg_advisory_xact_lock"), sent
    assert history_store.MIGRATION_LOCK


def test_two_writers_of_one_run_keep_it_once_and_neither_fails(history_url):
    """The second writer's insert waits for the first's commit; it then keeps nothing, and says so (None)."""
    from history_docs import run_doc

    from aorta.history.run_rows import run_rows

    (row,) = run_rows(run_doc("2026-11-25T00:00:00+00:00"), "run.json", "2026-11-29T00:00:00+00:00")
    first, second = open_store(history_url), open_store(history_url)
    result: dict = {}
    try:
        with first.transaction():
            first.execute(
                "INSERT INTO runs (run_key, recorded_at, added_at, machine_model, machine_id, host, stack_label, "
                "fingerprint, source, commit_id, settings) VALUES (?, '2026', '2026', 'm', 'i', 'h', 's', '{}', "
                "'x', 'c', '{}')",
                (row.run_key,),
            )
            if (
                first.dialect == "postgresql"
            ):  # the second writer reaches its insert while the first holds the key
                thread = threading.Thread(target=lambda: result.update(id=second.add_run(row, "2026")))
                thread.start()
                thread.join(1.0)
        if first.dialect == "sqlite":
            result["id"] = second.add_run(row, "2026")
        else:
            thread.join(30)
        assert result == {"id": None}
        assert first.count()[0] == 1
    finally:
        first.close()
        second.close()
