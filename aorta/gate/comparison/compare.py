"""Compare two runs (pytest-benchmark JSON dicts written with aorta's extra_info): pure, no torch.

Benchmarks are matched by pytest-benchmark's ``fullname`` (the test's node id, built from the
workload's stable parameter ids). Each matched benchmark gets one verdict for device time and one
per metric in its run record (aorta.record); benchmarks found on one side only are listed, never dropped.
"""

from __future__ import annotations

import fnmatch
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from aorta.exit_codes import (
    EXIT_CLEAN,
    EXIT_INCONCLUSIVE,
    EXIT_MISMATCH,
    EXIT_NOTHING_COMPARED,
    EXIT_REGRESSION,
)
from aorta.gate.causes.why import explain
from aorta.gate.runs.blocks import why_unpaired
from aorta.gate.stats.samples import baseline_runs, run_blocks, run_ids, run_machines
from aorta.gate.verdicts.verdict import (
    DEFAULT_ALPHA,
    DEFAULT_MIN_EFFECT,
    DEFAULT_MIN_SAMPLES,
    FASTER,
    NOT_GATEABLE,
    SAME,
    SLOWER,
    UNSURE,
    Policy,
    Verdict,
    control_false_alarms,
    decide,
    measures_the_host,
    part_bound,
)
from aorta.record import record_of
from aorta.record.bench import HOST_CLOCK
from aorta.record.machines import aorta_machine, machine_label
from aorta.record.run_samples import (
    DEVICE_TIME,
    device_samples_ms,
    figures,
    metric_samples,
    per_round_figures,
)
from aorta.record.run_set import RunSet, read_runs
from aorta.stats.noise import DEFAULT_MAX_MDE, DEFAULT_POWER, run_value
from aorta.stats.option_values import parse_ratio

__all__ = ["DEVICE_TIME", "aorta_machine", "device_samples_ms", "figures", "machine_label", "metric_samples"]

NOTHING_COMPARED = "NOTHING COMPARED"
INCONCLUSIVE = "INCONCLUSIVE"
DEFAULT_MIN_JUDGED = 0.5  # a compare that judged fewer than half its figures is inconclusive, not clean
STACK_KEYS = ("driver", "cuda", "hip", "torch", "nccl", "rccl")


@dataclass(frozen=True)
class Threshold:
    benchmark_glob: str
    metric_glob: str
    min_effect: float


@dataclass(frozen=True)
class GateSettings:
    """How verdicts are decided. ``min_effect`` and ``thresholds`` are policy (the smallest change worth a
    red; later rules win; globs match fullname and metric); the noise each figure must beat is measured
    (its MDE, ``aorta.stats.noise``), and ``max_mde`` bounds which figures are gateable."""

    min_effect: float = DEFAULT_MIN_EFFECT
    alpha: float = DEFAULT_ALPHA
    min_samples: int = DEFAULT_MIN_SAMPLES
    max_mde: float = DEFAULT_MAX_MDE
    power: float = DEFAULT_POWER
    thresholds: tuple[Threshold, ...] = ()
    allow_mismatch: bool = False
    # The looks of a sequential gate (--aorta-runs auto, aorta.gate.stats.sequential): each tests at alpha / looks.
    looks: int = 1
    min_judged: float = DEFAULT_MIN_JUDGED  # below this share of figures judged: inconclusive (exit 15)

    @property
    def look_alpha(self) -> float:
        """The level each test runs at: ``alpha``, shared by the looks of a sequential gate."""
        return self.alpha / self.looks

    def min_effect_for(self, benchmark: str, metric: str) -> float:
        """The run's minimum effect, or the last user rule matching this benchmark and figure."""
        value = self.min_effect
        for t in self.thresholds:
            if fnmatch.fnmatchcase(metric, t.metric_glob) and _bench_matches(benchmark, t.benchmark_glob):
                value = t.min_effect
        return value

    def policy_for(self, benchmark: str, metric: str) -> Policy:
        return Policy(
            alpha=self.look_alpha,
            power=self.power,
            max_mde=self.max_mde,
            min_effect=self.min_effect_for(benchmark, metric),
            min_samples=self.min_samples,
        )


def _bench_matches(fullname: str, glob: str) -> bool:
    if glob == "*":
        return True
    return fnmatch.fnmatchcase(fullname, glob) or fnmatch.fnmatchcase(fullname, f"*{glob}*")


def parse_threshold(text: str) -> Threshold:
    """``[BENCHMARK_GLOB:]METRIC_GLOB=RATIO``, e.g. ``tflops=0.05``, ``*large_gemm*:device_ms=5%``."""
    lhs, sep, rhs = str(text).rpartition("=")
    if not sep or not lhs:
        raise ValueError(
            f"--aorta-threshold={text!r}: expected [BENCHMARK_GLOB:]METRIC=RATIO, "
            "e.g. tflops=0.05 or *large_gemm*:device_ms=5%"
        )
    bench, _, metric = lhs.rpartition(":") if ":" in lhs else ("*", "", lhs)
    return Threshold(bench or "*", metric, parse_ratio("--aorta-threshold", rhs))


# ------------------------------------------------------------------------------------------ stacks
def mismatch_reason(ref: Mapping, cand: Mapping) -> str | None:
    """Why the two runs are on different hardware (backend or GPU model) or ran a benchmark on a different
    number of ranks (an FSDP step on 2 ranks is not the same work as on 4), or None."""
    a, b = aorta_machine(ref), aorta_machine(cand)
    for key, what in (("backend", "backend"), ("gpu_name", "GPU model")):
        if a.get(key) != b.get(key):
            return f"{what} differs: baseline {a.get(key)!r}, this run {b.get(key)!r}"
    return world_size_change(ref, cand)


def world_size_change(ref: Mapping, cand: Mapping) -> str | None:
    """Why a benchmark of ``cand`` is not the same work as in ``ref`` (it ran on another number of ranks), or
    None: runs on different world sizes are never compared, nor saved into one baseline."""
    ws_ref, ws_cand = _world_sizes(ref), _world_sizes(cand)
    for name in sorted(set(ws_ref) & set(ws_cand)):
        if ws_ref[name] != ws_cand[name]:
            return (
                f"world size differs: {name.split('::')[-1]} ran on {ws_ref[name]} rank(s) in the baseline, "
                f"{ws_cand[name]} in this run (save one baseline per world size)"
            )
    return None


def _world_sizes(doc: Mapping) -> dict[str, object]:
    """fullname -> the ranks a benchmark ran on, where its record says (the FSDP suite, fsdp_tp)."""
    out = {}
    for b in doc.get("benchmarks", ()):
        ws = (b.get("extra_info") or {}).get("world_size")
        if ws is not None:
            out[b["fullname"]] = ws
    return out


def stack_diff(ref: Mapping, cand: Mapping) -> list[tuple[str, object, object]]:
    """(name, baseline, candidate) for each part of the software stack either side records."""
    a, b = aorta_machine(ref), aorta_machine(cand)
    rows = []
    for key in STACK_KEYS:
        if a.get(key) is not None or b.get(key) is not None:
            rows.append((key, a.get(key), b.get(key)))
    pa = (ref.get("machine_info") or {}).get("python_version")
    pb = (cand.get("machine_info") or {}).get("python_version")
    if pa or pb:
        rows.append(("python", pa, pb))
    if a.get("gpu_count") != b.get("gpu_count"):
        rows.append(("gpu_count", a.get("gpu_count"), b.get("gpu_count")))
    return rows


def env_diff(ref: Mapping, cand: Mapping) -> list[tuple[str, str | None, str | None]]:
    """(variable, baseline, candidate) for scheduling env vars and queue settings that differ."""
    a, b = aorta_machine(ref), aorta_machine(cand)
    ea = {**(a.get("env") or {}), **(a.get("hardware_queues") or {})}
    eb = {**(b.get("env") or {}), **(b.get("hardware_queues") or {})}
    return [(k, ea.get(k), eb.get(k)) for k in sorted(set(ea) | set(eb)) if ea.get(k) != eb.get(k)]


def deliberate_slowdowns(run: Mapping) -> dict[str, float]:
    """fullname -> the deliberate test slowdown recorded in a run (must never pass for a real result)."""
    return {
        b["fullname"]: record_of(b).get("test_slowdown")
        for b in run.get("benchmarks", ())
        if record_of(b).get("test_slowdown")
    }


def slowdown_misses(run: Mapping) -> dict[str, tuple[float | None, float | None]]:
    """fullname -> (asked, padded) for the deliberate slowdowns whose calibration did not land on the fraction
    asked (``calibration_outcome`` missed): the padding those benchmarks carry is not the one the run names."""
    misses = {}
    for b in run.get("benchmarks", ()):
        info = record_of(b).get("test_slowdown_info") or {}
        if info.get("calibration_outcome") == "missed":
            misses[b["fullname"]] = (info.get("requested_ratio"), info.get("calibrated_ratio"))
    return misses


# ------------------------------------------------------------------------------------------ compare
@dataclass
class Comparison:
    ref_label: str
    cand_label: str
    ref_machine: str
    cand_machine: str
    verdicts: list[Verdict] = field(default_factory=list)
    matched: list[str] = field(default_factory=list)  # in both: the benchmarks that were judged
    new: list[str] = field(default_factory=list)  # in this run only ("not in baseline")
    missing: list[str] = field(default_factory=list)  # in the baseline only
    stack: list[tuple[str, object, object]] = field(default_factory=list)
    env: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    mismatch: str | None = None
    mismatch_allowed: bool = False
    test_slowdown: dict[str, float] = field(default_factory=dict)
    slowdown_misses: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    ref_runs: int = 1  # fresh-process runs the baseline holds
    cand_runs: int = 1  # fresh-process runs of the candidate (confirmation runs not counted)
    settings: GateSettings = field(default_factory=lambda: GateSettings())
    # per moved benchmark: its kernel diff and causes (aorta/gate/causes/why.py)
    why: dict[str, dict] = field(default_factory=dict)
    unpaired_reason: str | None = None  # why the runs were judged as independent (aorta.gate.runs.blocks)

    @property
    def refused(self) -> bool:
        return self.mismatch is not None and not self.mismatch_allowed

    def count(self, outcome: str) -> int:
        return sum(v.outcome == outcome for v in self.verdicts)

    @property
    def nothing_compared(self) -> bool:
        return not self.refused and not self.matched

    @property
    def exit_code(self) -> int:
        if self.refused:
            return EXIT_MISMATCH
        if self.nothing_compared:
            return EXIT_NOTHING_COMPARED
        if self.count(SLOWER):
            return EXIT_REGRESSION
        return EXIT_INCONCLUSIVE if self.inconclusive else EXIT_CLEAN

    @property
    def judged(self) -> int:
        """Figures with a decision: SLOWER, FASTER or SAME (not NOT_GATEABLE, not UNSURE)."""
        return sum(self.count(o) for o in (SLOWER, FASTER, SAME))

    @property
    def inconclusive(self) -> bool:
        """Judged fewer than ``min_judged`` of its figures (none at all, whatever the share)."""
        total = len(self.verdicts)
        return not self.judged or (total > 0 and self.judged < self.settings.min_judged * total)

    def summary(self) -> str:
        if self.refused:
            return f"refused: {self.mismatch} (use --aorta-allow-mismatch to compare anyway)"
        if self.nothing_compared:
            return (
                f"{NOTHING_COMPARED}: none of the {len(self.new)} benchmark(s) of {self.cand_label} is in "
                f"the baseline ({len(self.missing)} there)"
            )
        parts = [f"{self.count(o)} {o}" for o in (SLOWER, FASTER, SAME, UNSURE, NOT_GATEABLE)]
        extra = []
        if self.new:
            extra.append(f"{len(self.new)} not in baseline")
        if self.missing:
            extra.append(f"{len(self.missing)} missing")
        text = ", ".join(parts + extra)
        if self.inconclusive and not self.count(SLOWER):
            text += (
                f"; {INCONCLUSIVE}: judged {self.judged} of {len(self.verdicts)} figures, under the "
                f"{self.settings.min_judged * 100:.3g}% it needs to call the run clean (--aorta-min-judged)"
            )
        return text

    def slower_benchmarks(self) -> list[str]:
        return list(dict.fromkeys(v.benchmark for v in self.verdicts if v.outcome == SLOWER))

    def not_gateable(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.outcome == NOT_GATEABLE]

    def suspects(self) -> list[str]:
        """Benchmarks a confirmation should run again: a SLOWER verdict, or an UNSURE in the bad direction;
        not one judged on paired runs (``aorta.gate.runs.blocks``): a confirmation run of a few benchmarks has no
        partner in the baseline, so it would be left out of that verdict."""
        return list(
            dict.fromkeys(
                v.benchmark
                for v in self.verdicts
                if not v.pairs
                and (
                    v.outcome == SLOWER
                    or (
                        v.outcome == UNSURE
                        and v.change_ratio is not None
                        and v.p_value is not None
                        and (v.change_ratio > 0) != v.higher_is_better
                    )
                )
            )
        )


def _by_name(doc: Mapping) -> dict[str, Mapping]:
    return {b["fullname"]: b for b in doc.get("benchmarks", ())}


def compare_runs(
    ref: Mapping | RunSet,
    cand: Mapping | RunSet,
    settings: GateSettings = GateSettings(),
    *,
    ref_label: str = "baseline",
    cand_label: str = "this run",
    extra_runs: Sequence[Mapping | RunSet] = (),
    extra_ids: Sequence[str] = (),
) -> Comparison:
    """Every figure of every benchmark in both, baseline runs against candidate runs. ``cand`` may hold
    several runs (``aorta_runs``); ``extra_runs``: confirmation runs (documents of a few benchmarks each),
    added to the candidate's runs of the benchmarks they hold; ``extra_ids`` names them (default
    ``confirm1``..). Each document may come as its ``RunSet`` (``aorta.record.run_set.read_runs``); its runs
    are read once either way, and every question below (ids, samples, machines, blocks, evidence) takes them."""
    ref_set, cand_set = read_runs(ref), read_runs(cand)
    extra_sets = [read_runs(doc) for doc in extra_runs]
    ref_doc, cand_doc = ref_set.doc, cand_set.doc
    comp = Comparison(
        ref_label,
        cand_label,
        machine_label(ref_doc),
        machine_label(cand_doc),
        stack=stack_diff(ref_doc, cand_doc),
        env=env_diff(ref_doc, cand_doc),
        mismatch=mismatch_reason(ref_doc, cand_doc),
        mismatch_allowed=settings.allow_mismatch,
        test_slowdown=deliberate_slowdowns(cand_doc),
        slowdown_misses=slowdown_misses(cand_doc),
        settings=settings,
    )
    ref_by_name, cand_by_name = _by_name(ref_doc), _by_name(cand_doc)
    comp.missing = [n for n in ref_by_name if n not in cand_by_name]
    comp.new = [n for n in cand_by_name if n not in ref_by_name]
    comp.matched = [n for n in cand_by_name if n in ref_by_name]
    if comp.refused:
        return comp
    ref_runs = baseline_runs(ref_set)
    ref_machines = run_machines(ref_set)
    cand_runs = list(zip(run_ids(cand_set), baseline_runs(cand_set)))
    cand_machines = run_machines(cand_set)
    ref_blocks, cand_blocks = run_blocks(ref_set), run_blocks(cand_set)
    for i, rs in enumerate(extra_sets):
        rid = extra_ids[i] if i < len(extra_ids) else f"confirm{i + 1}"
        cand_runs += [(rid, r) for r in baseline_runs(rs)]
        cand_machines += run_machines(rs)
        cand_blocks += run_blocks(rs)
    comp.ref_runs, comp.cand_runs = len(ref_runs), len(cand_set.runs)
    if comp.ref_runs > 1 and comp.cand_runs > 1:
        comp.unpaired_reason = why_unpaired(ref_blocks, cand_blocks)
    for name in comp.matched:
        comp.verdicts.extend(
            benchmark_verdicts(
                name,
                ref_by_name[name],
                cand_by_name[name],
                settings,
                ref_runs,
                cand_runs,
                machines=(ref_machines, cand_machines),
                gpu_model=str(aorta_machine(ref_doc).get("gpu_name") or ""),
                blocks=(ref_blocks, cand_blocks),
            )
        )
    comp.verdicts = control_false_alarms(comp.verdicts, settings.look_alpha)
    comp.why = explain(comp.verdicts, ref_set, cand_set, extra_sets)
    return comp


def benchmark_verdicts(
    name: str,
    ref_bench: Mapping,
    cand_bench: Mapping,
    settings: GateSettings,
    ref_runs: Sequence[Mapping[str, Mapping[str, list[float]]]],
    cand_runs: Sequence[tuple[str, Mapping[str, Mapping[str, list[float]]]]],
    machines: tuple[Sequence[str], Sequence[str]] = ((), ()),
    gpu_model: str = "",
    blocks: tuple[Sequence[str | None], Sequence[str | None]] = ((), ()),
) -> list[Verdict]:
    """Verdicts for every figure present on both sides, from the runs that hold it. No false-alarm
    control here: ``compare_runs`` applies it over the whole comparison. ``machines``: the machine of each
    baseline run and of each candidate run (``run_machines``), in the same order; ``gpu_model``: the
    baseline's, whose measured machine spread judges a candidate on another machine than a one-machine
    baseline (``aorta.gate.verdicts.machine_rule``); ``blocks``: the block of each run (``run_blocks``, same order), on
    which the runs are paired where both sides name them (``aorta.gate.runs.blocks``)."""
    ref_m = list(machines[0]) if len(machines[0]) == len(ref_runs) else [""] * len(ref_runs)
    cand_m = list(machines[1]) if len(machines[1]) == len(cand_runs) else [""] * len(cand_runs)
    ref_b = list(blocks[0]) if len(blocks[0]) == len(ref_runs) else [None] * len(ref_runs)
    cand_b = list(blocks[1]) if len(blocks[1]) == len(cand_runs) else [None] * len(cand_runs)
    rf, cf = figures(ref_bench), figures(cand_bench)
    per_round = per_round_figures(cand_bench)
    record = record_of(cand_bench)
    notes = record.reading_notes
    out = []
    for metric, (unit, hib, _) in cf.items():
        if metric not in rf:
            continue
        ref_held = [
            (r[name][metric], m, b)
            for r, m, b in zip(ref_runs, ref_m, ref_b)
            if name in r and r[name].get(metric)
        ]
        ref = [s for s, _, _ in ref_held]
        held = [
            (rid, r[name][metric], m, b)
            for (rid, r), m, b in zip(cand_runs, cand_m, cand_b)
            if name in r and r[name].get(metric)
        ]
        policy = settings.policy_for(name, metric)
        part = record.metrics.get(metric)
        if part is not None and part.part_of_step and ref:
            steps = [r[name][DEVICE_TIME] for r in ref_runs if name in r and r[name].get(DEVICE_TIME)]
            if steps:
                bound, why = part_bound(policy.max_mde, _median_run(ref), _median_run(steps))
                policy = replace(policy, max_mde=bound, bound_note=why)
        out.append(
            decide(
                name,
                metric,
                unit,
                hib,
                ref,
                [s for _, s, _, _ in held],
                policy=policy,
                per_round=metric in per_round,
                cand_run_ids=[rid for rid, _, _, _ in held],
                hint=next((n for n in notes if measures_the_host(n)), notes[0] if notes else ""),
                timed_on_host=record.clock == HOST_CLOCK,
                ref_machines=[m for _, m, _ in ref_held],
                cand_machines=[m for _, _, m, _ in held],
                gpu_model=gpu_model,
                ref_blocks=[b for _, _, b in ref_held],
                cand_blocks=[b for _, _, _, b in held],
            )
        )
    for metric in rf:
        if metric not in cf:
            unit, hib, _ = rf[metric]
            out.append(Verdict(name, metric, unit, hib, UNSURE, "recorded in the baseline, not in this run"))
    return out


def _median_run(runs: Sequence[Sequence[float]]) -> float:
    """The median of the runs' figures (each run's median of its samples)."""
    return statistics.median(run_value(r) for r in runs)
