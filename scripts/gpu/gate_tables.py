"""The gate's tables: compares read back from their verdict JSON (counts, device time per benchmark, noise
and MDE, catch rates), why each moved verdict moved, and the offline judge's tables. Pure: JSON in, lines out."""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from pathlib import Path

from aorta.record.table import format_table

OUTCOMES = ("SLOWER", "FASTER", "SAME", "UNSURE", "NOT_GATEABLE")


def _pct(x) -> str:
    return "-" if x is None else f"{x * 100:+.1f}%"


def _compares(work: Path) -> list[tuple[str, dict, str]]:
    rows = []
    steps = dict(line.split("\t")[0:3:2] for line in _steps(work))
    for vj in sorted(work.glob("*.verdict.json")):
        label = vj.name.removesuffix(".verdict.json")
        rows.append((label, json.loads(vj.read_text()), steps.get(label, "?")))
    return rows


def _steps(work: Path) -> list[str]:
    tsv = work / "steps.tsv"
    return tsv.read_text().splitlines() if tsv.is_file() else []


def gate_compares(work: Path, knobs) -> list[str]:
    """Each compare's exit code and verdict counts; device time per benchmark (the baseline's between-run
    noise and MDE, each compare's change and verdict); benchmarks gateable at 5%, and each compare's catch."""
    compares = _compares(work)
    profiles: dict[str, dict] = {}
    for b in sorted(work.rglob("baselines/*/*.json")):  # this call's, or one carried in as input
        profiles.update(json.loads(b.read_text())["aorta_baseline"]["noise_profile"]["figures"])
    outcomes = OUTCOMES
    t1 = []
    for label, doc, wall in compares:
        c = doc["comparisons"][0]
        counts = Counter(v["outcome"] for v in c["verdicts"])
        runs = f"{c['runs']['baseline']}/{c['runs']['candidate']}"
        t1.append([label, doc["exit_code"], *(counts[o] for o in outcomes), runs, wall])
    lines = format_table(["compare", "exit", *outcomes, "runs", "wall s"], t1) + [""]
    verdicts = {label: doc["comparisons"][0]["verdicts"] for label, doc, _ in compares}
    benches = sorted({v["benchmark"] for vs in verdicts.values() for v in vs} | set(profiles))
    t2, gateable5 = [], 0
    for b in benches:
        prof = (profiles.get(b) or {}).get("device_ms") or {}
        cells = []
        for vs in verdicts.values():
            v = next((v for v in vs if v["benchmark"] == b and v["metric"] == "device_ms"), None)
            cells.append("-" if v is None else f"{_pct(v['change_ratio'])} {v['outcome'][:4]}")
        mde = prof.get("mde")
        gateable5 += mde is not None and mde <= 0.05
        noise = f"{(prof.get('sigma_log') or 0) * 100:.2f}%"
        t2.append([b.split("::")[-1], noise, "-" if mde is None else f"{mde * 100:.1f}%", *cells])
    lines += format_table(["benchmark (device_ms)", "noise", "MDE@3", *verdicts], t2) + [""]
    lines.append(f"benchmarks with a gateable device-time figure (MDE <= 5%): {gateable5} of {len(benches)}")
    for label, vs in verdicts.items():
        dev = [v for v in vs if v["metric"] == "device_ms"]
        gate = [v for v in dev if v["outcome"] != "NOT_GATEABLE"]
        slower = sum(v["outcome"] == "SLOWER" for v in gate)
        every = sum(v["outcome"] == "SLOWER" for v in vs)
        lines.append(
            f"{label}: device time SLOWER on {slower} of {len(gate)} gateable ({len(dev)} benchmarks); "
            f"SLOWER verdicts over all figures: {every}"
        )
    return lines


KERNEL_SELECTION = "kernel_selection"


def moved(path: Path) -> dict[str, dict]:
    """``{benchmark: why}`` over every comparison of one verdict file ({} when the file is missing)."""
    if not path.exists():
        return {}
    doc = json.loads(path.read_text(encoding="utf-8"))
    return {name: why for c in doc.get("comparisons", ()) for name, why in (c.get("why") or {}).items()}


def why_checks(work: Path, knobs) -> list[str]:
    """Each moved benchmark's causes, then the proof's checks: forcing TF32 swaps the fp32 GEMM's kernel
    (kernel_selection names old and new), the calibrated slowdown is SLOWER and names no kernel_selection."""
    whys = {step: moved(work / f"{step}.verdict.json") for step in ("tf32", "cublaslt", "slowdown")}
    lines = []
    for step, found in whys.items():
        lines.append(f"{step}: {len(found)} moved benchmark(s)")
        for name, why in found.items():
            lines.append(f"  {name.split('::')[-1]}: {why['outcome']}")
            lines += [f"    {c['cause']}: {c['summary']}" for c in why["causes"]]
    swapped = [
        c
        for n, w in whys["tf32"].items()
        if "fp32" in n
        for c in w["causes"]
        if c["cause"] == KERNEL_SELECTION
    ]
    slow = whys["slowdown"].values()
    checks = {
        "tf32: the fp32 GEMM moved with kernel_selection naming old and new kernels": bool(swapped)
        and all(c["evidence"]["baseline_kernels"] and c["evidence"]["candidate_kernels"] for c in swapped),
        "slowdown: something moved (SLOWER)": any(w["outcome"] == "SLOWER" for w in slow),
        "slowdown: no kernel_selection named": not any(
            c["cause"] == KERNEL_SELECTION for w in slow for c in w["causes"]
        ),
    }
    return lines + [f"{'PASS' if ok else 'FAIL'}: {what}" for what, ok in checks.items()]


def verdict_lines(*labels: str):
    """Per compare, its exit code and the lines of its log that carry verdicts."""

    def table(work: Path, knobs) -> list[str]:
        lines = []
        for label in labels:
            log = work / f"{label}.log"
            text = log.read_text().splitlines() if log.is_file() else []
            lines.append(f"== {label}")
            lines += [x for x in text if any(w in x for w in ("::", "SLOWER", "FASTER", "gateable"))][:60]
        return lines

    return table


# -- the offline judge (scripts/gpu/pools.py) -----------------------------------------------------------


def verdicts(doc: dict) -> list[dict]:
    return doc["comparisons"][0]["verdicts"]


def few_benchmark_lines(compares: list[tuple[str, dict]]) -> list[str]:
    """Where a compare judges few benchmarks (the FSDP baseline scenario), every figure's verdict."""
    out: list[str] = []
    for kind, d in compares:
        vs = verdicts(d)
        if len({v["benchmark"] for v in vs}) > 3:
            continue
        out.append(f"{d['_label']} ({kind}, exit {d['exit_code']}):")
        for v in vs:
            mde = "-" if v.get("mde") is None else f"{v['mde'] * 100:.1f}%"
            ch = "-" if v.get("change_ratio") is None else f"{v['change_ratio'] * 100:+.1f}%"
            out.append(f"  {v['benchmark'].split('::')[-1]} {v['metric']}: {v['outcome']} {ch} (MDE {mde})")
        for name, why in (d["comparisons"][0].get("why") or {}).items():  # the causes of each moved benchmark
            for c in why.get("causes", ()):
                out.append(f"  why {name.split('::')[-1]} {why['outcome']}: {c['cause']}: {c['summary']}")
    return out


def compare_tables(compares: list[tuple[str, dict]]) -> list[str]:
    """Each compare's machines, runs, exit code and verdict counts; device time per benchmark in each; A/A
    false verdicts and each slowdown's catch rate among the gateable device times."""
    out: list[str] = []
    t1 = []
    for kind, doc in compares:
        c = Counter(v["outcome"] for v in verdicts(doc))
        t1.append(
            [
                doc["_label"],
                kind,
                "->".join(doc["_machines"]),
                ",".join(doc["_base"]),
                ",".join(doc["_cand"]),
                str(doc["exit_code"]),
                *(str(c[o]) for o in OUTCOMES),
            ]
        )
    out += format_table(
        ["compare", "kind", "machines", "baseline runs", "candidate runs", "exit", *OUTCOMES], t1
    )
    out.append("")
    benches = sorted({v["benchmark"] for _, d in compares for v in verdicts(d) if v["metric"] == "device_ms"})
    t2 = []
    for b in benches:
        cells, mdes = [], []
        for _, d in compares:
            v = next((v for v in verdicts(d) if v["benchmark"] == b and v["metric"] == "device_ms"), None)
            if v is None:
                cells.append("-")
                continue
            if v.get("mde") is not None:
                mdes.append(v["mde"])
            ch = v.get("change_ratio")
            cells.append(("-" if ch is None else f"{ch * 100:+.1f}%") + " " + v["outcome"][:4])
        mde = f"{statistics.median(mdes) * 100:.1f}%" if mdes else "-"
        t2.append([b.split("::")[-1], mde, *cells])
    out += format_table(["benchmark (device_ms)", "MDE (median)", *[d["_label"] for _, d in compares]], t2)
    out.append("")
    aa = [d for k, d in compares if k == "A/A"]
    clean = sum(d["exit_code"] == 0 and not any(v["outcome"] == "SLOWER" for v in verdicts(d)) for d in aa)
    unsure = sum(d["exit_code"] == 15 and not any(v["outcome"] == "SLOWER" for v in verdicts(d)) for d in aa)
    false_slower = sum(v["outcome"] == "SLOWER" for d in aa for v in verdicts(d))
    false_faster = sum(v["outcome"] == "FASTER" for d in aa for v in verdicts(d))
    out.append(
        f"A/A: {clean + unsure} of {len(aa)} pairs with 0 SLOWER ({clean} exit 0, {unsure} exit 15 inconclusive); "
        f"SLOWER verdicts in all: {false_slower}, FASTER: {false_faster}"
    )
    for kind, d in compares:
        if kind == "A/A":
            continue
        dev = [v for v in verdicts(d) if v["metric"] == "device_ms"]
        gate = [v for v in dev if v["outcome"] != "NOT_GATEABLE"]
        mde5 = [v for v in gate if v.get("mde") is not None and v["mde"] <= 0.05]
        caught = sum(v["outcome"] == "SLOWER" for v in gate)
        out.append(
            f"{kind} ({d['_label']}): exit {d['exit_code']}; {len(dev)} benchmarks; gateable device time "
            f"{len(gate)} ({len(mde5)} with MDE <= 5%, {len(mde5) / max(len(dev), 1) * 100:.0f}%); "
            f"SLOWER on {caught} of {len(gate)} gateable ({caught / max(len(gate), 1) * 100:.0f}%)"
        )
    return out


# -- issue 36: the gate with power (auto runs, lean repeats, one-machine baselines elsewhere, aorta ab) --------

RUN_LINE = re.compile(
    r"(?:aorta gate: run \d+/auto|aorta gate: check run|aorta ab: \w+ run \d+)( \(lean\))?[^:]*: ok in ([\d.]+) s"
)


def walls(log: Path) -> tuple[list[float], list[float]]:
    full, lean = [], []
    if log.is_file():
        for m in RUN_LINE.finditer(log.read_text(errors="replace")):
            (lean if m.group(1) else full).append(float(m.group(2)))
    return full, lean


def describe(name: str, doc: dict, log: Path) -> list[str]:
    comp = doc["comparisons"][0]
    vs = comp["verdicts"]
    n = len(vs)
    outcomes = {
        o: sum(v["outcome"] == o for v in vs) for o in ("SLOWER", "FASTER", "SAME", "UNSURE", "NOT_GATEABLE")
    }
    judged = outcomes["SLOWER"] + outcomes["FASTER"] + outcomes["SAME"]
    mde5 = sum(v.get("mde") is not None and v["mde"] <= 0.05 for v in vs)
    mde2 = sum(v.get("mde") is not None and v["mde"] <= 0.02 for v in vs)
    full, lean = walls(log)
    out = [
        f"{name}: exit {doc['exit_code']}; runs {comp['runs']['baseline']} v {comp['runs']['candidate']}; "
        f"{n} figures: " + ", ".join(f"{v} {k}" for k, v in outcomes.items()),
        f"  judged {judged}/{n} ({judged / max(n, 1):.0%}); MDE <= 5%: {mde5}/{n} ({mde5 / max(n, 1):.0%}); "
        f"MDE <= 2%: {mde2}/{n} ({mde2 / max(n, 1):.0%})",
    ]
    if full or lean:
        out.append(
            f"  run walls: check or full {', '.join(f'{w:.0f}' for w in full) or 'none'} s; lean "
            + (
                f"{min(lean):.0f}-{max(lean):.0f} s (median {sorted(lean)[len(lean) // 2]:.0f}, {len(lean)} runs)"
                if lean
                else "none"
            )
        )
    if comp.get("test_slowdown"):
        asked = sorted(set(comp["test_slowdown"].values()))
        device = [v for v in vs if v["metric"] == "device_ms"]
        for label, picked in (
            ("MDE <= 2%", [v for v in device if v.get("mde") is not None and v["mde"] <= 0.02]),
            ("paired noise <= 0.5%", [v for v in device if (v.get("noise_sigma") or 1.0) <= 0.005]),
        ):
            caught = sum(v["outcome"] == "SLOWER" for v in picked)
            out.append(
                f"  slowdown {asked}: device time SLOWER on {caught}/{len(picked)} figures with {label}"
            )
        for name, (want, padded) in sorted((comp.get("test_slowdown_misses") or {}).items()):
            out.append(f"    not calibrated: {name.split('::')[-1]} asked {want:+.1%}, padded {padded:+.1%}")
    for v in vs:
        if v["outcome"] in ("SLOWER", "FASTER"):
            out.append(
                f"    {v['outcome']} {v['benchmark'].split('::')[-1]} [{v['metric']}] {v['reason'][:150]}"
            )
    return out


def gate_power(work: Path, knobs) -> list[str]:
    """Per compare (pytest gate or aorta ab): exit code, runs a side, figures judged, shares gateable at MDE
    <= 5% and <= 2%, full and lean run walls; for a slowdown, device time SLOWER among MDE <= 2% figures."""
    lines = _steps(work)
    for vj in sorted(work.glob("*.verdict.json")):
        name = vj.name.removesuffix(".verdict.json")
        try:
            lines += describe(name, json.loads(vj.read_text()), work / f"{name}.log")
        except (KeyError, ValueError, IndexError) as exc:
            lines.append(f"{name}: unreadable verdict ({exc})")
    for log in sorted(work.glob("*.log")):
        text = log.read_text(errors="replace").splitlines()
        said = [
            ln
            for ln in text
            if ln.startswith(
                (
                    "aorta gate: look",
                    "aorta gate: auto",
                    "aorta ab: look",
                    "baseline '",
                    "  ",
                    "aorta history",
                )
            )
        ]
        lines += [f"[{log.stem}] {ln[:200]}" for ln in said[-8:]]
    return lines


def pool_noise(work: Path, knobs) -> list[str]:
    """Fresh-process pools side by side (``<pool>-<k>.json``, pytest-benchmark JSON): per benchmark and pool,
    each run's device ms per iteration (median of its rounds) and the between-run SD of their logs."""
    import math

    runs: dict[tuple[str, str], list[float]] = {}
    for path in sorted(work.glob("*-[0-9]*.json")):
        pool = path.stem.rsplit("-", 1)[0]
        try:
            doc = json.loads(path.read_text())
        except ValueError as exc:
            runs.setdefault(("(unreadable)", pool), []).append(float("nan"))
            print(f"{path.name}: {exc}")
            continue
        for b in doc.get("benchmarks", ()):
            per = (b.get("extra_info") or {}).get("device_ms_per_iteration") or []
            if per:
                runs.setdefault((b["name"], pool), []).append(statistics.median(per))
    rows = []
    for (name, pool), vals in sorted(runs.items()):
        logs = [math.log(v) for v in vals if v > 0]
        sd = statistics.stdev(logs) if len(logs) > 1 else float("nan")
        rows.append([name, pool, str(len(vals)), f"{sd * 100:.1f}%", " ".join(f"{v:.4g}" for v in vals)])
    return format_table(["benchmark", "pool", "runs", "between-run SD", "device ms per run"], rows)
