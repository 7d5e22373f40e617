"""The run-level gate judged offline from pools of fresh-process runs (the ``pool`` proof's archives).

    python3 -m scripts.gpu.pools phases POOL_DIR          # one pool: runs, wall time, time per phase
    python3 -m scripts.gpu.pools judge OUT_DIR POOL_DIR... [--base-runs 4] [--cand-runs 3] [--pairs 10]
    python3 -m scripts.gpu.pools judge OUT_DIR POOL_DIR... --base-pools 3 --cand-runs 2   # across machines
    python3 -m scripts.gpu.pools same OUT_DIR BEFORE_POOL... -- AFTER_POOL...   # a refactor: an A/A

The proofs ``judge`` and ``same_figures_judge`` run these (``python3 -m scripts.gpu.prove --list``).

``judge`` forms the compares from the pools (each pool is one device call on one machine, named by its GPU
line) and runs each through ``aorta compare`` (the gate's own command, the same verdicts as
``pytest --aorta-compare``, without the confirmation re-runs, which need the benchmarks):

* A/A pairs, baseline from one pool and candidate from another: the baseline is ``--base-runs`` runs, the
  candidate ``--cand-runs`` runs, windows that do not overlap within a pool where the pool allows; a pool
  with base + cand runs also gives a pair within itself. Pairs formed from the same pools share runs, so
  they are not independent trials: the table says which runs each used.
* with ``--base-pools K``: each baseline is every run of K A/A pools (K machines, one device call each),
  against another machine's pool (A/A: the candidate shares no machine with its baseline), and each slowdown
  or change pool against the first three such baselines;
* each slowdown pool (runs with ``--aorta-test-slowdown`` or ``--aorta-test-comm-ballast``) and each change
  pool (runs with a setting changed on purpose, ``AORTA_POOL_ENV``; compared with ``--allow-env-diff '*'``)
  against a baseline of each A/A pool (the one on the pool's machine first, where there is one).

It prints: each compare's exit code and verdict counts; per benchmark, device time's change and verdict in
each compare with the MDE the gate found; the summary (A/A SLOWER, benchmarks with a gateable device-time
figure at MDE <= 5%, catch rate per slowdown).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from collections import Counter
from itertools import combinations
from pathlib import Path

from aorta.gate.baselines import baseline as bl
from aorta.gate.comparison.compare import deliberate_slowdowns
from aorta.gate.stats.samples import baseline_runs
from aorta.gate.verdicts.verdict import DEFAULT_ALPHA
from aorta.record.run_samples import DEVICE_TIME
from aorta.record.table import format_table
from aorta.stats.noise import mde, pooled_noise, run_value
from scripts.gpu.gate_tables import OUTCOMES, compare_tables, few_benchmark_lines, verdicts

# baseline v candidate runs the projection also counts: a run of the default suite takes 3-4 minutes
PROJECTED_DESIGNS = ((10, 5), (20, 10), (40, 20))


def _runs(pool: Path) -> list[Path]:
    def k(p: Path) -> int:
        m = re.search(r"-(\d+)\.json$", p.name)
        return int(m.group(1)) if m else 0

    return sorted((p for p in pool.glob("*.json") if not p.name.endswith(".verdict.json")), key=k)


def pool_phases(work: Path, knobs) -> list[str]:
    """The ``pool`` proof's table: the pool's runs (exit code, wall seconds) and each run's host seconds by
    phase."""
    return [line for pool in find_pools([work]) for line in phases(pool)]


def find_pools(folders: list[Path]) -> list[Path]:
    """The pools in the given folders, in the order given: a folder holding run JSON is a pool; otherwise
    its ``pool_*`` folders are (an unpacked archive of the ``pool`` proof, or of the older pool script)."""
    found: list[Path] = []
    for folder in folders:
        if _runs(folder):
            found.append(folder)
            continue
        found += sorted({p.parent for p in folder.rglob("pool_*/*.json")} - set(found))
    return found


def _gpu_lines(folder: Path) -> list[str]:
    """The pool's GPU line (nvidia-smi's): in the pool folder (older pools) or beside it (the prove driver's)."""
    for gpu in (folder / "gpu.txt", folder.parent / "gpu.txt"):
        if gpu.is_file() and gpu.read_text().strip():
            return gpu.read_text().splitlines()
    return []


def _machine(pool: Path) -> str:
    lines = _gpu_lines(pool)
    if lines:
        fields = [f.strip() for f in lines[0].split(",")]
        return fields[1][:12] if len(fields) > 1 else fields[0]
    return pool.name


def phases(pool: Path) -> list[str]:
    """One pool's runs (its runs.txt where there is one) and each run's host seconds by phase."""
    rows, totals = [], Counter()
    for p in _runs(pool):
        doc = json.loads(p.read_text())
        benches = doc.get("benchmarks", [])
        ph = Counter()
        for b in benches:
            ph.update((b.get("extra_info") or {}).get("host_phase_s") or {})
        totals.update(ph)
        rows.append(
            [p.stem, str(len(benches)), f"{sum(ph.values()):.0f}", *(f"{ph[k]:.0f}" for k in sorted(ph))]
        )
    keys = sorted(totals)
    log = pool / "runs.txt"
    head = log.read_text().rstrip().splitlines() if log.is_file() else []
    return head + format_table(["run", "benchmarks", "phases s", *keys], rows)


def _load(f: Path) -> dict:
    """A run's document; one recorded before runs named their GPU by UUID is named by its pool's GPU line
    (nvidia-smi's), so that the gate tells the pools' machines apart."""
    doc = json.loads(f.read_text())
    aorta = (doc.setdefault("machine_info", {})).setdefault("aorta", {})
    if not aorta.get("gpu_uuid"):
        lines = _gpu_lines(f.parent)  # empty where nvidia-smi is missing
        fields = [x.strip() for x in lines[0].split(",")] if lines else []
        if len(fields) > 1:  # nvidia-smi's spelling, less the "GPU-" that torch's (the record's) lacks
            aorta["gpu_uuid"] = fields[1].removeprefix("GPU-")
    return doc


def _combine(files: list[Path], dest: Path) -> Path:
    docs = [_load(f) for f in files]
    dest.write_text(json.dumps(bl.combine_runs(docs, [f.stem for f in files])))
    return dest


def _windows(files: list[Path], size: int) -> list[list[Path]]:
    """Non-overlapping windows of ``size`` runs, then (when fewer than two) every combination."""
    wins = [files[i : i + size] for i in range(0, len(files) - size + 1, size)]
    if len(wins) < 2:
        wins = [list(c) for c in combinations(files, size)]
    return wins


def _kind(pool: Path, files: list[Path]) -> str:
    """``aa``, ``slowdown`` or ``change``: the pool's kind.txt (the ``pool`` proof's), else from the runs' records."""
    kind = pool / "kind.txt"
    if kind.is_file() and kind.read_text().split():
        return kind.read_text().split()[0]
    return "slowdown" if deliberate_slowdowns(json.loads(files[0].read_text())) else "aa"


def _what(pool: Path, files: list[Path]) -> tuple[str, str]:
    """(kind, the row's label): the slowdown's size or ballast, or the change's settings."""
    kind = _kind(pool, files)
    if kind == "change":
        return kind, "change: " + " ".join((pool / "kind.txt").read_text().split()[1:])
    first = json.loads(files[0].read_text())
    level = deliberate_slowdowns(first)
    ballast = any(
        (b.get("extra_info") or {}).get("test_slowdown_info", {}).get("kind") == "comm_ballast"
        for b in first.get("benchmarks", ())
    )
    size = max(level.values()) if level else 0
    return kind, (f"comm ballast {size:g}" if ballast else f"{size * 100:g}% slowdown")


def _compare(out: Path, label: str, base: list[Path], cand: list[Path], extra: list[str] = ()) -> dict:
    ref = _combine(base, out / f"{label}.ref.json")
    runs = out / "runs"
    runs.mkdir(exist_ok=True)
    for f in cand:
        (runs / f.name).write_text(json.dumps(_load(f)))
    cand = [runs / f.name for f in cand]
    vj = out / f"{label}.verdict.json"
    cmd = [
        sys.executable,
        "-m",
        "aorta",
        "compare",
        str(ref),
        *map(str, cand),
        f"--verdict-json={vj}",
        *extra,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    (out / f"{label}.log").write_text(proc.stdout + proc.stderr)
    ref.unlink()
    if not vj.is_file():
        raise SystemExit(
            f"{label}: aorta compare wrote no verdicts (exit {proc.returncode}): {proc.stderr[-800:]}"
        )
    doc = json.loads(vj.read_text())
    doc["_label"], doc["_base"], doc["_cand"] = label, [p.stem for p in base], [p.stem for p in cand]
    return doc


def judge(out: Path, pools: list[Path], base_n: int, cand_n: int, max_pairs: int, base_pools: int = 1) -> int:
    out.mkdir(parents=True, exist_ok=True)
    aa, slow = {}, {}
    for pool in pools:
        files = _runs(pool)
        if files:
            (aa if _kind(pool, files) == "aa" else slow)[pool] = files
    if base_pools > 1:
        return _judge_across(out, aa, slow, base_pools, cand_n, max_pairs)
    compares = []
    pairs = []
    for x, y in [(x, y) for x in aa for y in aa]:
        if x == y:
            if len(aa[x]) >= base_n + cand_n:
                pairs.append((x, aa[x][:base_n], y, aa[x][base_n : base_n + cand_n]))
            continue
        if len(aa[x]) < base_n or len(aa[y]) < cand_n:
            continue
        for w in _windows(aa[y], cand_n):
            pairs.append((x, aa[x][:base_n], y, w))
    # Spread the pairs over the machine pairs (round robin) before taking max_pairs.
    by_key: dict[tuple, list] = {}
    for p in pairs:
        by_key.setdefault((p[0], p[2]), []).append(p)
    spread = []
    while any(by_key.values()):
        for key in list(by_key):
            if by_key[key]:
                spread.append(by_key[key].pop(0))
    for i, (x, base, y, cand) in enumerate(spread[:max_pairs], 1):
        doc = _compare(out, f"aa{i}", base, cand)
        doc["_machines"] = (_machine(x), _machine(y))
        compares.append(("A/A", doc))
    for s, files in slow.items():  # against each A/A pool, the one on the slowdown's machine first
        kind, what = _what(s, files)
        for src in sorted(aa, key=lambda p: _machine(p) != _machine(s)):
            if len(aa[src]) < base_n:
                continue
            allow = ["--allow-env-diff=*"] if kind == "change" else []
            doc = _compare(out, f"{kind}_{src.name}_{s.name}", aa[src][:base_n], files[:cand_n], allow)
            doc["_machines"] = (_machine(src), _machine(s))
            compares.append((what, doc))
    print("\n".join(compare_tables(compares) + few_benchmark_lines(compares)))
    _projection(list(aa.values()) + list(slow.values()))
    return 0


def _judge_across(
    out: Path, aa: dict[Path, list[Path]], slow: dict[Path, list[Path]], k: int, cand_n: int, max_pairs: int
) -> int:
    """Baselines of every run of ``k`` A/A pools (``k`` machines), each against a candidate pool that is
    none of them: another machine's ``cand_n`` runs (A/A), or a slowdown / change pool. Pairs are spread
    over the candidate pools (round robin) before taking ``max_pairs``."""
    by_cand: dict[Path, list[tuple]] = {}
    for cand in aa:
        others = [p for p in aa if p != cand]
        for combo in combinations(others, k):
            by_cand.setdefault(cand, []).append(combo)
    spread = []
    while any(by_cand.values()):
        for cand in list(by_cand):
            if by_cand[cand]:
                spread.append((cand, by_cand[cand].pop(0)))
    compares = []
    for i, (cand, combo) in enumerate(spread[:max_pairs], 1):
        base = [f for p in combo for f in aa[p]]
        doc = _compare(out, f"aa{i}", base, aa[cand][:cand_n])
        doc["_machines"] = ("+".join(_machine(p) for p in combo), _machine(cand))
        compares.append(("A/A", doc))
    for s, files in slow.items():
        kind, what = _what(s, files)
        allow = ["--allow-env-diff=*"] if kind == "change" else []
        for j, combo in enumerate(combinations(list(aa), k)):
            if j >= 3:
                break
            base = [f for p in combo for f in aa[p]]
            doc = _compare(out, f"{kind}{j + 1}_{s.name}", base, files[:cand_n], allow)
            doc["_machines"] = ("+".join(_machine(p) for p in combo), _machine(s))
            compares.append((what, doc))
    print("\n".join(compare_tables(compares)))
    _projection(list(aa.values()) + list(slow.values()))
    return 0


def _projection(pools: list[list[Path]], base_n: int = 6, cand_n: int = 3) -> None:
    """Device time's between-run noise pooled within each pool (runs of one machine and one stack: a
    slowdown pool's runs differ only by noise too), and the MDE it gives a compare of ``base_n`` baseline
    runs and ``cand_n`` candidate runs: a projection from the measured noise, not a compare."""
    per_bench: dict[str, list[list[float]]] = {}
    for files in pools:
        groups: dict[str, list[float]] = {}
        for f in files:
            for run in baseline_runs(json.loads(f.read_text()), str(f)):
                for name, figs in run.items():
                    if figs.get(DEVICE_TIME):
                        groups.setdefault(name, []).append(run_value(figs[DEVICE_TIME]))
        for name, values in groups.items():
            per_bench.setdefault(name, []).append(values)
    rows, within = [], 0
    designs = {d: 0 for d in PROJECTED_DESIGNS}  # more runs on each side: where the limit lies
    for name in sorted(per_bench):
        noise = pooled_noise(*per_bench[name])
        if noise is None:
            continue
        for b, c in designs:
            designs[b, c] += mde(type(noise)(noise.sigma, b + c - 2, 0), b, c, alpha=DEFAULT_ALPHA) <= 0.05
        # the compare's own degrees of freedom (base_n + cand_n - 2), the noise as measured here
        projected = mde(type(noise)(noise.sigma, base_n + cand_n - 2, 0), base_n, cand_n, alpha=DEFAULT_ALPHA)
        within += projected <= 0.05
        rows.append(
            [name.split("::")[-1], f"{noise.sigma * 100:.2f}%", str(noise.df), f"{projected * 100:.1f}%"]
        )
    print()
    print(
        "\n".join(
            format_table(
                ["benchmark (device_ms)", "between-run noise", "df", f"MDE at {base_n}v{cand_n} (projected)"],
                rows,
            )
        )
    )
    print(
        f"projection: {within} of {len(rows)} benchmarks would have device time gateable at MDE <= 5% with a "
        f"{base_n}-run baseline and {cand_n} candidate runs (noise pooled within {len(pools)} pools)"
    )
    print(
        "with more runs: "
        + ", ".join(f"{n} of {len(rows)} at {b}v{c}" for (b, c), n in designs.items())
        + " (the noise as measured, each design's own degrees of freedom)"
    )


def _device_ms(files: list[Path]) -> dict[str, float]:
    """Benchmark -> median over runs of its device-time median (ms)."""
    per: dict[str, list[float]] = {}
    for f in files:
        for b in json.loads(f.read_text()).get("benchmarks", ()):
            per.setdefault(b["fullname"], []).append(b["stats"]["median"] * 1e3)
    return {k: statistics.median(v) for k, v in per.items()}


def same(out: Path, folders: list[Path]) -> int:
    """The after runs judged against the before runs through ``aorta compare`` (the before runs are the
    baseline): exit code and verdict counts, then per benchmark device time before and after, the change,
    the verdict and the MDE. Exit 0 when nothing was judged SLOWER or FASTER (the ``same_figures`` proof)."""
    before = sorted(f for d in folders for f in d.rglob("before/*.json"))
    after = sorted(f for d in folders for f in d.rglob("after/*.json"))
    if not before or not after:
        print(f"need runs on both sides: {len(before)} before, {len(after)} after", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    doc = _compare(out, "after_vs_before", before, after)
    vs = verdicts(doc)
    counts = Counter(v["outcome"] for v in vs)
    print(
        f"after ({len(after)} runs) vs before ({len(before)} runs): exit {doc['exit_code']}, "
        + ", ".join(f"{o} {counts[o]}" for o in OUTCOMES)
    )
    ms_b, ms_a = _device_ms(before), _device_ms(after)
    rows = []
    for v in vs:
        if v["metric"] != DEVICE_TIME:
            continue
        b, c = ms_b.get(v["benchmark"]), ms_a.get(v["benchmark"])
        change = "-" if not (b and c) else f"{(c / b - 1) * 100:+.1f}%"
        mde_ = "-" if v.get("mde") is None else f"{v['mde'] * 100:.1f}%"
        rows.append([v["benchmark"].split("::")[-1], b, c, change, v["outcome"], mde_])
    print("\n".join(format_table(["benchmark", "before ms", "after ms", "change", "verdict", "MDE"], rows)))
    moved = [v for v in vs if v["outcome"] in ("SLOWER", "FASTER")]
    for v in moved:
        print(f"moved: {v['benchmark']} {v['metric']} {v['outcome']}")
    return 1 if moved else 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("phases")
    p.add_argument("pool", type=Path)
    j = sub.add_parser("judge")
    j.add_argument("out", type=Path)
    j.add_argument("pools", type=Path, nargs="+")
    j.add_argument("--base-runs", type=int, default=4)
    j.add_argument("--cand-runs", type=int, default=3)
    j.add_argument("--pairs", type=int, default=10)
    j.add_argument(
        "--base-pools",
        type=int,
        default=1,
        help="K > 1: each baseline is every run of K A/A pools (K machines), the candidate another pool",
    )
    s = sub.add_parser("same", help="the after runs against the before runs (a refactor): an A/A")
    s.add_argument("out", type=Path)
    s.add_argument("folders", type=Path, nargs="+", help="folders holding before/ and after/ runs")
    a = ap.parse_args(argv)
    if a.cmd == "phases":
        print("\n".join(phases(a.pool)))
        return 0
    if a.cmd == "same":
        return same(a.out, a.folders)
    return judge(a.out, find_pools(a.pools), a.base_runs, a.cand_runs, a.pairs, a.base_pools)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
