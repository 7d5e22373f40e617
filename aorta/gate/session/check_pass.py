"""Checks passed once: a gate's check run is not repeated where the same code, stack, machine and options passed it.

A check run (output checks against one stream, per-stream work checks, kernel passes, known-answer tests) asks
whether this code measures right on this stack and machine. Its answer does not change between a save and a
compare minutes later, yet it cost 49-73 s of every 5-minute p0 gate on an H100 (issue 63): a fifth of the
budget, no sample. So a check run that passed leaves a record (``checks.json`` under the runs root, at most
``KEEP`` of them) of what decided its answer:

* the **command**: its arguments less the gate's own (seed, JSON, budget), and the interpreter or launcher;
* the **code**: a hash of the aorta package's files, the run's test files, the conftest files above them and the
  ini file (``code_hash``; the run records it in its block, ``aorta.gate.runs.blocks``);
* the **stack** (driver, CUDA or HIP, torch, NCCL/RCCL, python, scheduling settings) and the **machine** (the
  GPU's UUID), from the check run's own JSON.

A later gate with the same command and code finds the record and starts with a lean run instead; that run's
JSON says its stack, machine and code, and where any of them differs from the record's, the check run runs
after all, at once (``verify``). The gate says which it did and why. ``--aorta-check-run always`` (``aorta ab
--check-run always``) runs it regardless.

Pure but for ``load`` and ``store`` (one JSON file through the one writer, ``aorta.record.atomic``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from aorta.gate.baselines.baseline import stack_of
from aorta.gate.runs.blocks import RUN_KEY
from aorta.record.atomic import write_json_atomic
from aorta.record.machines import machine_id

FILE_NAME = "checks.json"
KEEP = 50  # records kept, newest first: one per command, interpreter and code
MODES = ("auto", "always")
SUFFIXES = (".py", ".json", ".yaml", ".yml", ".ini", ".toml", ".cfg")  # what a run reads as code or settings


def parse_mode(text: str, option: str = "--aorta-check-run") -> str:
    if text not in MODES:
        raise ValueError(f"{option}={text!r}: expected one of {', '.join(MODES)}")
    return text


def code_files(
    package_dir: Path, test_files: Iterable[Path], rootdir: Path, inifile: Path | None
) -> list[Path]:
    """What a run's code is: the aorta package's files, each test file, every conftest.py from the rootdir
    down to each test file's folder, and the ini file."""
    out = {p for p in package_dir.rglob("*") if p.suffix in SUFFIXES and "__pycache__" not in p.parts}
    for f in test_files:
        out.add(f)
        folder = f.parent
        while True:
            conftest = folder / "conftest.py"
            if conftest.is_file():
                out.add(conftest)
            if folder == rootdir or folder == folder.parent or rootdir not in folder.parents:
                break
            folder = folder.parent
    if (rootdir / "conftest.py").is_file():
        out.add(rootdir / "conftest.py")
    if inifile is not None:
        out.add(inifile)
    return sorted(p for p in out if p.is_file())


def code_hash(files: Sequence[Path], rootdir: Path) -> str:
    """A short hash of the files' contents and their places (relative to the rootdir where under it)."""
    h = hashlib.sha256()
    for f in files:
        try:
            name = str(f.relative_to(rootdir))
        except ValueError:
            name = f"{f.parent.name}/{f.name}"  # the installed package: its place is not the code
        h.update(name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def command_key(args: Sequence[str], interpreter: str) -> str:
    """The record's key: the command (the gate's own options already taken out) and what runs it."""
    return hashlib.sha256(json.dumps([list(args), interpreter]).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Passed:
    """A check run that passed: what it checked, where and when."""

    key: str
    code: str
    stack: Mapping
    machine: str
    passed_at: str
    check_s: float  # the check run's wall
    lean_estimate_s: float | None  # its guess at a lean run's wall (the first lean run is planned from it)
    log: str  # the check run's log, to read what it checked

    def as_dict(self) -> dict:
        return {
            "key": self.key,
            "code": self.code,
            "stack": dict(self.stack),
            "machine": self.machine,
            "passed_at": self.passed_at,
            "check_s": self.check_s,
            "lean_estimate_s": self.lean_estimate_s,
            "log": self.log,
        }


def passed_from_run(
    key: str, doc: Mapping, check_s: float, lean_estimate_s: float | None, log: str
) -> Passed | None:
    """The record a passed check run leaves, from its own JSON; None where the run recorded no code hash (it
    cannot be matched later) or was itself a sample (it skipped nothing a lean run would)."""
    block = _block(doc)
    if not block.get("code") or block.get("sample", True):
        return None
    return Passed(
        key,
        str(block["code"]),
        stack_of(doc),
        machine_id(doc),
        datetime.now(UTC).isoformat(timespec="seconds"),
        round(check_s, 1),
        None if lean_estimate_s is None else round(lean_estimate_s, 1),
        log,
    )


def _block(doc: Mapping) -> Mapping:
    block = doc.get(RUN_KEY)
    return block if isinstance(block, Mapping) else {}


def find(records: Sequence[Mapping], key: str, code: str | None) -> Passed | None:
    """The newest record of this command whose code is this code (``code`` None: any code, where the caller
    cannot hash it and ``verify`` compares the first lean run's); None: the check run runs."""
    for r in records:
        if r.get("key") == key and (code is None or r.get("code") == code):
            try:
                return Passed(
                    str(r["key"]),
                    str(r["code"]),
                    dict(r.get("stack") or {}),
                    str(r.get("machine") or ""),
                    str(r.get("passed_at") or ""),
                    float(r.get("check_s") or 0.0),
                    None if r.get("lean_estimate_s") is None else float(r["lean_estimate_s"]),
                    str(r.get("log") or ""),
                )
            except (KeyError, TypeError, ValueError):
                return None
    return None


def verify(passed: Passed, lean_doc: Mapping | None) -> str | None:
    """Why the record does not vouch for the run ``lean_doc`` (its code, stack or machine differs), or None."""
    if lean_doc is None:
        return "the first lean run wrote no JSON to compare with the record"
    block = _block(lean_doc)
    if block.get("code") != passed.code:
        return "the code differs from the one the record's check run passed"
    stack = stack_of(lean_doc)
    if stack != dict(passed.stack):
        parts = sorted(k for k in set(stack) | set(passed.stack) if stack.get(k) != passed.stack.get(k))
        return f"the stack differs ({', '.join(parts)})"
    if machine_id(lean_doc) != passed.machine:
        return f"another machine ({machine_id(lean_doc) or 'unknown'}; the record's: {passed.machine or 'unknown'})"
    return None


def skipped_line(passed: Passed) -> str:
    return (
        f"check run skipped: this code, stack, machine and command passed it at {passed.passed_at} "
        f"({passed.check_s:.0f} s, log {passed.log}); the first lean run's stack and machine are compared with "
        "that record (--aorta-check-run always runs it regardless)"
    )


def load(root: Path) -> list[dict]:
    """The records under ``root`` (none where there is no file, or one that cannot be read: a damaged record
    only costs a check run)."""
    try:
        doc = json.loads((root / FILE_NAME).read_text())
    except (OSError, ValueError):
        return []
    records = doc.get("passed") if isinstance(doc, dict) else None
    return [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []


def store(root: Path, passed: Passed) -> None:
    """This record first, the others of other commands or code after it, at most ``KEEP``."""
    others = [r for r in load(root) if (r.get("key"), r.get("code")) != (passed.key, passed.code)]
    os.makedirs(root, exist_ok=True)
    write_json_atomic(root / FILE_NAME, {"passed": [passed.as_dict(), *others][:KEEP]})


def keep(
    root: Path, key: str, doc: Mapping | None, wall_s: float, lean_estimate_s: float | None, log: str
) -> str | None:
    """The record a check run that passed leaves (nothing where ``passed_from_run`` makes none); why it could not
    be written, or None: a record not kept costs the next gate a check run, not this gate its verdict."""
    passed = passed_from_run(key, doc or {}, wall_s, lean_estimate_s, log)
    if passed is None:
        return None
    try:
        store(root, passed)
    except OSError as exc:
        return str(exc)
    return None
