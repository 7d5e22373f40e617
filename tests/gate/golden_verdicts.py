"""The verdicts ``aorta compare`` gives on the stored runs of tests/data and docs/data (issue 66, item 4), pinned
before the run set was read once: ``tests/data/verdicts_before/<case>.json`` holds each case's exit code, the verdict
JSON and the terminal lines, and ``test_golden_verdicts.py`` recomputes them and compares them exactly.

Each case runs ``aorta compare`` in process, in a folder holding the files it names (so labels and paths are the same
on every machine): plain runs (the report's CPU runs, a sweep's cells, the gate pools' H100 and H200 runs), several
candidate files (combined into one ``aorta_runs`` document), and baselines saved from a pool (``save_baseline``), on
either side. A saved baseline's ids and ``saved_at`` are the time it was saved: the one field set here, to
``base1``.. and a fixed time, before the compare reads it (the only time-dependent input; nothing is masked in
the output).

    PYTHONPATH=. python tests/gate/golden_verdicts.py   # writes the golden files again (only on purpose)
"""

from __future__ import annotations

import json
import shutil
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "verdicts_before"
POOLS = ROOT / "docs" / "data" / "gate_pools"
REPORT = ROOT / "tests" / "data" / "report"
SWEEPS = ROOT / "tests" / "data" / "sweeps"
FIXED_TIME = "2026-01-01T00:00:00+00:00"


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]  # ``aorta compare`` arguments, files named as they lie in the case's folder
    baselines: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (file, runs saved into it) made first


def _pool(name: str, *runs: int) -> tuple[str, ...]:
    short = name.removeprefix("pool_")
    return tuple(f"{short}-{i}.json" for i in runs)


CASES = (
    Case("hwq_per_round_vs_end_only", ("hwq_per_round.json", "hwq_end_only.json")),
    Case("hwq_end_only_vs_per_round", ("hwq_end_only.json", "hwq_per_round.json")),
    Case("sweep_cell01_a_vs_b_env_refused", ("a_cell01.json", "b_cell01.json")),
    Case("sweep_cell01_a_vs_b", ("a_cell01.json", "b_cell01.json", "--allow-env-diff", "*")),
    Case(
        "sweep_cell04_a_vs_b_two_cells",
        ("a_cell04.json", "b_cell04.json", "b_cell03.json", "--allow-env-diff", "*"),
    ),
    Case("pool_a_aa_plain", ("a-1.json", "a-2.json")),
    Case("pool_a_vs_c_two_files", ("a-1.json", "c-1.json", "c-2.json")),
    Case("pool_f1_vs_fb_slowdown", ("f1-1.json", *_pool("pool_fb", 1, 2))),
    Case(
        "baseline_f1_vs_fb_slowdown",
        ("base_f1.json", *_pool("pool_fb", 1, 2)),
        (("base_f1.json", _pool("pool_f1", 1, 2, 3, 4)),),
    ),
    Case(
        "baseline_f3_vs_baseline_fb3",
        ("base_f3.json", "base_fb3.json"),
        (("base_f3.json", _pool("pool_f3", 1, 2, 3, 4)), ("base_fb3.json", _pool("pool_fb3", 1, 2, 3))),
    ),
    Case(
        "baseline_f2_vs_f1_other_machine",
        ("base_f2.json", *_pool("pool_f1", 1, 2, 3)),
        (("base_f2.json", _pool("pool_f2", 1, 2, 3, 4, 5, 6)),),
    ),
    Case(
        "baseline_wa_vs_wn_env_allowed",
        ("base_wa.json", "wn-1.json", "wn-2.json", "--allow-env-diff", "NCCL_MAX_NCHANNELS"),
        (("base_wa.json", _pool("pool_wa", 1, 2, 3)),),
    ),
    Case("pool_f1_vs_fc_env_refused", ("f1-1.json", "fc-1.json")),
    Case("pool_f1_vs_f3_mismatch", ("f1-1.json", "f3-1.json")),
    Case("pool_f1_vs_f3_mismatch_allowed", ("f1-1.json", "f3-1.json", "f3-2.json", "--allow-mismatch")),
    Case("pool_e_vs_g_verbose", ("e-1.json", "e-2.json", "g-1.json", "g-2.json", "-v")),
)


def stage(folder: Path) -> None:
    """Every input file of the cases, under the names the cases use."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("hwq_per_round.json", "hwq_end_only.json"):
        shutil.copy(REPORT / name, folder / name)
    for stack in ("a", "b"):
        for cell in (SWEEPS / f"stack_{stack}" / "cells").iterdir():
            shutil.copy(cell / "benchmark.json", folder / f"{stack}_{cell.name[:6]}.json")
    for pool in sorted(POOLS.glob("pool_*.tgz")):
        with tarfile.open(pool) as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.endswith(".json"):
                    data = tar.extractfile(member)
                    assert data is not None
                    (folder / Path(member.name).name).write_bytes(data.read())


def save(folder: Path, target: str, runs: tuple[str, ...]) -> None:
    """A baseline of ``runs``, saved as the gate saves one, its ids and times fixed."""
    from aorta.gate.baselines.baseline import load_run, save_baseline

    where = folder / f"saved_{target[:-5]}"
    path = None
    for run in runs:
        path, _ = save_baseline(load_run(folder / run), where, "golden", {})
    assert path is not None
    doc = json.loads(path.read_text())
    meta = doc["aorta_baseline"]
    meta["saved_at"] = FIXED_TIME
    for i, entry in enumerate(meta["runs"]):
        entry["id"], entry["saved_at"] = f"base{i + 1}", FIXED_TIME
    (folder / target).write_text(json.dumps(doc))


def outcome(case: Case, folder: Path) -> dict:
    """The case's exit code, verdict JSON (None where the compare refused before any verdict) and output."""
    sys.path.insert(0, str(ROOT / "tests"))
    from cli_in_process import run_aorta

    for target, runs in case.baselines:
        if not (folder / target).exists():
            save(folder, target, runs)
    verdict = folder / f"{case.name}.verdict.json"
    verdict.unlink(missing_ok=True)
    done = run_aorta(["compare", *case.args, "--verdict-json", verdict.name], cwd=folder)
    return {
        "args": list(case.args),
        "exit_code": done.returncode,
        "stdout": done.stdout.splitlines(),
        "stderr": done.stderr.splitlines(),
        "verdict": json.loads(verdict.read_text()) if verdict.exists() else None,
    }


def golden_text(result: dict) -> str:
    return json.dumps(result, indent=1, sort_keys=True) + "\n"


def main() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        stage(folder)
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for case in CASES:
            (GOLDEN / f"{case.name}.json").write_text(golden_text(outcome(case, folder)))
            print(case.name)


if __name__ == "__main__":
    main()
