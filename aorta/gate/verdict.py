"""Statistical verdicts on raw per-round samples (pure: no torch, no scipy).

A verdict compares a baseline's samples with a candidate's for one figure of one benchmark:

* a two-sided Mann-Whitney U test on the raw samples (exact when both sides are small and untied,
  else the normal approximation with tie correction and continuity correction, as
  ``scipy.stats.mannwhitneyu(method="auto")`` does), and
* the relative change of the medians, which must reach a minimum effect (default 3%).

FASTER / SLOWER need both: a significant test (p < alpha) and a change at least the minimum effect, in
the figure's direction (lower device time is better; higher TFLOP/s is better). A change below the
minimum effect is SAME whatever p says. Everything else is UNSURE with the reason: too few samples
(fewer than ``min_samples`` per side), a single value without samples (only the effect can be
judged, so a large change is UNSURE, never SLOWER), or a large change the test does not support.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from aorta import stats

FASTER, SLOWER, SAME, UNSURE = "FASTER", "SLOWER", "SAME", "UNSURE"
OUTCOMES = (FASTER, SLOWER, SAME, UNSURE)
DEFAULT_MIN_EFFECT = 0.03
DEFAULT_ALPHA = 0.01
DEFAULT_MIN_SAMPLES = 5
EXACT_MAX_N = 8  # exact U distribution when both sides have at most this many samples and no ties


@dataclass(frozen=True)
class MannWhitney:
    u: float  # U of the first sample
    p_value: float
    method: str  # "exact" or "asymptotic"


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> MannWhitney:
    """Two-sided Mann-Whitney U test of ``x`` against ``y``; raises on an empty side."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError(f"Mann-Whitney U needs samples on both sides, got {n1} and {n2}")
    ranks, tie_sizes = _ranks([*x, *y])
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2.0
    u_big = max(u1, n1 * n2 - u1)
    if not any(t > 1 for t in tie_sizes) and max(n1, n2) <= EXACT_MAX_N:
        # P(U >= u_big) under H0, doubled for two sides.
        p = 2.0 * _exact_sf(n1, n2, int(round(u_big)))
        return MannWhitney(u1, min(1.0, p), "exact")
    n = n1 + n2
    tie_term = sum(t**3 - t for t in tie_sizes) / (n * (n - 1))
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term)
    if var <= 0:  # every sample equal: no evidence of any difference
        return MannWhitney(u1, 1.0, "asymptotic")
    z = (u_big - n1 * n2 / 2.0 - 0.5) / math.sqrt(var)  # 0.5: continuity correction
    p = math.erfc(z / math.sqrt(2.0))  # = 2 * (1 - Phi(z))
    return MannWhitney(u1, min(1.0, max(0.0, p)), "asymptotic")


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Average ranks (1-based) in input order, and the size of each group of tied values."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        avg = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[order[k]] = avg
        ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


@cache
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """Number of arrangements giving each U = 0..m*n for sample sizes m, n (no ties)."""
    if m == 0 or n == 0:
        return (1,)
    # The largest value belongs to the first sample (adds n to U) or to the second (adds 0).
    a, b = _u_counts(m - 1, n), _u_counts(m, n - 1)
    out = [0] * (m * n + 1)
    for u, c in enumerate(a):
        out[u + n] += c
    for u, c in enumerate(b):
        out[u] += c
    return tuple(out)


def _exact_sf(m: int, n: int, u: int) -> float:
    counts = _u_counts(m, n)
    return sum(counts[u:]) / sum(counts)


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
) -> Verdict:
    """The verdict for one figure from its baseline samples ``ref`` and candidate samples ``cand``.

    A side with one value is a figure without per-round samples: only its relative change is judged
    (SAME when below ``min_effect``, else UNSURE), never FASTER or SLOWER.
    """
    if min_effect < 0:
        raise ValueError(f"min_effect must be >= 0, got {min_effect}")
    ref_med: float | None = None
    cand_med: float | None = None
    change_ratio: float | None = None
    p_value: float | None = None

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
    better = change > 0 if higher_is_better else change < 0
    word = FASTER if better else SLOWER
    effect = f"median {_pct(change)} ({ref_med:.4g} -> {cand_med:.4g} {unit})".rstrip()
    floor = f"the {min_effect * 100:.3g}% minimum effect"

    if abs(change) < min_effect:
        return verdict(SAME, f"{effect} is below {floor}")
    if len(ref) == 1 or len(cand) == 1:
        return verdict(
            UNSURE,
            (f"{effect} from a single value without per-round samples: no test possible, never a verdict"),
        )
    if len(ref) < min_samples or len(cand) < min_samples:
        return verdict(
            UNSURE, (f"{effect} but too few samples ({len(ref)} vs {len(cand)}; need {min_samples} per side)")
        )
    test = mann_whitney_u(ref, cand)
    p_value = test.p_value
    if test.p_value >= alpha:
        return verdict(
            UNSURE,
            (
                f"{effect} but not significant (Mann-Whitney p={test.p_value:.3g} >= {alpha:g}, "
                f"n={len(ref)} vs {len(cand)})"
            ),
        )
    return verdict(
        word, (f"{effect}, Mann-Whitney p={test.p_value:.2g} (n={len(ref)} vs {len(cand)}), at least {floor}")
    )
