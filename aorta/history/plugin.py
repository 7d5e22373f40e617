"""``--aorta-history URL``: keep this run in the history at the end of any pytest run of aorta's benchmarks.

The URL is checked, and the history opened (created, migrated, or refused when damaged or of a newer schema)
at configure time, so a bad one is a usage error (exit 4) before any benchmark runs. At the end, a process
that ran benchmarks adds its run (the document ``--benchmark-json`` would hold) in one transaction; under
torchrun rank 0 adds it. A gate run in fresh processes (``--aorta-runs N``) adds each child's run from the
child, which ran the benchmarks; the parent runs none and adds nothing. A run that could not be written
(disk full, locked) is said in the summary and exits 3 where pytest passed.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from aorta.exit_codes import EXIT_WRITE_FAILED
from aorta.history.run_rows import run_rows
from aorta.history.store import DEFAULT_PATH, HistoryError, add_runs, open_store, parse_history_url

URL = pytest.StashKey[str]()
STARTED = pytest.StashKey[float]()
SESSION_ENV = "AORTA_HISTORY_SESSION"  # the session a run belongs to: the gate's verdicts go to its runs
CHILD_ENV = "AORTA_FRESH_RUN"  # set by the gate in each fresh-run child (aorta/gate/runs/fresh_runs.py)
LINES = pytest.StashKey[list[str]]()
# A file the gate's fresh runs append to when their run could not be kept (the history went away between
# runs): the parent says so and exits 3, the runs and the verdict are kept (issue 46).
NOT_KEPT_ENV = "AORTA_HISTORY_NOT_KEPT"


def parse_history_option(text: str) -> str:
    try:
        return parse_history_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("aorta-history", "aorta run history").addoption(
        "--aorta-history",
        type=parse_history_option,
        default=None,
        metavar="URL",
        help="keep this run in a history: a SQLite file (e.g. .aorta/history.db) or a postgresql:// URL "
        "(aorta history show / page read it)",
    )


@pytest.hookimpl(
    trylast=True
)  # after the gate's checks: a history never made where a baseline is to be saved
def pytest_configure(config: pytest.Config) -> None:
    url = config.getoption("aorta_history", None)
    if not url:
        return
    config.stash[LINES] = []
    try:
        open_store(url).close()  # refused here, before any benchmark runs, if it cannot be used
    except HistoryError as exc:
        if os.environ.get(CHILD_ENV) is None:
            raise pytest.UsageError(f"--aorta-history: {exc}") from None
        # A gate's fresh run: the parent checked the history before the first run; one that went away since
        # costs this run's row (tried again at the end), never the run.
        config.stash[LINES].append(f"aorta history: cannot be reached at the start of this run: {exc}")
    config.stash[URL] = url
    config.stash[STARTED] = time.time()
    if os.environ.get(CHILD_ENV) is None:  # the gate's fresh runs inherit it: their runs carry this session
        os.environ[SESSION_ENV] = uuid.uuid4().hex[:12]
        fd, path = tempfile.mkstemp(prefix="aorta-history-not-kept.", suffix=".txt")
        os.close(fd)
        os.environ[NOT_KEPT_ENV] = path
        # read and removed at the session's end; a session refused or stopped before it ends leaves nothing
        config.add_cleanup(lambda: _remove_not_kept(path))


def _remove_not_kept(path: str) -> None:
    """The fresh runs' not-kept list gone, and its variable with it where it still names this file."""
    if os.environ.get(NOT_KEPT_ENV) == path:
        del os.environ[NOT_KEPT_ENV]
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def pytest_aorta_history_baseline(config: pytest.Config, ref: str, machine_model: str) -> dict:
    """``--aorta-compare history:STACK[:N]`` (a hook of aorta/hookspec.py, called by the gate): the last N runs
    of STACK on this machine model as a baseline document, from ``--aorta-history`` (else ``$AORTA_HISTORY``,
    else ``.aorta/history.db`` in the rootdir). ``ValueError`` (or ``HistoryError``) naming what is missing."""
    from aorta.history.baseline_doc import history_baseline, parse_history_ref

    stack, last = parse_history_ref(ref)
    env = os.environ.get("AORTA_HISTORY")
    url = config.getoption("aorta_history", None) or (
        parse_history_url(env) if env else str(config.rootpath / DEFAULT_PATH)
    )
    with open_store(url, create=False, write=False) as store:
        return history_baseline(store.runs(), store.figures(), stack, machine_model, last)


def _document(config: pytest.Config) -> dict | None:
    """The run as pytest-benchmark's JSON holds it (aorta's machine info and extra_info included): the file it
    wrote in this session where there is one, so the row and the file are the same run to the second (a
    document generated again holds a later ``datetime``: the file added afterwards was a second row)."""
    from aorta.record import RecordError
    from aorta.record.benchmark_json import session_document
    from aorta.record.benchmark_json_option import target_path
    from aorta.record.load import read_json_file

    written = target_path(config.getoption("benchmark_json", None))
    if written and os.path.isfile(written) and os.path.getmtime(written) >= config.stash[STARTED]:
        try:
            doc = read_json_file(Path(written))
            if isinstance(doc, dict) and doc.get("benchmarks"):
                return doc
        except RecordError:
            pass
    bs = getattr(config, "_benchmarksession", None)
    if bs is None or not getattr(bs, "benchmarks", None):
        return None
    return session_document(config)


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int):
    """After every other plugin's end of session (the gate has judged and written its verdicts): keep this
    process's run, then attach the gate's verdicts to the runs of this session (a gate's fresh runs were
    kept by its children, tagged with the parent's session)."""
    result = yield
    config = session.config
    url = config.stash.get(URL, None)
    if url is None or os.environ.get("RANK", "0") != "0":
        return result
    from aorta.record import RecordError
    from aorta.record.load import check_run

    lines, source = config.stash[LINES], f"pytest {os.environ.get(SESSION_ENV, '')}".strip()
    now = datetime.now(UTC).isoformat(timespec="seconds")
    doc = _document(config)
    try:
        if doc is not None:
            check_run(doc, "this run")
            rows = run_rows(doc, source, now)
            with open_store(url) as store:
                ids = add_runs(store, rows, now)
                lines.append(
                    f"aorta history: {sum(i is not None for i in ids)} run(s) kept in {store.where} "
                    f"({len(rows[0].figures)} figures)"
                )
        verdicts = _verdicts(config)
        if verdicts and os.environ.get(CHILD_ENV) is None:
            with open_store(url) as store:
                n = store.add_verdicts(source, verdicts)
            lines.append(f"aorta history: the gate's {len(verdicts)} verdicts kept with {n} run(s)")
    except (HistoryError, RecordError) as exc:
        lines.append(f"aorta history: this run was NOT kept: {exc}")
        child = os.environ.get(CHILD_ENV)
        if child is not None and os.environ.get(NOT_KEPT_ENV):  # the parent says so; this run stays good
            with open(os.environ[NOT_KEPT_ENV], "a", encoding="utf-8") as fh:
                fh.write(f"{child}: {' '.join(str(exc).split())}\n")
        elif int(session.exitstatus) == 0:
            session.exitstatus = EXIT_WRITE_FAILED
    if os.environ.get(CHILD_ENV) is None:
        _fresh_runs_not_kept(session, lines)
    return result


def _fresh_runs_not_kept(session: pytest.Session, lines: list[str]) -> None:
    """The gate's fresh runs whose rows the history lost: one line each; exit 3 where nothing worse happened
    (a SLOWER verdict's 10 stays 10)."""
    path = os.environ.pop(NOT_KEPT_ENV, None)
    if not path:
        return
    try:
        with open(path, encoding="utf-8") as fh:
            missed = [line.strip() for line in fh if line.strip()]
        os.unlink(path)
    except OSError:
        return
    for line in missed:
        run, _, why = line.partition(": ")
        lines.append(f"aorta history: fresh run {run} was NOT kept (the run and the verdict stand): {why}")
    if missed and int(session.exitstatus) == 0:
        session.exitstatus = EXIT_WRITE_FAILED


def _verdicts(config: pytest.Config) -> tuple:
    """The verdicts the gate wrote in this session (its verdict file, written after the session started)."""
    from aorta.history.run_rows import verdict_rows
    from aorta.record import RecordError
    from aorta.record.load import read_json_file

    option = config.getoption("aorta_verdict_json", None)
    if option == "" or not (config.getoption("aorta_compare", None)):
        return ()
    path = Path(option) if option else config.rootpath / "reports" / "aorta-verdict.json"
    if not path.is_file() or path.stat().st_mtime < config.stash[STARTED]:
        return ()
    try:
        doc = read_json_file(path)
    except RecordError:
        return ()
    return verdict_rows(doc) if isinstance(doc, dict) else ()


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    for line in config.stash.get(LINES, []):
        terminalreporter.write_line(line, red="NOT kept" in line)
