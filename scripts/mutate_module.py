#!/usr/bin/env python3
"""Mutation-test one module against the fast tests that read it, with a time cap (docs/mutation_testing.md).

The whole ``[tool.mutmut]`` set takes more than an hour on two cores; a change to one module needs only its
own mutants. This copies the tree into a folder of its own (``--work``, default the system's temporary folder),
writes a ``[tool.mutmut]`` there that mutates ``MODULE`` alone against ``TESTS``, runs ``mutmut run`` under
``--minutes`` and prints the score and each survivor. The checkout itself is never touched (no ``mutants/``
in it), so several modules can be run one after the other, or a module again after a test is added.

    python3 scripts/mutate_module.py aorta/gate/runs/blocks.py tests/gate/test_blocks.py --minutes 20
    python3 scripts/mutate_module.py aorta/record/redact.py tests/record/test_redact.py tests/guards

Not part of CI's test command: minutes a module. Needs ``pip install -e '.[mutation]'`` (mutmut 3.x).
Exit 0 when it finished (whatever the score), 1 when it was cut at the cap or mutmut failed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COPIED = ("aorta", "tests", "scripts", "benchmarks", "config", "conftest.py", "pytest.ini", "pyproject.toml")
# the same deselection as the repository's [tool.mutmut]: a test that starts Python in another folder
DESELECT = "tests/gate/test_gate_offline.py::test_cli_runs_as_a_module_without_torch"


def mutmut_config(module: str, tests: list[str]) -> str:
    """The ``[tool.mutmut]`` table that mutates ``module`` alone against ``tests``."""
    quoted = ", ".join(f'"{t}"' for t in tests)
    return (
        "[tool.mutmut]\n"
        'source_paths = ["aorta"]\n'
        f'only_mutate = ["{module}"]\n'
        'also_copy = ["conftest.py", "pytest.ini", "benchmarks/", "config/", "scripts/"]\n'
        f'pytest_add_cli_args = ["-m", "not slow", "--deselect", "{DESELECT}"]\n'
        f"pytest_add_cli_args_test_selection = [{quoted}]\n"
    )


def with_config(pyproject: str, table: str) -> str:
    """``pyproject`` with its ``[tool.mutmut]`` table replaced by ``table``."""
    kept = re.sub(r"(?ms)^\[tool\.mutmut\]\n.*?(?=^\[|\Z)", "", pyproject)
    return kept.rstrip("\n") + "\n\n" + table


def parse_results(text: str) -> dict[str, str]:
    """``mutmut results --all true`` lines (``    name: status``) as name -> status."""
    out = {}
    for line in text.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            out[name] = status.strip()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("module", help="the file to mutate, e.g. aorta/gate/runs/blocks.py")
    ap.add_argument("tests", nargs="+", help="test files or folders run against each mutant")
    ap.add_argument("--minutes", type=float, default=30.0, help="cap on mutmut run (default 30)")
    ap.add_argument("--children", type=int, default=1, help="mutmut's --max-children (default 1)")
    ap.add_argument("--work", type=Path, default=None, help="the folder to copy the tree into")
    ap.add_argument("--keep", action="store_true", help="reuse --work's mutants/ (test survivors again)")
    args = ap.parse_args(argv)
    if not (REPO / args.module).is_file():
        ap.error(f"module {args.module!r}: no such file under {REPO}")
    for t in args.tests:
        if not (REPO / t.split("::")[0]).exists():
            ap.error(f"test {t!r}: no such file or folder under {REPO}")
    if args.minutes <= 0:
        ap.error(f"--minutes={args.minutes}: give more than 0")
    slug = args.module.replace("/", "_").removesuffix(".py")
    work = args.work or Path(tempfile.gettempdir()) / "aorta-mutmut" / slug
    if work.exists() and not args.keep:
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        src, dest = REPO / name, work / name
        if src.is_dir():
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "mutants"))
        elif src.is_file():
            shutil.copy2(src, dest)
    pyproject = work / "pyproject.toml"
    pyproject.write_text(with_config(pyproject.read_text(), mutmut_config(args.module, args.tests)))
    if args.keep:  # the tests changed: mutmut's map of which tests reach which function is rebuilt
        (work / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # mutmut imports mutants/, not the tree
    traces = REPO.parent / "shared" / "amd_traces"  # as tests/amd_traces.py finds them beside the checkout
    if "AORTA_AMD_TRACES" not in env and traces.is_dir():
        env["AORTA_AMD_TRACES"] = str(traces)  # the copy is elsewhere: without this the trace tests skip
    t0 = time.monotonic()
    try:
        run = subprocess.run(
            [sys.executable, "-m", "mutmut", "run", "--max-children", str(args.children)],
            cwd=work,
            env=env,
            timeout=args.minutes * 60,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        finished = run.returncode == 0
        if not finished:
            print(run.stderr[-2000:], file=sys.stderr)
    except subprocess.TimeoutExpired:
        finished = False
        print(f"mutmut run cut at {args.minutes:g} min: the counts below are of the mutants tested so far")
    results = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    status = parse_results(results.stdout)
    counts: dict[str, int] = {}
    for s in status.values():
        counts[s] = counts.get(s, 0) + 1
    killed = counts.get("killed", 0) + counts.get("timeout", 0)
    tested = killed + counts.get("survived", 0)
    score = f"{100.0 * killed / tested:.1f}%" if tested else "n/a"
    print(
        f"{args.module}: {killed} killed of {tested} tested ({score}); {len(status)} mutants; "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        + f"; {time.monotonic() - t0:.0f} s; work folder {work}"
    )
    for name, s in sorted(status.items()):
        if s == "survived":
            print(f"  survived: {name}")
    return 0 if finished else 1


if __name__ == "__main__":
    sys.exit(main())
