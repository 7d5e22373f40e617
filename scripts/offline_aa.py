"""A/A compares from runs already measured: each group of runs (one machine, one stack) saved as a baseline and
judged by ``aorta compare`` against every other group's runs, at the auto gate's look level (issue 45).

    python3 scripts/offline_aa.py --group aa1 RUN.json ... --group aa2 RUN.json ... [--group ...]

A group is the run files of one gate's fresh runs (``.aorta/runs/<stamp>/run*.json``) or one ``aorta ab`` side:
runs of the same order seed and selection pair across groups as they do in a gate. Every group of one machine
judged against another is an A/A: a SLOWER or FASTER in it is a false alarm. It judges all of a group's runs
at once (one look), not as the sequential gate does, so it says what these runs allow, not what a gate said.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from aorta.gate.baselines.baseline import save_baseline
from aorta.gate.stats.sequential import look_alpha
from aorta.gate.verdicts.verdict import DEFAULT_ALPHA


def baseline_of(name: str, runs: list[str], directory: Path) -> Path:
    """Group ``name``'s runs saved as one baseline under ``directory``."""
    path = None
    for run in runs:
        path, _ = save_baseline(
            json.loads(Path(run).read_text()), directory, name, {}, planned_runs=len(runs)
        )
    assert path is not None
    return path


def judge(baseline: Path, runs: list[str], verdict: Path, alpha: float) -> tuple[int, dict]:
    """``aorta compare`` of ``runs`` against ``baseline``: its exit code and its comparison."""
    cmd = [sys.executable, "-m", "aorta", "compare", "--alpha", str(alpha), "--verdict-json", str(verdict)]
    done = subprocess.run([*cmd, str(baseline), *runs], capture_output=True, text=True)
    if not verdict.exists():
        raise SystemExit(f"aorta compare wrote no verdict (exit {done.returncode}): {done.stderr[-400:]}")
    return done.returncode, json.loads(verdict.read_text())["comparisons"][0]


def row(ref: str, cand: str, code: int, comp: dict) -> str:
    vs = comp["verdicts"]
    gateable = sum(1 for v in vs if v.get("mde") is not None and v["mde"] <= 0.05)
    pairs = sorted({v["pairs"] for v in vs if v.get("pairs")})
    alarms = sum(v["outcome"] in ("SLOWER", "FASTER") for v in vs)
    return (
        f"| {ref} | {cand} | {code} | {alarms} | {comp['judged']} of {len(vs)} | {gateable} | "
        f"{', '.join(map(str, pairs)) or 'unpaired'} |"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", nargs="+", action="append", required=True, metavar=("NAME", "RUN.json"))
    ap.add_argument(
        "--alpha",
        type=float,
        default=look_alpha(DEFAULT_ALPHA),
        help="two-sided alpha of each compare (default: the auto gate's per-look level)",
    )
    args = ap.parse_args(argv)
    groups = {g[0]: g[1:] for g in args.group}
    if len(groups) < 2 or any(not runs for runs in groups.values()):
        ap.error("--group: give at least two groups, each a NAME and its run files")
    print("| baseline | candidate | exit | SLOWER or FASTER | judged | MDE <= 5% | pairs |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        bases = {name: baseline_of(name, runs, Path(tmp) / name) for name, runs in groups.items()}
        for ref, cand in itertools.permutations(groups, 2):
            code, comp = judge(bases[ref], groups[cand], Path(tmp) / f"{ref}-{cand}.json", args.alpha)
            print(row(ref, cand, code, comp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
