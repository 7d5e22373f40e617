"""Comparisons rendered as terminal lines, markdown (CI job summaries) and a JSON document (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aorta.exit_codes import (
    EXIT_CLEAN,
    EXIT_INCONCLUSIVE,
    EXIT_MEANINGS,
    EXIT_MISMATCH,
    EXIT_NOTHING_COMPARED,
    EXIT_REGRESSION,
)
from aorta.gate.causes.why_text import why_lines, why_markdown
from aorta.gate.comparison.compare import NOTHING_COMPARED, Comparison
from aorta.gate.verdicts.verdict import NOT_GATEABLE, SAME
from aorta.record.table import format_table

VERDICT_SCHEMA = 2  # 2: run-level verdicts (interval, MDE, runs used, not gateable)


def _v(value) -> str:
    return "n/a" if value is None else str(value)


def stack_line(comp: Comparison) -> str:
    parts = []
    for name, a, b in comp.stack:
        parts.append(f"{name} {_v(a)}" if a == b else f"{name} {_v(a)} -> {_v(b)}")
    return ", ".join(parts) if parts else "no software stack recorded"


def _paired_note(comp: Comparison) -> str:
    """What the compare paired (aorta.gate.runs.blocks): how many figures were judged within blocks, and at most how
    many pairs."""
    paired = [v.pairs for v in comp.verdicts if v.pairs]
    if not paired:
        return (
            f"; judged as independent runs, not paired: {comp.unpaired_reason}"
            if comp.unpaired_reason
            else ""
        )
    return (
        f"; paired by order seed, kind and selection: {len(paired)} of {len(comp.verdicts)} figures, "
        f"{max(paired)} pairs"
    )


def header_lines(comp: Comparison) -> list[str]:
    lines = [
        f"{comp.ref_label} -> {comp.cand_label}",
        f"machine: {comp.ref_machine}"
        if comp.ref_machine == comp.cand_machine
        else f"machine: {comp.ref_machine} -> {comp.cand_machine}",
        f"stack: {stack_line(comp)}",
        f"runs (the sample): baseline {comp.ref_runs}, this run {comp.cand_runs}"
        + (
            " (one baseline run: the noise between runs comes from this run's alone; save the baseline "
            "with --aorta-runs N)"
            if comp.ref_runs == 1
            else ""
        )
        + _paired_note(comp),
        f"gate: alpha {comp.settings.alpha:g}"
        + (
            f" shared by {comp.settings.looks} looks ({comp.settings.look_alpha:.2g} each: --aorta-runs auto)"
            if comp.settings.looks > 1
            else ""
        )
        + ", a figure is gateable where its MDE (the change caught with "
        f"probability {comp.settings.power:g}) is at most {comp.settings.max_mde * 100:.3g}%; minimum effect "
        f"{comp.settings.min_effect * 100:.3g}%; clean needs {comp.settings.min_judged * 100:.3g}% of the "
        "figures judged",
    ]
    if comp.env:
        lines.append("env differs: " + ", ".join(f"{k} {_v(a)} -> {_v(b)}" for k, a, b in comp.env))
    else:
        lines.append("env: same scheduling variables")
    if comp.mismatch:
        lines.append(
            f"HARDWARE MISMATCH: {comp.mismatch}"
            + (" (compared anyway: --aorta-allow-mismatch)" if comp.mismatch_allowed else "")
        )
    if comp.test_slowdown:
        lines.append(
            f"TEST SLOWDOWN ACTIVE in this run (deliberate extra device or communication work, not a real result): "
            f"{len(comp.test_slowdown)} benchmark(s) at {sorted(set(comp.test_slowdown.values()))}"
        )
    for name, (asked, padded) in sorted(comp.slowdown_misses.items()):
        lines.append(
            f"TEST SLOWDOWN NOT CALIBRATED: {name} asked {_pct(asked)}, padded {_pct(padded)} when calibration "
            "stopped (its rounds too noisy, or the padding not adding as its length): judge it at what it carries"
        )
    return lines


def _pct(r) -> str:
    return "n/a" if r is None else f"{r * 100:+.1f}%"


def _num(x) -> str:
    return "n/a" if x is None else f"{x:.4g}"


def _p(p) -> str:
    return "-" if p is None else f"{p:.2g}"


def short_name(fullname: str) -> str:
    """``benchmarks/hw_queue/test_x.py::test_x[streams1]`` -> ``test_x.py::test_x[streams1]``."""
    path, sep, rest = fullname.partition("::")
    return f"{path.rsplit('/', 1)[-1]}{sep}{rest}"


def factor_bound(factor: float) -> str:
    """One end of a change's interval, as new / old: ``+4.5%``; past 10x either way a factor (``x318``,
    ``x1/318``), as an interval widened by few degrees of freedom reads (2 machines' spread at alpha 0.002:
    t = 318; printed as a percentage it was ``-100.0% .. +4925207909171703316480.0%``)."""
    if factor >= 10.0:
        return f"x{factor:.3g}"
    if factor <= 0.1:
        return f"x1/{1.0 / factor:.3g}" if factor > 0.0 else "x0"
    return _pct(factor - 1.0)


def _interval(v) -> str:
    """The interval ``exp(d -+ w)`` of a change ``d`` (log): its low end from the high one where ``1 + ci_low``
    underflowed to 0 (``exp(-44.6)``)."""
    if v.ci_low is None or v.ci_high is None:
        return "n/a"
    low, high = 1.0 + v.ci_low, 1.0 + v.ci_high
    if low <= 0.0 and v.change_ratio is not None and high > 0.0:
        low = (1.0 + v.change_ratio) ** 2 / high
    return f"{factor_bound(low)} .. {factor_bound(high)}"


def _mde(v) -> str:
    return "n/a" if v.mde is None else f"{v.mde * 100:.2g}%"


def shown(comp: Comparison, *, all_rows: bool) -> list:
    """The verdicts with a row: all, or those that are not SAME (NOT_GATEABLE ones are listed apart)."""
    return [v for v in comp.verdicts if all_rows or (v.notable and v.outcome != NOT_GATEABLE)]


def verdict_rows(comp: Comparison, *, all_rows: bool) -> list[list[str]]:
    return [
        [
            short_name(v.benchmark),
            v.metric,
            f"{_num(v.ref_value)} {v.unit}".strip(),
            f"{_num(v.cand_value)} {v.unit}".strip(),
            _pct(v.change_ratio),
            _interval(v),
            _mde(v),
            f"{v.ref_runs}/{v.cand_runs}",
            _p(v.p_value),
            v.outcome,
        ]
        for v in shown(comp, all_rows=all_rows)
    ]


HEADERS = ["benchmark", "metric", "baseline", "this run", "change", "interval", "MDE", "runs", "p", "verdict"]


def not_gateable_lines(comp: Comparison) -> list[str]:
    out = []
    for v in comp.not_gateable():
        value = "" if v.cand_value is None else f" {_num(v.cand_value)} {v.unit}".rstrip()
        out.append(f"  {short_name(v.benchmark)} [{v.metric}]{value}, MDE {_mde(v)}: {v.reason}")
    return out


def terminal_lines(comp: Comparison, *, verbose: bool = False) -> list[str]:
    """Header, verdict table (SAME rows only when ``verbose`` or nothing else to show), reasons."""
    lines = header_lines(comp)
    if comp.refused:
        lines.append(f"refused: {comp.mismatch}; no verdicts (use --aorta-allow-mismatch to compare anyway)")
        return lines
    rows = verdict_rows(comp, all_rows=verbose)
    if rows:
        lines += [line.rstrip() for line in format_table(HEADERS, rows)]
    hidden = sum(not v.notable for v in comp.verdicts)
    if hidden and not verbose:
        lines.append(f"({hidden} SAME verdict(s) not shown; -v shows all)")
    for v in shown(comp, all_rows=verbose):
        lines.append(f"  {short_name(v.benchmark)} [{v.metric}]: {v.outcome}: {v.reason}")
    for name, why in comp.why.items():
        lines += [f"  why {short_name(name)} is {why['outcome']}:", *why_lines(why)]
    ng = not_gateable_lines(comp)
    if ng:
        lines.append(f"not gateable on this machine ({len(ng)}): reported, never SLOWER or FASTER")
        lines += ng
    lines += [f"not in baseline (new in this run): {n}" for n in comp.new]
    lines += [f"missing from this run (in the baseline): {n}" for n in comp.missing]
    lines.append(f"verdict: {comp.summary()} -> exit {comp.exit_code} ({EXIT_MEANINGS[comp.exit_code]})")
    return lines


def markdown(comps: Sequence[Comparison]) -> str:
    out = []
    for comp in comps:
        mark = {EXIT_CLEAN: ":white_check_mark:", EXIT_INCONCLUSIVE: ":grey_question:"}.get(
            comp.exit_code, ":red_circle:"
        )
        out.append(f"### aorta gate {mark} {comp.ref_label} → {comp.cand_label}\n")
        out.append(
            f"- machine: {comp.ref_machine}"
            + ("" if comp.ref_machine == comp.cand_machine else f" → {comp.cand_machine}")
        )
        out.append(f"- stack: {stack_line(comp).replace(' -> ', ' → ')}")
        if comp.env:
            out.append("- env differs: " + ", ".join(f"`{k}` {_v(a)} → {_v(b)}" for k, a, b in comp.env))
        if comp.test_slowdown:
            out.append(
                "- **test slowdown active**: deliberate extra device or communication work, not a real result"
            )
        out.append(f"- verdict: **{comp.summary()}** (exit {comp.exit_code})\n")
        if comp.refused:
            out.append(f"Refused: {comp.mismatch}.\n")
            continue
        rows = verdict_rows(comp, all_rows=False)
        if rows:
            out.append("| " + " | ".join(HEADERS + ["why"]) + " |")
            out.append("|" + "---|" * (len(HEADERS) + 1))
            reasons = [v.reason for v in shown(comp, all_rows=False)]
            for row, why in zip(rows, reasons):
                out.append("| " + " | ".join(c.replace("|", "\\|") for c in [*row, why]) + " |")
            out.append("")
            out += [why_markdown(f"`{short_name(n)}`", why) for n, why in comp.why.items()]
        elif comp.nothing_compared:
            out.append(f"**{NOTHING_COMPARED}**: no benchmark of this run is in the baseline.\n")
        else:
            out.append(f"All {comp.count(SAME)} gateable figures SAME.\n")
        ng = comp.not_gateable()
        if ng:
            out.append(f"<details><summary>Not gateable on this machine: {len(ng)}</summary>\n")
            out.append("| benchmark | metric | this run | MDE | why |")
            out.append("|---|---|---|---|---|")
            for v in ng:
                row = [
                    short_name(v.benchmark),
                    v.metric,
                    f"{_num(v.cand_value)} {v.unit}".strip(),
                    _mde(v),
                    v.reason,
                ]
                out.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
            out.append("\n</details>\n")
        for n in comp.new:
            out.append(f"- not in baseline (new in this run): `{n}`")
        for n in comp.missing:
            out.append(f"- missing from this run: `{n}`")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def verdict_document(comps: Sequence[Comparison], exit_code: int, *, budget: Mapping | None = None) -> dict:
    """The verdict JSON; ``budget``: where the gate's wall went (timed rounds, checks and passes, process start
    and collection, per run kind: ``aorta.gate.runs.run_wall.WallReport.as_dict``), None where it ran no runs."""
    return {
        "schema": VERDICT_SCHEMA,
        "exit_code": exit_code,
        "exit_meaning": EXIT_MEANINGS.get(exit_code, "see pytest's exit codes"),
        "budget": dict(budget) if budget is not None else None,
        "comparisons": [
            {
                "baseline": c.ref_label,
                "candidate": c.cand_label,
                "machine": {"baseline": c.ref_machine, "candidate": c.cand_machine},
                "stack": [{"name": n, "baseline": a, "candidate": b} for n, a, b in c.stack],
                "env_diff": [{"name": n, "baseline": a, "candidate": b} for n, a, b in c.env],
                "mismatch": c.mismatch,
                "refused": c.refused,
                "test_slowdown": c.test_slowdown,
                "test_slowdown_misses": {k: list(v) for k, v in c.slowdown_misses.items()},
                "summary": c.summary(),
                "exit_code": c.exit_code,
                "slower": c.slower_benchmarks(),
                "nothing_compared": c.nothing_compared,
                "compared": c.matched,
                "new": c.new,
                "missing": c.missing,
                "runs": {"baseline": c.ref_runs, "candidate": c.cand_runs},
                "settings": {
                    "alpha": c.settings.alpha,
                    "power": c.settings.power,
                    "max_mde": c.settings.max_mde,
                    "min_effect": c.settings.min_effect,
                    "looks": c.settings.looks,  # > 1: --aorta-runs auto, each look at alpha / looks
                    "look_alpha": c.settings.look_alpha,
                    "min_judged": c.settings.min_judged,
                },
                "judged": c.judged,
                "inconclusive": c.inconclusive,
                "not_gateable": [
                    {
                        "benchmark": v.benchmark,
                        "metric": v.metric,
                        "value": v.cand_value,
                        "mde": v.mde,
                        "reason": v.reason,
                    }
                    for v in c.not_gateable()
                ],
                "verdicts": [v.as_dict() for v in c.verdicts],
                "why": c.why,
            }
            for c in comps
        ],
    }


def overall_exit(comps: Sequence[Comparison]) -> int:
    codes = {c.exit_code for c in comps}
    for code in (EXIT_MISMATCH, EXIT_REGRESSION, EXIT_NOTHING_COMPARED, EXIT_INCONCLUSIVE):
        if code in codes:
            return code
    return EXIT_CLEAN
