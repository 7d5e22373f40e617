"""The history's store tests run on every engine: SQLite always, PostgreSQL where a real server starts."""

from __future__ import annotations

import itertools
import os
import uuid

import pytest

_counter = itertools.count()


@pytest.fixture(scope="session")
def postgres_url():
    """A server of one's own (``AORTA_TEST_POSTGRESQL``: a URL whose user may create schemas, such as a CI
    service's or one kept running for a mutation run, where starting one per pytest run would dominate), else a
    throwaway server started for this session."""
    given = os.environ.get("AORTA_TEST_POSTGRESQL")
    if given:
        yield given
        return
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
    name = f"aorta_test_{next(_counter)}_{uuid.uuid4().hex[:12]}"  # unique on a server shared by several runs
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return f"{admin}?options=-csearch_path%3D{name}"
