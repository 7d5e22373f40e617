"""Statistical verdicts on raw per-round samples (pure: no torch; the tests are scipy's).

A verdict compares a baseline's samples with a candidate's for one figure of one benchmark:

* a two-sided Mann-Whitney U test on the raw samples (``scipy.stats.mannwhitneyu``, ``method="auto"``),
* the relative change of the medians, which must reach a minimum effect (default 3%), and
* where the baseline holds several runs (separate processes), the spread between those runs: a change that
  stays within how far the baseline's own runs differed is not a regression of the new stack.

FASTER / SLOWER need all three, in the figure's direction (lower device time is better; higher TFLOP/s is
better). A change below the minimum effect, or no change at all, is SAME whatever p says. Everything else
is UNSURE with the reason. Across the many figures of one run, false alarms are controlled afterwards by
``control_false_alarms`` (Benjamini-Hochberg over every test of the run).

A figure that has one value per run (no per-round samples) cannot be tested within a run: it is judged by
drift across the baseline's runs (SLOWER only when worse than every one of at least two baseline runs by
more than their spread and the minimum effect), and is UNSURE while the baseline holds a single run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from scipy import stats as sps

from aorta import stats

FASTER, SLOWER, SAME, UNSURE = "FASTER", "SLOWER", "SAME", "UNSURE"
OUTCOMES = (FASTER, SLOWER, SAME, UNSURE)
DEFAULT_MIN_EFFECT = 0.03
DEFAULT_ALPHA = 0.01
DEFAULT_MIN_SAMPLES = 5
MIN_DRIFT_RUNS = 2  # baseline runs needed to judge a figure that has one value per run


@dataclass(frozen=True)
class MannWhitney:
    u: float  # U of the first sample
    p_value: float


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> MannWhitney:
    """Two-sided Mann-Whitney U test of ``x`` against ``y`` (scipy, ``method="auto"``); raises on an empty
    side. Samples that are all one value carry no evidence of a difference: p = 1."""
    if not x or not y:
        raise ValueError(f"Mann-Whitney U needs samples on both sides, got {len(x)} and {len(y)}")
    if len({*x, *y}) == 1:
        return MannWhitney(len(x) * len(y) / 2.0, 1.0)
    res = sps.mannwhitneyu(list(x), list(y), alternative="two-sided", method="auto")
    return MannWhitney(float(res.statistic), float(min(1.0, res.pvalue)))


@dataclass(frozen=True)
class Verdict:
    """One figure of one benchmark, baseline vs candidate; ``sentence()`` says why."""

    benchmark: str
    metric: str
    unit: str
    higher_is_better: bool
    outcome: str
    reason: str
    ref_median: float | None = None
    cand_median: float | None = None
    change_ratio: float | None = None  # (candidate - baseline) / baseline, of the medians
    p_value: float | None = None
    n_ref: int = 0
    n_cand: int = 0
    min_effect: float = DEFAULT_MIN_EFFECT
    reruns: int = 0  # confirmation re-runs behind this verdict (--aorta-confirm)
    ref_runs: int = 1  # separate runs (processes) the baseline's samples come from
    run_spread_ratio: float | None = None  # (max - min) of the baseline runs' medians / baseline median
    p_adjusted: float | None = None  # after false-alarm control over every test of the run

    @property
    def notable(self) -> bool:
        """Worth a line of its own: anything but SAME, or a SAME that a confirmation decided."""
        return self.outcome != SAME or self.reruns > 0

    def sentence(self) -> str:
        return f"{self.benchmark} [{self.metric}]: {self.outcome}: {self.reason}"

    def with_outcome(self, outcome: str, reason: str, reruns: int = 0) -> Verdict:
        return replace(self, outcome=outcome, reason=reason, reruns=reruns)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _pct(ratio: float) -> str:
    return f"{ratio * 100:+.1f}%"


def run_spread(ref_runs: Sequence[Sequence[float]], ref_median: float) -> float | None:
    """(max - min) of the baseline runs' medians relative to the pooled median; None with fewer than 2 runs."""
    medians = [stats.median(r) for r in ref_runs if r]
    if len(medians) < 2 or ref_median == 0:
        return None
    return (max(medians) - min(medians)) / abs(ref_median)


def decide(
    benchmark: str,
    metric: str,
    unit: str,
    higher_is_better: bool,
    ref: Sequence[float],
    cand: Sequence[float],
    *,
    min_effect: float = DEFAULT_MIN_EFFECT,
    alpha: float = DEFAULT_ALPHA,
    min_samples: int = DEFAULT_MIN_SAMPLES,
    ref_runs: Sequence[Sequence[float]] | None = None,
) -> Verdict:
    """The verdict for one figure from its baseline samples ``ref`` and candidate samples ``cand``.

    ``ref_runs``: the baseline's samples run by run (``ref`` is them pooled); None = one run, ``ref``.
    A side with one value is a figure without per-round samples: judged by drift across the baseline's runs
    (see the module docstring), never by a test.
    """
    if min_effect < 0:
        raise ValueError(f"min_effect must be >= 0, got {min_effect}")
    runs = [list(r) for r in ref_runs if r] if ref_runs else [list(ref)]
    ref_med: float | None = None
    cand_med: float | None = None
    change_ratio: float | None = None
    p_value: float | None = None
    spread: float | None = None

    def verdict(outcome: str, reason: str) -> Verdict:
        return Verdict(
            benchmark=benchmark,
            metric=metric,
            unit=unit,
            higher_is_better=higher_is_better,
            outcome=outcome,
            reason=reason,
            ref_median=ref_med,
            cand_median=cand_med,
            change_ratio=change_ratio,
            p_value=p_value,
            n_ref=len(ref),
            n_cand=len(cand),
            min_effect=min_effect,
            ref_runs=len(runs),
            run_spread_ratio=spread,
        )

    bad = [v for v in (*ref, *cand) if v is None or not math.isfinite(v)]
    if not ref or not cand or bad:
        what = (
            "no baseline samples"
            if not ref
            else "no samples in this run"
            if not cand
            else f"non-finite values ({bad[0]!r})"
        )
        return verdict(UNSURE, f"cannot compare: {what}")
    ref_med, cand_med = stats.median(ref), stats.median(cand)
    if ref_med == 0:
        return verdict(UNSURE, "baseline median is 0: no relative change")
    change_ratio = change = (cand_med - ref_med) / abs(ref_med)
    spread = run_spread(runs, ref_med)
    better = change > 0 if higher_is_better else change < 0
    word = FASTER if better else SLOWER
    effect = f"median {_pct(change)} ({ref_med:.4g} -> {cand_med:.4g} {unit})".rstrip()
    floor = f"the {min_effect * 100:.3g}% minimum effect"

    if change == 0:  # with min_effect=0 too: no change is never a verdict
        return verdict(SAME, f"{effect}: the medians are equal")
    if abs(change) < min_effect:
        return verdict(SAME, f"{effect} is below {floor}")
    if len(cand) == 1 or all(len(r) == 1 for r in runs):
        return _drift(verdict, word, effect, floor, runs, cand_med, change, spread, higher_is_better)
    if len(ref) < min_samples or len(cand) < min_samples:
        return verdict(
            UNSURE, (f"{effect} but too few samples ({len(ref)} vs {len(cand)}; need {min_samples} per side)")
        )
    test = mann_whitney_u(ref, cand)
    p_value = test.p_value
    n = f"n={len(ref)} vs {len(cand)}"
    if test.p_value >= alpha:
        return verdict(
            UNSURE, f"{effect} but not significant (Mann-Whitney p={test.p_value:.3g} >= {alpha:g}, {n})"
        )
    within = f"{effect}, Mann-Whitney p={test.p_value:.2g} ({n}), at least {floor}"
    if spread is None:
        return verdict(word, f"{within}; baseline of 1 run: the spread between runs is not known")
    if abs(change) <= spread:
        return verdict(
            UNSURE,
            f"{within}, but within the spread of the baseline's {len(runs)} runs ({spread * 100:.3g}% between "
            "their medians): not beyond what separate processes of the same stack differ by",
        )
    return verdict(
        word, f"{within}, beyond the {spread * 100:.3g}% spread between the baseline's {len(runs)} runs"
    )


def _drift(verdict, word, effect, floor, runs, cand_med, change, spread, higher_is_better) -> Verdict:
    """A figure with one value per run: judged against every one of the baseline's runs (needs two)."""
    if len(runs) < MIN_DRIFT_RUNS:
        return verdict(
            UNSURE,
            f"{effect} from one value per run, no per-round samples: judged by drift across the baseline's "
            f"runs, and the baseline holds {len(runs)}; save it {MIN_DRIFT_RUNS}+ times "
            "(--aorta-save-baseline NAME again adds a run) to gate this figure",
        )
    values = [stats.median(r) for r in runs]
    worse_than_all = all((cand_med < v) if higher_is_better else (cand_med > v) for v in values)
    better_than_all = all((cand_med > v) if higher_is_better else (cand_med < v) for v in values)
    beyond = worse_than_all if word == SLOWER else better_than_all
    spread_pct = f"{(spread or 0.0) * 100:.3g}%"
    if beyond and abs(change) > (spread or 0.0):
        return verdict(
            word,
            f"{effect} from one value per run: beyond every one of the baseline's {len(runs)} runs "
            f"(their spread {spread_pct}) and at least {floor}",
        )
    return verdict(
        SAME if not beyond else UNSURE,
        f"{effect} from one value per run: within the {spread_pct} spread of the baseline's {len(runs)} runs",
    )


def control_false_alarms(verdicts: Sequence[Verdict], alpha: float) -> list[Verdict]:
    """Benjamini-Hochberg over every tested figure of one run: a FASTER / SLOWER verdict whose adjusted p
    reaches ``alpha`` becomes UNSURE, saying so. Many figures are judged at once; without this, about
    alpha of the unchanged ones would be called significant by chance."""
    tested = [i for i, v in enumerate(verdicts) if v.p_value is not None]
    out = list(verdicts)
    if not tested:
        return out
    adjusted = sps.false_discovery_control([float(verdicts[i].p_value or 0.0) for i in tested], method="bh")
    m = len(tested)
    for i, p_adj in zip(tested, adjusted):
        v = replace(out[i], p_adjusted=float(p_adj))
        if v.outcome in (FASTER, SLOWER):
            note = f"Benjamini-Hochberg over the run's {m} tests: adjusted p={p_adj:.2g}"
            if p_adj >= alpha:
                v = v.with_outcome(
                    UNSURE, f"{v.reason}; but not significant after {note} >= {alpha:g}", v.reruns
                )
            else:
                v = v.with_outcome(v.outcome, f"{v.reason}; {note}", v.reruns)
        out[i] = v
    return out
