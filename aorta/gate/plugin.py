"""The regression gate inside pytest: pytest's hooks, each handing over to a named step of ``aorta.gate.session``.

The sample is the run (``aorta.gate.verdicts.verdict``). Hooks, in the order they run:

* ``pytest_addoption``: the gate's options (``session.options.add_options``).
* ``pytest_configure``: options parsed once (``session.options.gate_options``); the baseline to compare with
  found and validated, and every refusal made, before any benchmark runs (``session.before_run.prepare``): a
  bad baseline, one from another GPU model or backend, places the gate cannot write, gates under xdist.
* ``pytest_collection_modifyitems``, ``pytest_collection_finish``: a fresh run's order and benchmarks, and the
  block it records in its JSON (``session.selection``).
* ``pytest_runtestloop``: with ``--aorta-runs N`` (N > 1) or ``auto`` this process runs no benchmark itself: the
  same command runs in fresh processes (``session.fresh``).
* ``pytest_sessionfinish``: the candidate (this process's run, or its children's) compared with the baseline's
  runs, suspects confirmed by more fresh runs, the runs saved (``session.finish``). The exit code becomes 10
  (regression), 11 (different hardware), 12 (nothing compared), 13 (baseline not saved) or 15 (inconclusive)
  only where pytest's own status is 0.
* ``pytest_terminal_summary``: the header and the verdict table; no traceback.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

import pytest

from aorta.gate.comparison.compare import NOTHING_COMPARED
from aorta.gate.runs import blocks
from aorta.gate.runs.run_wall import WALL_KEY
from aorta.gate.session import before_run, finish, fresh, options, selection, wall_record
from aorta.gate.session.state import GATE_OPTIONS, GATE_STATE, RUN_BLOCK
from aorta.processes import child_process, fork_server
from aorta.record.redact import redact_text
from aorta.record.storage_faults import said_fault

STOP_HANDLERS = pytest.StashKey[dict]()  # the signal handlers the gate replaced while its children may run


def pytest_addoption(parser: pytest.Parser) -> None:
    """The gate's options, in their own group of ``pytest --help``."""
    options.add_options(parser)


@pytest.hookimpl(trylast=True)  # after aorta.plugin's configure, which resolves the device options
def pytest_configure(config: pytest.Config) -> None:
    """Options parsed once; the baseline read and every refusal made before any benchmark runs."""
    opts = options.gate_options(config)
    state = before_run.prepare(config, opts)
    config.stash[GATE_OPTIONS] = opts
    config.stash[GATE_STATE] = state
    config.pluginmanager.register(wall_record.WallRecorder(config), "aorta-wall-record")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A fresh-process run's order (``--aorta-order-seed``) and benchmarks (``--aorta-only-file``)."""
    selection.select_items(config, items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The block this run shares with a run of the other side of a compare (``aorta.gate.runs.blocks``)."""
    selection.record_block(session)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """With ``--aorta-runs N`` (N > 1) or ``auto``: the same command in fresh processes instead of here. From
    the first of them to the gate's end, SIGINT, SIGTERM and SIGHUP end the children's trees and the gate with
    one line and 128 + N, whatever the phase (a fork server starting, a run, between runs)."""
    _stop_with_one_line(session.config, lambda opts: opts.orchestrates)
    with _faults_said():
        return fresh.run_in_fresh_processes(session)


@contextlib.contextmanager
def _faults_said() -> Iterator[None]:
    """A fault of the storage in the gate's own writing (a run's log, a lock, a folder: no space, quota,
    read-only, I/O error) or a damaged store it reads ends pytest with one line and the code a command gives
    it (aorta/record/storage_faults.py: said_fault), never an INTERNALERROR traceback (issue 65)."""
    try:
        yield
    except (OSError, ValueError, sqlite3.DatabaseError) as exc:
        said = said_fault(exc)
        if said is None:
            raise
        pytest.exit(f"aorta gate: error: {said[1]}", returncode=said[0])


def _stop_with_one_line(config: pytest.Config, starts_children) -> None:
    opts = config.stash.get(GATE_OPTIONS, None)
    if opts is not None and starts_children(opts) and STOP_HANDLERS not in config.stash:
        config.stash[STOP_HANDLERS] = child_process.exit_on_stop_signals("aorta gate")


def pytest_benchmark_update_json(config: pytest.Config, benchmarks, output_json: dict) -> None:
    """The run's block in its JSON (``aorta.gate.runs.blocks.RUN_KEY``), where ``record_block`` made one."""
    block = config.stash.get(RUN_BLOCK, None)
    if block is not None:
        output_json[blocks.RUN_KEY] = block
    wall = wall_record.record(config, output_json.get("benchmarks") or [])
    if wall is not None:
        output_json[WALL_KEY] = wall


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The candidate judged against the baseline, confirmed, written and saved; the exit code. The fork
    servers of its runs end with it (``aorta.processes.fork_server``)."""
    _stop_with_one_line(session.config, lambda opts: opts.confirm > 0)  # confirmation runs are children too
    try:
        with _faults_said():
            finish.finish_gate(session, int(exitstatus))
    finally:
        fork_server.close_servers()
        child_process.restore_signals(session.config.stash.get(STOP_HANDLERS, {}))


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """The gate's lines, a regression in red."""
    state = config.stash.get(GATE_STATE, None)
    if state is None or not state.lines:
        return
    terminalreporter.section("aorta gate")
    for line in map(redact_text, state.lines):  # every secret hidden where the gate's lines leave (issue 65)
        red = any(w in line for w in ("SLOWER", "refused", "NOT saved", "MISMATCH", NOTHING_COMPARED))
        terminalreporter.write_line(line, red=red, yellow="TEST SLOWDOWN" in line)
