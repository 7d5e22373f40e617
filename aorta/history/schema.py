"""The history database's schema, as numbered migrations (pure: SQL text only).

``MIGRATIONS[v]`` takes a database at version ``v - 1`` to version ``v``; a new database runs them all. The
version a database is at is the one row of ``aorta_schema``. An aorta that finds a higher version than its
own ``SCHEMA_VERSION`` refuses the database (it would misread it), and one that finds a lower version
migrates it inside one transaction, so a database is at one version or the next, never between.

Statements are written once for both engines: ``{id}`` and ``{real}`` are the two spellings that differ.
"""

from __future__ import annotations

DIALECT_TYPES = {
    "sqlite": {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "real": "REAL"},
    "postgresql": {"id": "BIGSERIAL PRIMARY KEY", "real": "DOUBLE PRECISION"},
}

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        "CREATE TABLE aorta_schema (version INTEGER NOT NULL)",
        # one row per run: a fresh process of pytest, as its JSON records it
        """CREATE TABLE runs (
            id {id},
            run_key TEXT NOT NULL UNIQUE,
            recorded_at TEXT NOT NULL,
            added_at TEXT NOT NULL,
            machine_model TEXT NOT NULL,
            machine_id TEXT NOT NULL,
            host TEXT NOT NULL,
            stack_label TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            source TEXT NOT NULL
        )""",
        # one row per figure per benchmark per run: the run's figure (median of its rounds) and its samples
        """CREATE TABLE figures (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            benchmark TEXT NOT NULL,
            figure TEXT NOT NULL,
            value {real} NOT NULL,
            unit TEXT NOT NULL,
            higher_is_better INTEGER NOT NULL,
            samples TEXT NOT NULL,
            PRIMARY KEY (run_id, benchmark, figure)
        )""",
        # the gate's verdicts a run got (where the run file carries them)
        """CREATE TABLE verdicts (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            benchmark TEXT NOT NULL,
            figure TEXT NOT NULL,
            verdict TEXT NOT NULL,
            change {real},
            PRIMARY KEY (run_id, benchmark, figure)
        )""",
        "CREATE INDEX figures_by_name ON figures (benchmark, figure)",
    ),
    2: (
        # the aorta commit and the resolved options a run was measured with (its settings beside the stack)
        "ALTER TABLE runs ADD COLUMN commit_id TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE runs ADD COLUMN settings TEXT NOT NULL DEFAULT '{{}}'",
        "CREATE INDEX runs_by_machine ON runs (machine_model, recorded_at)",
    ),
}
SCHEMA_VERSION = max(MIGRATIONS)


def statements(dialect: str, from_version: int, to_version: int = SCHEMA_VERSION) -> list[str]:
    """The statements that take a database of ``dialect`` from ``from_version`` to ``to_version``."""
    types = DIALECT_TYPES[dialect]
    return [s.format(**types) for v in range(from_version + 1, to_version + 1) for s in MIGRATIONS[v]]
