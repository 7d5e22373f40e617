#!/usr/bin/env python3
"""Apply each hand-made realistic bug alone to a copy of the tree and run the fast-tier tests that reach it.

mutmut flips operators and constants; the bugs in ``scripts/realistic_bugs.toml`` are the ones a developer
writes (the wrong rank, the first N instead of the last N, a dropped check, a vendor name missing, a failure
swallowed). Each is the exact text of one file replaced by another. This script copies the tree once into a
temporary folder and measures, in one coverage run of the fast tier (``scripts/bug_reach.py``: each test its
own context, the processes it starts included), which tests reach which lines of the bugs' files; the map is
kept in the temporary folder of the system, keyed by the tree's content, and reused while the tree is the same.
Then, for each bug, it writes the bug into its file and runs ``pytest -m 'not slow' -x`` on the tests that reach
the lines the bug changes and the test ids the list names for it (the list's whole files where no test reaches
the lines: code run at import, or only in a process the map does not see), each run forked from one process
that imported torch and scipy once. It restores the file and prints one line:

    caught   the tests failed
    missed   they passed: a bug that would ship (or, where the list says ``expect = "missed"``, one it
             explains no test can see)
    stale    the old text is not in the file any more (the code moved on): re-read the bug and fix its text;
             never counted as caught
    error    pytest could not run the tests (exit 2-5: a test id that does not exist, a collection error)

Usage (from the repository root; ``docs/mutation_testing.md`` keeps the last results):

    python3 scripts/realistic_bugs.py                   # every bug (about 8 minutes on 2 cores, map included)
    python3 scripts/realistic_bugs.py --package gate    # one package's bugs
    python3 scripts/realistic_bugs.py gate-fresh-no-json fsdp-wait-unclamped    # named bugs
    python3 scripts/realistic_bugs.py --listed          # the list's tests only, no coverage map (slower)
    python3 scripts/realistic_bugs.py --list            # the bugs, without running anything

Exit 0 when every bug is caught or expected missed, 1 otherwise (a bug missed, stale or in error).
The real AMD traces are read where ``AORTA_AMD_TRACES`` points, else ``../shared/amd_traces`` beside this
checkout, as the tests themselves read them. The map needs coverage (``pip install coverage``).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIST = Path(__file__).with_name("realistic_bugs.toml")
COPIED = (
    "aorta",
    "tests",
    "scripts",
    "benchmarks",
    "config",
    "docs",
    "conftest.py",
    "pytest.ini",
    "pyproject.toml",
)


@dataclass(frozen=True)
class Bug:
    id: str
    package: str
    file: str
    old: str
    new: str
    what: str
    tests: tuple[str, ...]
    expect: str = "caught"  # "missed": no test can see it, and ``why`` says so
    why: str = ""
    group: str = ""  # a set written together and kept back, e.g. "issue-47" (--group)


def load(path: Path = LIST) -> list[Bug]:
    """The bugs of ``path``; ValueError naming the entry where one is malformed."""
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    bugs = []
    for i, raw in enumerate(doc.get("bug", [])):
        missing = [k for k in ("id", "package", "file", "old", "new", "what", "tests") if k not in raw]
        if missing:
            raise ValueError(f"{path}: bug #{i + 1} ({raw.get('id', '?')}) lacks {', '.join(missing)}")
        if raw.get("expect", "caught") not in ("caught", "missed"):
            raise ValueError(f"{path}: bug {raw['id']}: expect must be 'caught' or 'missed'")
        if raw.get("expect") == "missed" and not raw.get("why"):
            raise ValueError(f"{path}: bug {raw['id']}: an expected miss must say why no test can see it")
        if raw["old"] == raw["new"]:
            raise ValueError(f"{path}: bug {raw['id']}: old and new text are the same")
        bugs.append(Bug(**{**raw, "tests": tuple(raw["tests"])}))
    ids = Counter(b.id for b in bugs)
    dup = [i for i, n in ids.items() if n > 1]
    if dup:
        raise ValueError(f"{path}: bug ids used twice: {', '.join(dup)}")
    return bugs


def occurrences(bug: Bug, root: Path) -> int:
    """How many times the bug's old text is in its file under ``root`` (1 is the only usable answer)."""
    p = root / bug.file
    return p.read_text(encoding="utf-8").count(bug.old) if p.is_file() else 0


def _copy_tree(dest: Path) -> None:
    for name in COPIED:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(
                src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "mutants")
            )
        elif src.is_file():
            shutil.copy2(src, dest / name)


def _env(root: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    traces = os.environ.get("AORTA_AMD_TRACES") or str(REPO.parent / "shared" / "amd_traces")
    env["AORTA_AMD_TRACES"] = traces
    return env


PYTEST = ["-m", "not slow", "-x", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
PRELOADED = ("torch._dynamo", "scipy.stats", "numpy", "yaml", "hypothesis", "matplotlib", "pytest")
MAP_ROOT = Path(tempfile.gettempdir()) / "aorta-bug-reach"


def tree_key(root: Path) -> str:
    """A hash of every copied file's path and content, and of where the real AMD traces are read (tests skip
    without them): the reach map is reused while it is the same."""
    h = hashlib.sha256(_env(root)["AORTA_AMD_TRACES"].encode())
    for name in COPIED:
        src = root / name
        for f in sorted(src.rglob("*")) if src.is_dir() else [src] if src.is_file() else []:
            if f.is_file() and "__pycache__" not in f.parts and "mutants" not in f.parts:
                h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:20]


def reach_map(root: Path, timeout_s: float = 1800.0) -> dict:
    """Which tests reach which lines of every module of aorta (the map scripts/bug_reach.py writes): from the
    cache where one was made of this tree, else one coverage run of the fast tier in ``root``."""
    files = sorted(str(f.relative_to(root)) for f in (root / "aorta").rglob("*.py"))
    cached = MAP_ROOT / f"{tree_key(root)}.json"
    if cached.is_file():
        return json.loads(cached.read_text(encoding="utf-8"))
    MAP_ROOT.mkdir(parents=True, exist_ok=True)
    out = MAP_ROOT / f"{cached.stem}.partial.json"
    start = time.monotonic()
    print(
        f"measuring which fast tests reach which lines of {len(files)} files (one coverage run) ...",
        flush=True,
    )
    subprocess.run(
        [sys.executable, str(root / "scripts" / "bug_reach.py"), str(out), *files],
        cwd=root,
        env=_env(root),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=True,
    )
    out.replace(cached)
    print(f"measured in {time.monotonic() - start:.0f} s (kept in {cached})", flush=True)
    return json.loads(cached.read_text(encoding="utf-8"))


def changed_lines(bug: Bug, text: str) -> range:
    """The lines of the clean file that the bug's old text spans (1-based)."""
    first = text.count("\n", 0, text.index(bug.old)) + 1
    return range(first, first + bug.old.rstrip("\n").count("\n") + 1)


def tests_for(bug: Bug, text: str, reach: dict | None) -> list[str]:
    """The tests that reach the bug's lines (a line inside a statement is reached with the statement's first
    line: the nearest measured line above counts too), after the test ids the list names, the quickest first.
    The list's own tests come first, whole, where a line also runs at import (a constant any test may read:
    the tests that reach it are only those that imported it in a process of their own), and alone where no
    test reaches the lines or there is no map."""
    if reach is None:
        return list(bug.tests)
    lines = reach["files"].get(bug.file, {})
    imported = {str(n) for n in reach.get("at_import", {}).get(bug.file, ())}
    wanted = changed_lines(bug, text)
    above = [int(n) for n in set(lines) | imported if int(n) <= wanted[0]]
    keys = {str(n) for n in wanted} | ({str(max(above))} if above else set())
    found = {t for k in keys for t in lines.get(k, ())}
    if not found:
        return list(bug.tests)
    first = list(bug.tests) if imported & keys else [t for t in bug.tests if "::" in t]
    seconds = reach.get("seconds", {})
    return first + sorted(found - set(first), key=lambda t: (seconds.get(t, 0.0), t))


def _run_forked(args: list[str], root: Path, timeout_s: float) -> tuple[int | None, str]:
    """(pytest's exit code or None on timeout, its output) of ``pytest args`` in a child forked from this
    process (torch and scipy imported once here, aorta never: the child imports the tree with the bug)."""
    log = root / ".bug-run.log"
    pid = os.fork()
    if pid == 0:  # the child: its own process group, so a timeout ends the processes it started too
        rc = 3
        try:
            os.setpgrp()
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.chdir(root)
            os.environ.update(_env(root))
            sys.path.insert(0, str(root))
            import pytest

            rc = int(pytest.main(args))
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(rc)
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), log.read_text(encoding="utf-8", errors="replace")
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None, log.read_text(encoding="utf-8", errors="replace")
        time.sleep(0.05)


def try_bug(bug: Bug, root: Path, timeout_s: float, reach: dict | None = None) -> tuple[str, str]:
    """(result, detail) of one bug applied alone in the copy at ``root``; the file is restored after."""
    n = occurrences(bug, root)
    if n != 1:
        return "stale", "old text not found" if n == 0 else f"old text found {n} times"
    path = root / bug.file
    clean = path.read_text(encoding="utf-8")
    tests = tests_for(bug, clean, reach)
    path.write_text(clean.replace(bug.old, bug.new, 1), encoding="utf-8")
    try:
        if reach is None:
            try:
                proc = subprocess.run(
                    [sys.executable, "-m", "pytest", *PYTEST, *tests],
                    cwd=root,
                    env=_env(root),
                    capture_output=True,
                    text=True,
                    timeout=timeout_s,
                )
                rc, out = proc.returncode, proc.stdout or proc.stderr
            except subprocess.TimeoutExpired:
                rc, out = None, ""
        else:
            rc, out = _run_forked([*PYTEST, *tests], root, timeout_s)
    finally:
        path.write_text(clean, encoding="utf-8")
    if rc is None:
        return "caught", f"timed out after {timeout_s:.0f} s (a hang is seen)"
    tail = out.strip().splitlines()
    if rc == 1:
        failed = [ln.split(" ", 1)[1].split(" - ")[0] for ln in tail if ln.startswith("FAILED ")]
        return "caught", failed[0] if failed else (tail[-1] if tail else "")
    if rc == 0:
        return "missed", f"{len(tests)} tests: " + (tail[-1] if tail else "")
    return "error", f"pytest exit {rc}: {tail[-1] if tail else ''}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ids", nargs="*", help="bug ids to try (default: all)")
    ap.add_argument("--package", action="append", default=[], help="only this package's bugs (repeatable)")
    ap.add_argument("--group", default=None, help="only the bugs of this group (e.g. issue-47)")
    ap.add_argument("--list", action="store_true", help="print the bugs and stop")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per bug's test run (default 300)")
    ap.add_argument(
        "--listed", action="store_true", help="run the list's tests for each bug (no coverage map, slower)"
    )
    ap.add_argument("--bugs", type=Path, default=LIST, help=f"the list (default {LIST.relative_to(REPO)})")
    args = ap.parse_args(argv)
    bugs = load(args.bugs)
    unknown = sorted(set(args.ids) - {b.id for b in bugs})
    if unknown:
        ap.error(f"no such bug: {', '.join(unknown)}")
    bugs = [
        b
        for b in bugs
        if (not args.ids or b.id in args.ids)
        and (not args.package or b.package in args.package)
        and (args.group is None or b.group == args.group)
    ]
    if args.list:
        for b in bugs:
            print(f"{b.id:32} {b.file}: {b.what}")
        return 0
    results: dict[str, list[str]] = {}
    bad = 0
    with tempfile.TemporaryDirectory(prefix="aorta-bugs-") as tmp:
        root = Path(tmp)
        _copy_tree(root)
        reach = None
        if not args.listed:
            reach = reach_map(root)
            for name in PRELOADED:  # once here; each bug's pytest is forked from this process
                importlib.import_module(name)
        began = time.monotonic()
        for b in bugs:
            start = time.monotonic()
            result, detail = try_bug(b, root, args.timeout, reach)
            known = result == "missed" and b.expect == "missed"
            bad += not (result == "caught" or known)
            shown = "missed (expected)" if known else result
            results.setdefault(b.package, []).append(result)
            print(f"{shown:18} {b.id:34} {time.monotonic() - start:5.1f} s  {detail}", flush=True)
            if known:
                print(f"{'':18} why: {b.why}")
    print()
    total = Counter()
    for pkg, rs in results.items():
        c = Counter(rs)
        total.update(c)
        print(
            f"{pkg:10} caught {c['caught']} of {len(rs)}"
            + "".join(f", {k} {c[k]}" for k in ("missed", "stale", "error") if c[k])
        )
    n = sum(total.values())
    print(f"{len(bugs)} bugs tried in {time.monotonic() - began:.0f} s")
    if n:
        print(f"{'all':10} caught {total['caught']} of {n} ({100 * total['caught'] / n:.1f}%)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
