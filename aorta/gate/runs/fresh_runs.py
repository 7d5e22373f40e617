"""The run is the gate's sample: the same pytest command again in fresh processes, one after another.

``pytest ... --aorta-compare NAME --aorta-runs 3`` does not run the benchmarks itself: it runs the same
command three times as child processes (each with its own launch path, allocator layout, clocks and power
state), each writing its pytest-benchmark JSON into a folder of its own, with the benchmark order varied
from run to run (``--aorta-order-seed``) so that drift over a run spreads evenly; then it judges their runs
together. Confirmation runs (``--aorta-confirm``) are the same, restricted to the suspects
(``--aorta-only-file``). ``child_args`` is pure; ``run_children`` starts the processes.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from aorta.gate.runs.ab import gate_pass_rounds
from aorta.gate.runs.blocks import RUN_KEY, is_sample
from aorta.gate.runs.run_wall import RunWall, run_wall
from aorta.processes.child_process import call_to_end, ended, exit_status
from aorta.record.redact import env_secrets, redact_argv
from aorta.record.storage_faults import faults_named
from aorta.timing.slowdown import UNITS_ENV

CHILD_ENV = "AORTA_FRESH_RUN"  # set in each child: "k/N" (or "confirm k/N"); the child never orchestrates
# Options the parent keeps to itself: the gate's (the children only measure) and the JSON path (each child
# writes its own). Value-taking options first, then flags.
PARENT_VALUE_OPTIONS = (
    "--aorta-compare",
    "--aorta-save-baseline",
    "--aorta-baseline-dir",
    "--aorta-verdict-json",
    "--aorta-markdown",
    "--aorta-confirm",
    "--aorta-runs",
    "--aorta-min-effect",
    "--aorta-max-mde",
    "--aorta-threshold",
    "--aorta-alpha",
    "--aorta-allow-env-diff",
    "--aorta-order-seed",
    "--aorta-only-file",
    "--aorta-budget",
    "--aorta-min-judged",
    "--aorta-check-run",
    "--benchmark-json",
)
PARENT_FLAGS = ("--aorta-replace-baseline", "--aorta-allow-mismatch", "--aorta-lean-run")


def child_args(
    args: Sequence[str], *, json_path: Path, seed: int, only_file: Path | None = None, lean: bool = False
) -> list[str]:
    """The parent's pytest arguments for one child: the gate's options and ``--benchmark-json`` removed
    (``--opt value`` and ``--opt=value`` alike), the child's own JSON path, order seed and one run added;
    ``lean``: a repeat run that times the rounds only (``--aorta-lean-run``)."""
    out = without_parent_options(args)
    out += [
        f"--benchmark-json={json_path}",
        f"--aorta-order-seed={seed}",
        "--aorta-runs=1",
        "--aorta-confirm=0",
    ]
    if only_file is not None:
        out.append(f"--aorta-only-file={only_file}")
    if lean:
        out.append("--aorta-lean-run")
    return out + gate_pass_rounds(out)


def without_parent_options(args: Sequence[str]) -> list[str]:
    """``args`` less the options the parent keeps to itself (``--opt value`` and ``--opt=value`` alike)."""
    out: list[str] = []
    skip_next = False
    for tok in args:
        if skip_next:
            skip_next = False
            continue
        if tok in PARENT_FLAGS or any(tok.startswith(o + "=") for o in PARENT_VALUE_OPTIONS):
            continue
        if tok in PARENT_VALUE_OPTIONS:
            skip_next = True
            continue
        out.append(tok)
    return out


def child_addopts(value: str) -> str:
    """``$PYTEST_ADDOPTS`` for a child: the parent's options taken out there too, or every child would save
    (or compare) again: a baseline with each run stored twice (issue 38, case 11)."""
    return shlex.join(without_parent_options(shlex.split(value)))


def order_items(nodeids: Sequence[str], seed: int) -> list[int]:
    """The order to run items in for ``seed``: 0 keeps the collected order; otherwise the test files are
    shuffled (a fixed permutation per seed: every rank of a torchrun draws the same) and, on odd seeds,
    each file's items run last to first. Returns indexes into ``nodeids``."""
    if seed == 0:
        return list(range(len(nodeids)))
    files = list(dict.fromkeys(n.split("::", 1)[0] for n in nodeids))
    random.Random(seed).shuffle(files)
    out = []
    for f in files:
        idx = [i for i, n in enumerate(nodeids) if n.split("::", 1)[0] == f]
        out += idx[::-1] if seed % 2 else idx
    return out


@dataclass(frozen=True)
class ChildRun:
    label: str  # "run 2/3", "confirm 1/2"
    exit_code: int
    json_path: Path
    log_path: Path
    wall_s: float
    lean: bool = False  # a repeat run that timed the rounds only
    ended: str = (
        ""  # "exit 1", "killed by signal 9 (SIGKILL), exit 137" (aorta.processes.child_process.ended)
    )
    sample: bool = True  # its figures are samples (a check run's are not: aorta.gate.runs.blocks)
    lean_estimate_s: float | None = None  # a full run's guess at a lean run's wall (aorta.gate.runs.run_wall)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.json_path.is_file()


def wall_of(child: ChildRun, kind: str) -> RunWall:
    """Where ``child``'s wall went, from the record it wrote in its JSON (``aorta.gate.runs.run_wall``)."""
    return run_wall(kind, child.wall_s, read_doc(child.json_path))


def read_doc(json_path: Path) -> dict | None:
    try:
        doc = json.loads(json_path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def recorded_sample(json_path: Path) -> bool:
    """Whether the run at ``json_path`` says its figures are samples (``aorta.gate.runs.blocks.RUN_KEY``); a run
    without the record (or without its JSON) is taken as one."""
    try:
        doc = json.loads(json_path.read_text())
    except (OSError, ValueError):
        return True
    return is_sample(doc.get(RUN_KEY) if isinstance(doc, dict) else None)


def runs_dir(root: Path) -> Path:
    """A new folder under ``root`` for one gate's runs: ``<UTC time>-<pid>``."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    d = root / f"{stamp}-{os.getpid()}"
    d.mkdir(parents=True, exist_ok=False)
    return d


def run_children(
    args: Sequence[str],
    *,
    cwd: Path,
    out_dir: Path,
    count: int,
    kind: str = "run",
    first_seed: int = 1,
    only: Sequence[str] | None = None,
    say: Callable[[str], None] = print,
    env: Mapping[str, str] | None = None,
    lean: bool = False,
) -> list[ChildRun]:
    """Run ``python -m pytest <args>`` ``count`` times in fresh processes, one after another, each
    writing ``<out_dir>/<kind><k>.json`` and its output to ``<kind><k>.log``; stops at the first that
    fails (its exit code is the parent's answer: the gate never judges a partial candidate)."""
    only_file = write_only_file(out_dir, kind, only)
    done: list[ChildRun] = []
    for k in range(1, count + 1):
        run = run_child(
            args,
            cwd=cwd,
            out_dir=out_dir,
            name=f"{kind}{k}",
            label=f"{kind} {k}/{count}",
            seed=first_seed + k - 1,
            only_file=only_file,
            say=say,
            env=env,
            lean=lean,
        )
        done.append(run)
        if not run.ok:
            break
    return done


def write_only_file(out_dir: Path, kind: str, only: Sequence[str] | None) -> Path | None:
    """The node ids a restricted run takes (``--aorta-only-file``), one a line; None for every benchmark."""
    if only is None:
        return None
    only_file = out_dir / f"{kind}-only.txt"
    with faults_named(only_file):
        only_file.write_text("".join(f"{n}\n" for n in only))
    return only_file


def run_child(
    args: Sequence[str],
    *,
    cwd: Path,
    out_dir: Path,
    name: str,
    label: str,
    seed: int,
    only_file: Path | None = None,
    lean: bool = False,
    say: Callable[[str], None] = print,
    env: Mapping[str, str] | None = None,
) -> ChildRun:
    """One fresh process: ``python -m pytest <args>`` writing ``<out_dir>/<name>.json``, its output in
    ``<name>.log``."""
    json_path, log_path = out_dir / f"{name}.json", out_dir / f"{name}.log"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        *child_args(args, json_path=json_path, seed=seed, only_file=only_file, lean=lean),
    ]
    # one slowdown calibration for all of this gate's runs (aorta.timing.slowdown: the same work in each)
    child_env = {
        UNITS_ENV: str(out_dir / "slowdown_units.json"),
        **os.environ,
        **(env or {}),
        CHILD_ENV: label,
    }
    if child_env.get("PYTEST_ADDOPTS"):
        child_env["PYTEST_ADDOPTS"] = child_addopts(child_env["PYTEST_ADDOPTS"])
    start = time.monotonic()
    with faults_named(log_path):  # a full disk: one line naming the log (issue 65)
        log = open(log_path, "w")  # noqa: SIM115 (closed by the with below)
        log.write("$ " + " ".join(redact_argv(cmd, env_secrets(child_env))) + "\n")  # no password in a log
        log.flush()
    with log:
        raw, hung = call_to_end(  # the child dies with this process (issue 38, case 6)
            cmd,
            done_file=str(out_dir / f"{name}.done"),
            cwd=cwd,
            env=child_env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    code = exit_status(raw)  # killed by signal 9: 137, not -9 (which pytest would give as 247)
    took = time.monotonic() - start
    run = ChildRun(
        label,
        code,
        json_path,
        log_path,
        took,
        lean,
        ended(raw),
        recorded_sample(json_path),
        None if lean else run_wall("full", took, read_doc(json_path)).lean_estimate_s(),
    )
    state = "ok" if run.ok else f"FAILED ({run.ended}{'' if json_path.is_file() else ', no JSON'})"
    say(f"aorta gate: {label}{' (lean)' if lean else ''}: {state} in {run.wall_s:.1f} s, log {log_path}")
    if hung:
        say(f"aorta gate: {label} {hung}")
    return run
