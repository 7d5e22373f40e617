#!/usr/bin/env python3
"""Apply each hand-made realistic bug alone to a copy of the tree and run the fast-tier tests named for it.

mutmut flips operators and constants; the bugs in ``scripts/realistic_bugs.toml`` are the ones a developer
writes (the wrong rank, the first N instead of the last N, a dropped check, a vendor name missing, a failure
swallowed). Each is the exact text of one file replaced by another. For each, this script copies the tree
once into a temporary folder, writes the bug into its file, runs ``pytest -m 'not slow'`` on the tests the
list names for it, restores the file, and prints one line:

    caught   the named tests failed
    missed   they passed: a bug that would ship (or, where the list says ``expect = "missed"``, one it
             explains no test can see)
    stale    the old text is not in the file any more (the code moved on): re-read the bug and fix its text;
             never counted as caught
    error    pytest could not run the tests (exit 2-5: a test id that does not exist, a collection error)

Usage (from the repository root; ``docs/mutation_testing.md`` keeps the last results):

    python3 scripts/realistic_bugs.py                   # every bug
    python3 scripts/realistic_bugs.py --package gate    # one package's bugs
    python3 scripts/realistic_bugs.py gate-fresh-no-json fsdp-wait-unclamped    # named bugs
    python3 scripts/realistic_bugs.py --list            # the bugs, without running anything

Exit 0 when every bug is caught or expected missed, 1 otherwise (a bug missed, stale or in error).
The real AMD traces are read where ``AORTA_AMD_TRACES`` points, else ``../shared/amd_traces`` beside this
checkout, as the tests themselves read them.
"""

from __future__ import annotations

import argparse
import os
import shutil
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


def try_bug(bug: Bug, root: Path, timeout_s: float) -> tuple[str, str]:
    """(result, detail) of one bug applied alone in the copy at ``root``; the file is restored after."""
    n = occurrences(bug, root)
    if n != 1:
        return "stale", "old text not found" if n == 0 else f"old text found {n} times"
    path = root / bug.file
    clean = path.read_text(encoding="utf-8")
    path.write_text(clean.replace(bug.old, bug.new, 1), encoding="utf-8")
    try:
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-m",
            "not slow",
            "-x",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
        ]
        proc = subprocess.run(
            [*cmd, *bug.tests], cwd=root, env=_env(root), capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        return "caught", f"timed out after {timeout_s:.0f} s (a hang is seen)"
    finally:
        path.write_text(clean, encoding="utf-8")
    tail = (proc.stdout or proc.stderr).strip().splitlines()
    if proc.returncode == 1:
        failed = [ln.split(" ", 1)[1].split(" - ")[0] for ln in tail if ln.startswith("FAILED ")]
        return "caught", failed[0] if failed else (tail[-1] if tail else "")
    if proc.returncode == 0:
        return "missed", tail[-1] if tail else ""
    return "error", f"pytest exit {proc.returncode}: {tail[-1] if tail else ''}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ids", nargs="*", help="bug ids to try (default: all)")
    ap.add_argument("--package", action="append", default=[], help="only this package's bugs (repeatable)")
    ap.add_argument("--list", action="store_true", help="print the bugs and stop")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per bug's test run (default 300)")
    ap.add_argument("--bugs", type=Path, default=LIST, help=f"the list (default {LIST.relative_to(REPO)})")
    args = ap.parse_args(argv)
    bugs = load(args.bugs)
    unknown = sorted(set(args.ids) - {b.id for b in bugs})
    if unknown:
        ap.error(f"no such bug: {', '.join(unknown)}")
    bugs = [
        b
        for b in bugs
        if (not args.ids or b.id in args.ids) and (not args.package or b.package in args.package)
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
        for b in bugs:
            start = time.monotonic()
            result, detail = try_bug(b, root, args.timeout)
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
    if n:
        print(f"{'all':10} caught {total['caught']} of {n} ({100 * total['caught'] / n:.1f}%)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
