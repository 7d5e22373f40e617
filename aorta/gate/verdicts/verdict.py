"""Run-level verdicts: one figure of one benchmark, the baseline's runs against the candidate's (pure).

The sample is the run (see ``aorta.stats.noise``): each run's figure is the median of its rounds, and the
gate compares the baseline's run figures with the candidate's on a log scale, with a two-sided Student t
test (pooled between-run noise, ``df = m + n - 2``; quantiles from ``scipy.stats``). Rounds only estimate
their own run's figure, so a process-to-process shift that a rounds-as-samples test would flag is, here,
just one more run.

Outcomes, in the order they are decided:

* UNSURE: nothing to compare (no runs on a side), or a per-round figure from a run with fewer than
  ``min_samples`` rounds ("too few samples").
* NOT_GATEABLE: the figure's minimum detectable effect (MDE, ``aorta.stats.noise.mde``) with these runs
  exceeds ``max_mde``, the between-run noise is unknown (one run on each side), or a value is not
  positive. Reported with its value and MDE, never SLOWER or FASTER. One exception: a change that is
  significant and at least the figure's own MDE (a change that size is found with probability ``power``:
  no coin toss) is judged SLOWER / FASTER, saying that smaller changes are not gateable here; not for a
  figure with a reading note (``hint``: host-bound, idle GPU), whose runs fall into modes by process and
  machine that a few runs do not show. On an H100, forcing TF32 made an fp32 GEMM 87% faster with an MDE
  of 9.8% (3 v 2 runs): NOT_GATEABLE before this.
* SAME: no change, a change the test does not find (the figure is gateable, so a change of its MDE or more
  would have been found with probability ``power``: a power-based SAME), or a significant change smaller
  than ``min_effect`` (a policy: the smallest change worth a red).
* UNSURE: not significant but suggestive (p below ``SUSPECT_P``): worth more runs (``--aorta-confirm``); or a
  SLOWER / FASTER of a figure that measures the host on fewer than ``min_samples`` runs in all (``decide``).
* SLOWER / FASTER: significant at ``alpha`` and at least ``min_effect``, in the figure's direction.

Across the many figures of one comparison, ``control_false_alarms`` (Benjamini-Hochberg over every tested
figure) turns a SLOWER / FASTER whose adjusted p reaches ``alpha`` into UNSURE.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from aorta.gate.runs.blocks import pair
from aorta.gate.stats.machine_noise import cross_machine, new_machines
from aorta.gate.stats.machine_spread import load_table, spread_for
from aorta.gate.verdicts.machine_rule import across_one_machine, machine_name, machines_named
from aorta.stats.noise import DEFAULT_MAX_MDE, DEFAULT_POWER, pooled_noise, run_value

FASTER, SLOWER, SAME, UNSURE, NOT_GATEABLE = "FASTER", "SLOWER", "SAME", "UNSURE", "NOT_GATEABLE"
OUTCOMES = (FASTER, SLOWER, SAME, UNSURE, NOT_GATEABLE)
DEFAULT_MIN_EFFECT = 0.01  # policy: a significant change under 1% is not worth a red
DEFAULT_ALPHA = 0.01
DEFAULT_MIN_SAMPLES = 5  # rounds a run needs for its median to be its figure
SUSPECT_P = 0.05  # not significant, but worth confirming with more runs


@dataclass(frozen=True)
class Policy:
    """How a figure is judged. ``alpha``: two-sided significance; ``power`` and ``max_mde``: a figure is
    gateable where a change of ``max_mde`` would be caught with probability ``power``."""

    alpha: float = DEFAULT_ALPHA
    power: float = DEFAULT_POWER
    max_mde: float = DEFAULT_MAX_MDE
    min_effect: float = DEFAULT_MIN_EFFECT
    min_samples: int = DEFAULT_MIN_SAMPLES
    bound_note: str = ""  # why max_mde is what it is, where it is not the run's (a part of the step)

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must be strictly between 0 and 1, got {self.alpha}")
        if not 0.5 <= self.power < 1.0:
            raise ValueError(f"power must be in [0.5, 1), got {self.power}")
        if self.min_effect < 0 or self.max_mde <= 0:
            raise ValueError(
                f"min_effect must be >= 0 and max_mde > 0, got {self.min_effect}, {self.max_mde}"
            )
        if self.min_samples < 1:
            raise ValueError(f"min_samples must be >= 1, got {self.min_samples}")


@dataclass(frozen=True)
class Verdict:
    """One figure of one benchmark, baseline runs vs candidate runs; ``sentence()`` says why."""

    benchmark: str
    metric: str
    unit: str
    higher_is_better: bool
    outcome: str
    reason: str
    ref_value: float | None = None  # geometric mean of the baseline's run figures
    cand_value: float | None = None  # geometric mean of the candidate's run figures
    change_ratio: float | None = None  # cand_value / ref_value - 1
    ci_low: float | None = None  # the change's (1 - alpha) interval, as ratios
    ci_high: float | None = None
    mde: float | None = None  # minimum detectable effect with these runs, on this machine
    noise_sigma: float | None = None  # between-run SD of the log run figures
    p_value: float | None = None
    p_adjusted: float | None = None  # after false-alarm control over every test of the comparison
    ref_runs: int = 0
    cand_runs: int = 0
    cand_run_ids: tuple[str, ...] = field(default=())  # which candidate runs the verdict used
    min_effect: float = DEFAULT_MIN_EFFECT
    pairs: int = (
        0  # blocks both sides hold, where the runs were judged paired (aorta.gate.runs.blocks); 0: unpaired
    )

    @property
    def notable(self) -> bool:
        """Worth a line of its own: anything but SAME."""
        return self.outcome != SAME

    @property
    def gateable(self) -> bool:
        return self.outcome != NOT_GATEABLE

    def sentence(self) -> str:
        return f"{self.benchmark} [{self.metric}]: {self.outcome}: {self.reason}"

    def with_outcome(self, outcome: str, reason: str) -> Verdict:
        return replace(self, outcome=outcome, reason=reason)

    def as_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["cand_run_ids"] = list(self.cand_run_ids)
        return d


def _pct(ratio: float) -> str:
    return f"{ratio * 100:+.2g}%" if abs(ratio) < 0.1 else f"{ratio * 100:+.3g}%"


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def decide(*args, timed_on_host: bool = False, **kwargs) -> Verdict:
    """The verdict for one figure (``_judge``, which takes the same arguments), then the host rule: a figure
    that measures the host (a reading note that says so, or ``timed_on_host``: the record's clock is the host's,
    every figure of a CPU run) is called SLOWER or FASTER only on ``policy.min_samples`` runs or more, both sides
    together. Such runs fall into modes by process (launch path, placement, clocks): two runs of one mode against
    two of another read as a change whose noise two runs a side cannot show (issue 65: an A/B that differed in two
    settings nothing reads was FASTER on CPU, 2 v 2 runs). Fewer: UNSURE with the test kept, so an auto gate adds
    runs."""
    v = _judge(*args, **kwargs)
    policy, hint = kwargs.get("policy", Policy()), kwargs.get("hint", "")
    runs = v.ref_runs + v.cand_runs
    if (
        v.outcome in (SLOWER, FASTER)
        and runs < policy.min_samples
        and (timed_on_host or measures_the_host(hint))
    ):
        what = "is timed by the host clock" if timed_on_host else "measures the host"
        return v.with_outcome(
            UNSURE,
            f"{v.reason}; but this figure {what} (it measures the host: its runs fall into modes by process): "
            f"{v.ref_runs} + {v.cand_runs} runs, a {v.outcome} needs {policy.min_samples} runs in all",
        )
    return v


def _judge(
    benchmark: str,
    metric: str,
    unit: str,
    higher_is_better: bool,
    ref_runs: Sequence[Sequence[float]],
    cand_runs: Sequence[Sequence[float]],
    *,
    policy: Policy = Policy(),
    per_round: bool = True,
    cand_run_ids: Sequence[str] = (),
    hint: str = "",
    ref_machines: Sequence[str] = (),
    cand_machines: Sequence[str] = (),
    gpu_model: str = "",
    spread_table: Mapping | None = None,
    ref_blocks: Sequence[str | None] = (),
    cand_blocks: Sequence[str | None] = (),
) -> Verdict:
    """The verdict for one figure from the baseline's runs and the candidate's runs (each a list of the
    run's samples). ``per_round``: the figure has one sample per round (a run needs ``min_samples``);
    otherwise one value per run. ``hint``: why the figure may be noisy, added to a NOT_GATEABLE reason.
    ``ref_machines`` / ``cand_machines``: the machine of each run (``aorta.record.machines.machine_id``);
    a candidate on a machine the baseline never saw is judged against the noise between machines too
    (``aorta.gate.stats.machine_noise``), or, where the baseline holds one machine, against the spread measured
    between ``gpu_model`` machines (``aorta.gate.verdicts.machine_rule``; ``spread_table``: the shipped one unless
    given). ``ref_blocks`` / ``cand_blocks``: each run's block (``aorta.gate.runs.blocks.block_key``); where every
    run names one and two or more blocks are shared, the figure is judged on the paired differences within
    blocks (a paired t test on log ratios, ``df = pairs - 1``) instead of as independent runs."""
    from scipy import stats as sps  # when used: its import costs every start 0.7 s

    rb = [b for r, b in zip(ref_runs, ref_blocks) if r] if len(ref_blocks) == len(ref_runs) else []
    cb = [b for r, b in zip(cand_runs, cand_blocks) if r] if len(cand_blocks) == len(cand_runs) else []
    rr = [list(r) for r in ref_runs if r]
    cr = [list(r) for r in cand_runs if r]
    rm = [m for r, m in zip(ref_runs, ref_machines) if r] if len(ref_machines) == len(ref_runs) else []
    cm = [m for r, m in zip(cand_runs, cand_machines) if r] if len(cand_machines) == len(cand_runs) else []
    base = Verdict(
        benchmark,
        metric,
        unit,
        higher_is_better,
        UNSURE,
        "",
        ref_runs=len(rr),
        cand_runs=len(cr),
        cand_run_ids=tuple(cand_run_ids),
        min_effect=policy.min_effect,
    )
    bad = [v for r in (*rr, *cr) for v in r if v is None or not math.isfinite(v)]
    if not rr or not cr or bad:
        what = "no baseline runs" if not rr else "no runs of this figure" if not cr else f"a value {bad[0]!r}"
        return base.with_outcome(UNSURE, f"cannot compare: {what}")
    if per_round:
        short = [
            (side, i + 1, len(r))
            for side, runs in (("baseline", rr), ("this", cr))
            for i, r in enumerate(runs)
        ]
        short = [s for s in short if s[2] < policy.min_samples]
        if short:
            side, i, k = short[0]
            return base.with_outcome(
                UNSURE, f"too few samples: {k} round(s) in {side} run {i}; a run needs {policy.min_samples}"
            )
    rv, cv = [run_value(r) for r in rr], [run_value(r) for r in cr]
    if any(v <= 0 for v in (*rv, *cv)):
        return base.with_outcome(
            NOT_GATEABLE, "values at or below zero: a relative change is not defined (a figure near zero)"
        )
    multi_machine = new_machines(rm, cm) and len(set(rm)) > 1  # judged against machine noise, unpaired
    paired = None if multi_machine else pair(rv, rb, cv, cb)
    if paired is not None:  # within blocks: what both sides shared (order, kind, selection) cancels
        ref_val, cand_val = (
            math.exp(statistics.fmean(paired.ref_logs)),
            math.exp(statistics.fmean(paired.cand_logs)),
        )
        d = paired.mean
    else:
        ref_val, cand_val = _geomean(rv), _geomean(cv)
        d = math.log(cand_val) - math.log(ref_val)
    change = math.expm1(d)
    v = replace(base, ref_value=ref_val, cand_value=cand_val, change_ratio=change)
    noise = pooled_noise(rv, cv)
    if paired is None and noise is None:
        return v.with_outcome(
            NOT_GATEABLE,
            f"{_pct(change)} ({ref_val:.4g} -> {cand_val:.4g} {unit}, 1 vs 1 run): one run on each side: the "
            "between-run noise is not known; save the baseline from several fresh processes (--aorta-runs N) "
            "and compare with several",
        )
    m, n = len(rv), len(cv)
    if paired is not None:
        # the SD of one run's log figure within its block: the paired differences' SD / sqrt(2)
        sigma = paired.sd / math.sqrt(2.0)
        se, df, machines = paired.sd / math.sqrt(paired.pairs), float(paired.pairs - 1), ""
        v = replace(v, pairs=paired.pairs)
    else:
        assert noise is not None
        se, df, sigma, machines = noise.sigma * math.sqrt(1.0 / m + 1.0 / n), float(noise.df), noise.sigma, ""
    across: Callable[[Verdict], Verdict] | None = (
        None  # the one-machine rule (aorta.gate.verdicts.machine_rule)
    )
    if new_machines(rm, cm):
        cross = (
            None
            if paired is not None
            else cross_machine([math.log(x) for x in rv], rm, [math.log(x) for x in cv], cm)
        )
        if cross is None:  # a baseline of one machine: the machine spread measured on the kind
            table = load_table() if spread_table is None else spread_table
            machines = (
                f"; another machine than the baseline's one ({machine_name(rm[0])} -> {machines_named(cm)})"
            )
            across = partial(
                across_one_machine,
                se=se,
                df=df,
                spread=spread_for(table, gpu_model, benchmark, metric),
                ref_machine=rm[0],
                cand_machines=cm,
                alpha=policy.alpha,
                unsure=UNSURE,
            )
        else:
            se, df = cross.se, cross.df
            sigma = math.hypot(cross.sigma_machine, cross.sigma_run)
            machines = (
                f"; another machine: noise between the baseline's {cross.machines} machines "
                f"{cross.sigma_machine * 100:.2g}%, between runs {cross.sigma_run * 100:.2g}%"
            )
    the_mde = math.expm1(float(sps.t.ppf(1.0 - policy.alpha / 2.0, df) + sps.t.ppf(policy.power, df)) * se)
    tq = float(sps.t.ppf(1.0 - policy.alpha / 2.0, df))
    p = (0.0 if d else 1.0) if se == 0 else float(2.0 * sps.t.sf(abs(d) / se, df))
    ci_low, ci_high = math.expm1(d - tq * se), math.expm1(d + tq * se)
    v = replace(v, ci_low=ci_low, ci_high=ci_high, mde=the_mde, noise_sigma=sigma, p_value=p)
    runs = f"{m} vs {n} runs{machines}" if paired is None else f"{paired.note()}{machines}"
    effect = f"{_pct(change)} ({ref_val:.4g} -> {cand_val:.4g} {unit}, {runs})".replace(" ,", ",")
    interval = f"interval {_pct(ci_low)} to {_pct(ci_high)}"
    # Too noisy for the bound, yet a change past the figure's own MDE is no coin toss: judged, unless a reading
    # note says the figure measures the host (launch path, idle GPU), whose runs fall into modes by process
    # and machine (tiny_kernel_stress eager at 16 streams: +46% between two H100s, 0.6% between runs of one)
    host = measures_the_host(hint)
    beyond = p < policy.alpha and abs(change) >= max(the_mde, policy.min_effect) and not host
    if the_mde > policy.max_mde and not beyond:
        why = f"; {hint}" if hint else ""
        return v.with_outcome(
            NOT_GATEABLE,
            f"{effect}: MDE {the_mde * 100:.3g}% with these runs exceeds the {policy.max_mde * 100:.3g}% bound"
            f"{policy.bound_note} "
            f"({'within-block' if paired is not None else 'between-run'} noise {sigma * 100:.2g}%){why}",
        )
    if d == 0:
        return v.with_outcome(SAME, f"{effect}: no change (MDE {the_mde * 100:.2g}%)")
    better = (d > 0) == higher_is_better
    word = FASTER if better else SLOWER
    if p >= policy.alpha:
        if not better and p < SUSPECT_P:
            return v.with_outcome(
                UNSURE, f"{effect}, p={p:.2g}: suggestive, not significant at {policy.alpha:g}; {interval}"
            )
        return v.with_outcome(
            SAME,
            f"{effect}, p={p:.2g}: no change found; a change of {the_mde * 100:.2g}% (MDE) would "
            f"be found with probability {policy.power:g}",
        )
    if abs(change) < policy.min_effect:
        return v.with_outcome(
            SAME, f"{effect}, p={p:.2g}: below the {policy.min_effect * 100:.3g}% minimum effect; {interval}"
        )
    if the_mde > policy.max_mde:  # too noisy for the bound, but this change is past the figure's own MDE
        return _then(
            across,
            v.with_outcome(
                word,
                f"{effect}, p={p:.2g}, {interval}: past this figure's own MDE ({the_mde * 100:.3g}% with these "
                f"runs; changes under it are not gateable here: the bound is {policy.max_mde * 100:.3g}%)",
            ),
        )
    return _then(across, v.with_outcome(word, f"{effect}, p={p:.2g}, {interval} (MDE {the_mde * 100:.2g}%)"))


def _then(rule: Callable[[Verdict], Verdict] | None, v: Verdict) -> Verdict:
    return v if rule is None else rule(v)


def measures_the_host(note: str) -> bool:
    """A reading note that says the figure measures the host (host-bound, an idle GPU): such runs fall into
    modes by process and machine, so a change past the figure's own MDE is still not judged. A power-limited
    note is not one: its clock moves with the power draw from run to run, which the MDE already holds (on an
    H200, TF32 forced made power-capped fp32 GEMMs 86% faster at an MDE of 18-44%: a change no mode explains)."""
    text = note.lower()
    return "host" in text or "idle" in text


def part_bound(max_mde: float, part: float, whole: float) -> tuple[float, str]:
    """(the MDE bound of a figure that is a part of each step, why) for a step whose bound is ``max_mde``:
    a change worth ``max_mde`` of the step is ``max_mde * whole / part`` of a part that takes ``part`` of
    ``whole`` (exposed transfer, 2 ms of a 91 ms step: 5% of the step is 227% of it). A part that is not
    smaller than the step, or not positive, keeps the step's bound."""
    if not 0 < part < whole:
        return max_mde, ""
    share = part / whole
    return max_mde / share, (
        f" ({max_mde * 100:.3g}% of the step; this figure is {share * 100:.2g}% of the step on the baseline)"
    )


def control_false_alarms(verdicts: Sequence[Verdict], alpha: float) -> list[Verdict]:
    """Benjamini-Hochberg over every tested figure of one comparison: a FASTER / SLOWER verdict whose
    adjusted p reaches ``alpha`` becomes UNSURE, saying so. Many figures are judged at once; without this,
    about alpha of the unchanged ones would be called significant by chance."""
    from scipy import stats as sps  # when used: its import costs every start 0.7 s

    tested = [i for i, v in enumerate(verdicts) if v.p_value is not None and v.outcome != NOT_GATEABLE]
    out = list(verdicts)
    if not tested:
        return out
    adjusted = sps.false_discovery_control([float(verdicts[i].p_value or 0.0) for i in tested], method="bh")
    m = len(tested)
    for i, p_adj in zip(tested, adjusted):
        v = replace(out[i], p_adjusted=float(p_adj))
        if v.outcome in (FASTER, SLOWER):
            note = f"Benjamini-Hochberg over the comparison's {m} tests: adjusted p={p_adj:.2g}"
            if p_adj >= alpha:
                v = v.with_outcome(UNSURE, f"{v.reason}; not significant after {note} >= {alpha:g}")
            else:
                v = v.with_outcome(v.outcome, f"{v.reason}; {note}")
        out[i] = v
    return out
