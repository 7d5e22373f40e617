"""Run a sweep's cells, each in a fresh process with its own environment; record each in the manifest.

The one module of the sweep that starts processes. A cell runs in its own session (process group), so a
timed-out ``torchrun`` is stopped with all its ranks, under a guard (``cell_guard.py``) that stops the whole
group when the sweep dies outright (SIGKILL), so no orphan writes into a later attempt. Each attempt has an
id, passed to the run (``AORTA_SWEEP_CELL``) and recorded in its machine info: a benchmark JSON that names
another attempt is not accepted. A cell already done is kept unless ``force``; a cell re-run with ``force``
keeps its earlier result until the new one has succeeded. A command that cannot start is a failed cell.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from aorta.environment.fingerprint import CELL_ENV_VAR
from aorta.exit_codes import EXIT_CANNOT_START, EXIT_CELL_FAILED, EXIT_CLEAN
from aorta.processes.child_process import KEEPER_PYTHON, end_tree, start_child
from aorta.record.redact import env_secrets, redact_argv
from aorta.sweep import manifest as mf
from aorta.sweep.command import cell_command
from aorta.sweep.grid import Cell

STOP_GRACE_S = 10.0  # after SIGTERM, before SIGKILL: torchrun forwards the signal to its ranks
GUARD = str(Path(__file__).with_name("cell_guard.py"))  # run as a script: found without aorta on the path


def format_duration(seconds: float) -> str:
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    return f"{m}m{s:02d}s" if m < 60 else f"{m // 60}h{m % 60:02d}m"


def cell_environment(
    environ: Mapping[str, str], cell: Cell, label: str, total: int, attempt: str | None = None
) -> dict[str, str]:
    """The parent's environment, the cell's variables on top, and the cell itself as JSON for the run record
    (with ``attempt``, the id of this attempt at the cell)."""
    env = dict(environ)
    env.update(cell.env)
    record = {
        "sweep": label,
        "cell": cell.id,
        "index": cell.index,
        "cells": total,
        "settings": cell.shown_settings,
    }
    if attempt:
        record["attempt"] = attempt
    env[CELL_ENV_VAR] = json.dumps(record, sort_keys=False)
    return env


def new_attempt_id() -> str:
    return uuid.uuid4().hex[:12]


def foreign_attempt(json_path: Path, attempt: str) -> str | None:
    """The attempt id a benchmark JSON records when it is not ``attempt`` (a late writer: an earlier
    attempt's process), else None. A JSON that records no attempt (not written by aorta) is accepted."""
    try:
        doc = json.loads(json_path.read_text(encoding="utf-8"))
        cell = doc["machine_info"]["aorta"]["sweep_cell"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    found = cell.get("attempt") if isinstance(cell, dict) else None
    return str(found) if found and found != attempt else None


def _stop(proc: subprocess.Popen) -> None:
    """End the cell's whole process group (the command and, under torchrun, every rank)."""
    end_tree(proc, STOP_GRACE_S)


def _log_tail(path: Path, lines: int = 5) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def _run_one(
    cmd: list[str], env: dict[str, str], log: Path, timeout_s: float | None
) -> tuple[str, int | None, str | None]:
    """(status, exit code, note) of one cell's command."""
    watcher = "0" if KEEPER_PYTHON else str(os.getpid())  # a keeper watches the sweep: the guard need not
    guarded = [sys.executable, GUARD, watcher, "--", *cmd]
    with open(log, "w", encoding="utf-8") as out:
        try:
            proc = start_child(guarded, env=env, stdout=out, stderr=subprocess.STDOUT)
        except OSError as exc:
            return mf.FAILED, None, f"the command could not start: {exc}"
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop(proc)
            return mf.TIMEOUT, proc.returncode, f"stopped after --cell-timeout {timeout_s:g} s"
        except BaseException:  # Ctrl-C or SIGTERM: stop the cell before the sweep records it and ends
            _stop(proc)
            raise
    if code == EXIT_CANNOT_START:
        tail = _log_tail(log, 1)
        return mf.FAILED, code, f"the command could not start: {tail[0] if tail else 'see the log'}"
    return (mf.OK if code == 0 else mf.FAILED), code, None if code == 0 else f"exit code {code}"


def run_cell(
    folder: Path,
    entries: list[dict],
    cell: Cell,
    base_cmd: Sequence[str],
    env: dict[str, str],
    timeout_s: float | None,
    attempt_id: str | None = None,
) -> dict:
    """Run one cell into its folder and return its manifest entry. An earlier good result is moved aside
    first and put back if the new attempt fails or is interrupted (the failed attempt goes to ``<dir>.failed``).
    The cell's entry in ``entries`` is replaced even when the run is interrupted."""
    entry = entries[cell.index]
    cell_dir = folder / entry["dir"]
    previous = cell_dir.with_name(cell_dir.name + ".previous")
    kept = entry["status"] == mf.OK and cell_dir.exists()
    if kept:
        os.replace(cell_dir, previous)
    elif cell_dir.exists():
        shutil.rmtree(cell_dir)  # a failed or interrupted attempt's leftovers, recorded as such
    cell_dir.mkdir(parents=True)
    json_path, artifacts, log = cell_dir / "benchmark.json", cell_dir / "artifacts", cell_dir / "log.txt"
    cmd = cell_command(base_cmd, cell, json_path, artifacts)
    attempt = {
        **mf.cell_entry(cell),
        "attempt": attempt_id,
        "command": redact_argv(cmd, env_secrets(env)),
        "started_at": mf.now_iso(),
        "log": str(log.relative_to(folder)),
    }
    t0 = time.monotonic()
    status, code, note = mf.INTERRUPTED, None, "interrupted (Ctrl-C or SIGTERM)"  # until the command returns
    note_now: str | None
    try:
        status, code, note_now = _run_one(cmd, env, log, timeout_s)
        note = note_now or ""
        if status == mf.OK and not json_path.exists():
            status, note = mf.FAILED, "exit code 0 but no benchmark JSON written (no benchmark ran?)"
        elif status == mf.OK and attempt_id and (other := foreign_attempt(json_path, attempt_id)):
            status, note = mf.FAILED, f"the benchmark JSON was written by attempt {other}, not this one"
    finally:
        attempt.update(
            status=status,
            exit_code=code,
            note=note or None,
            ended_at=mf.now_iso(),
            duration_s=round(time.monotonic() - t0, 3),
            benchmark_json=str(json_path.relative_to(folder)) if json_path.exists() else None,
            artifacts=str(artifacts.relative_to(folder)) if artifacts.exists() else None,
        )
        if status != mf.OK and kept:
            failed = cell_dir.with_name(cell_dir.name + ".failed")
            if failed.exists():
                shutil.rmtree(failed)
            os.replace(cell_dir, failed)
            os.replace(previous, cell_dir)
            entry = {**entry, "last_attempt": {**attempt, "dir": str(failed.relative_to(folder))}}
        else:
            if previous.exists():
                shutil.rmtree(previous)
            entry = attempt
        entries[cell.index] = entry
    return entry


def restore_kept_result(folder: Path, entry: Mapping) -> None:
    """A sweep killed outright (SIGKILL, power) while re-running a done cell leaves its earlier result in
    ``<dir>.previous``: put it back before anything reads or replaces the cell."""
    cell_dir = folder / entry["dir"]
    previous = cell_dir.with_name(cell_dir.name + ".previous")
    if not previous.exists():
        return
    if entry["status"] == mf.OK:  # the manifest still describes the earlier result
        if cell_dir.exists():
            shutil.rmtree(cell_dir)  # the killed attempt's partial output
        os.replace(previous, cell_dir)
    else:
        shutil.rmtree(previous)


def run_sweep(
    folder: Path,
    doc: dict,
    cells: Sequence[Cell],
    cmd: Sequence[str],
    *,
    force: bool,
    timeout_s: float | None,
    environ: Mapping[str, str] = os.environ,
    out: TextIO = sys.stdout,
) -> int:
    """Run every cell not done yet (every cell with ``force``); 0 when every cell is ok, 1 otherwise."""
    n = len(cells)
    for entry in doc["cells"]:
        restore_kept_result(folder, entry)
    todo = {c.index for c in cells if force or doc["cells"][c.index]["status"] != mf.OK}
    start, durations, failed_now, kept_now = time.monotonic(), [], 0, 0
    print(f"aorta sweep: {n} cells, {n - len(todo)} already done, {len(todo)} to run -> {folder}", file=out)
    for cell in cells:
        k = cell.index + 1
        if cell.index not in todo:
            print(
                f"cell {k} of {n} [{cell.id}]: kept (done {doc['cells'][cell.index]['ended_at']})", file=out
            )
            continue
        print(f"cell {k} of {n} [{cell.id}]: running", file=out, flush=True)
        attempt_id = new_attempt_id()
        env = cell_environment(environ, cell, doc["label"], n, attempt_id)
        try:
            entry = run_cell(folder, doc["cells"], cell, cmd, env, timeout_s, attempt_id)
        except KeyboardInterrupt:
            mf.write_manifest(folder, doc)  # the cell was stopped and recorded as interrupted
            raise
        mf.write_manifest(folder, doc)
        attempt = entry.get("last_attempt") or entry
        durations.append(attempt["duration_s"])
        left = len(todo) - len(durations)
        elapsed = time.monotonic() - start
        estimate = f", about {format_duration(left * sum(durations) / len(durations))} left" if left else ""
        what = attempt["status"] + (f" ({attempt['note']})" if attempt["note"] else "")
        print(
            f"cell {k} of {n}: {what} in {format_duration(attempt['duration_s'])}; "
            f"elapsed {format_duration(elapsed)}{estimate}",
            file=out,
            flush=True,
        )
        if attempt["status"] != mf.OK:
            failed_now += 1
            if "last_attempt" in entry:
                kept_now += 1
                print(f"  the earlier result is kept; this attempt: {attempt['dir']}", file=out)
            for line in _log_tail(folder / attempt["log"]):
                print(f"  | {line}", file=out)
    counts = mf.counts(doc)
    this_run = ""
    if failed_now:  # a failed --force re-run keeps the earlier ok result: say why the exit code is 1
        this_run = f"; {failed_now} failed in this run" + (
            f" ({kept_now} of them re-runs: their earlier ok results kept)" if kept_now else ""
        )
    print(
        "aorta sweep: "
        + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
        + this_run
        + f"; manifest {folder / mf.MANIFEST}",
        file=out,
    )
    return EXIT_CLEAN if counts.get(mf.OK, 0) == n and not failed_now else EXIT_CELL_FAILED
