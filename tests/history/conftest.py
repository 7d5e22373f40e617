"""The history's store tests run on every engine: SQLite always, PostgreSQL where a real server starts."""

from __future__ import annotations

import itertools

import pytest

_counter = itertools.count()


@pytest.fixture(scope="session")
def postgres_url():
    from postgres_server import Unavailable, start

    try:
        url, stop = start()
    except Unavailable as exc:
        pytest.skip(f"PostgreSQL tests skipped: {exc}")
    yield url
    stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def history_url(request, tmp_path):
    """A fresh, empty history on each engine: a SQLite file, or a new schema on the test server (a team may
    keep its history in its own schema the same way: ``?options=-csearch_path%3DNAME``)."""
    if request.param == "sqlite":
        return str(tmp_path / "history.db")
    import psycopg

    admin = request.getfixturevalue("postgres_url")
    name = f"aorta_test_{next(_counter)}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return f"{admin}?options=-csearch_path%3D{name}"
