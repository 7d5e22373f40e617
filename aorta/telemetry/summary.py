"""Per-benchmark telemetry summary and the matching of samples to timed rounds. Pure.

A round is judged by the samples taken while it could have run (between its ``host_start_s`` and
``host_end_s``); when none fell inside (rounds shorter than the sampling interval), by the nearest
sample no further than ``interval_s`` from the round. A round is throttled if any of its samples is
(``throttle.throttle_cause``); a round with no sample near it is counted as unmatched, never throttled.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence

from aorta import stats
from aorta.telemetry.sample import FIGURES, Limits, Sample
from aorta.telemetry.throttle import BENIGN_REASONS, SM_CLOCK_FLOOR_RATIO, throttle_cause


def samples_for_round(
    samples: Sequence[Sample], start_s: float, end_s: float, interval_s: float
) -> list[Sample]:
    """Samples in ``[start_s, end_s]``; else the nearest one within ``interval_s`` of the round; else none.

    ``samples`` must be in time order.
    """
    times = [s.t_s for s in samples]
    lo = bisect.bisect_left(times, start_s)
    hi = bisect.bisect_right(times, end_s)
    if hi > lo:
        return list(samples[lo:hi])
    candidates = []
    if lo > 0:  # last sample before the round
        candidates.append((start_s - times[lo - 1], samples[lo - 1]))
    if hi < len(samples):  # first sample after it
        candidates.append((times[hi] - end_s, samples[hi]))
    near = [c for c in candidates if c[0] <= interval_s]
    return [min(near, key=lambda c: c[0])[1]] if near else []


def classify_rounds(
    samples: Sequence[Sample],
    spans_s: Sequence[tuple[float | None, float | None]],
    interval_s: float,
    sm_clock_max_mhz: float | None,
) -> list[str | None | bool]:
    """Per round: the throttle cause (str), ``None`` when not throttled, ``False`` when no sample matched."""
    ordered = sorted(samples, key=lambda s: s.t_s)
    out: list[str | None | bool] = []
    for start_s, end_s in spans_s:
        if start_s is None or end_s is None:
            out.append(False)
            continue
        near = samples_for_round(ordered, start_s, end_s, interval_s)
        if not near:
            out.append(False)
            continue
        causes = [c for c in (throttle_cause(s, sm_clock_max_mhz) for s in near) if c]
        out.append(causes[0] if causes else None)
    return out


def timed_window_samples(
    samples: Sequence[Sample], spans_s: Sequence[tuple[float | None, float | None]], interval_s: float
) -> list[Sample]:
    """Samples from the first round's start to the last round's end; if none fell there (a timed
    phase shorter than the interval), the nearest one within ``interval_s``."""
    starts = [a for a, _ in spans_s if a is not None]
    ends = [b for _, b in spans_s if b is not None]
    if not starts or not ends:
        return []
    ordered = sorted(samples, key=lambda s: s.t_s)
    return samples_for_round(ordered, min(starts), max(ends), interval_s)


def figure_stats(samples: Sequence[Sample]) -> tuple[dict[str, dict], dict[str, str]]:
    """``{figure: {"min", "median", "max"}}`` over the samples, and ``{figure: reason}`` for missing ones."""
    figures, unavailable = {}, {}
    for name in FIGURES:
        values = [v for v in (s.figure(name) for s in samples) if v is not None]
        if values:
            figures[name] = {"min": min(values), "median": stats.median(values), "max": max(values)}
        else:
            unavailable[name] = "the telemetry source gave no value for it"
    return figures, unavailable


def summarize(
    samples: Sequence[Sample],
    *,
    source: str,
    interval_ms: float,
    limits: Limits,
    spans_s: Sequence[tuple[float | None, float | None]],
) -> tuple[dict, list[str | None | bool]]:
    """The run record's ``telemetry`` entry, and per round its throttle cause (str), ``None`` (not
    throttled) or ``False`` (no sample matched): what ``aorta.telemetry.round_policy`` decides by."""
    timed = timed_window_samples(samples, spans_s, interval_ms / 1e3)
    figures, unavailable = figure_stats(timed)
    per_round = classify_rounds(samples, spans_s, interval_ms / 1e3, limits.sm_clock_max_mhz)
    throttled = [isinstance(c, str) for c in per_round]
    reasons_seen: Counter[str] = Counter()
    for s in timed:
        reasons_seen.update(r for r in (s.throttle_reasons or ()) if r not in BENIGN_REASONS)
    if samples and all(s.throttle_reasons is None for s in samples):
        unavailable["throttle_reasons"] = (
            f"{source} reports no throttle reasons; only the SM clock rule applies"
        )
    if not limits.sm_clock_max_mhz:
        unavailable["sm_clock_max_mhz"] = f"{source} gave no maximum SM clock; the 75% clock rule is off"
    summary = {
        "source": source,
        "interval_ms": interval_ms,
        "samples": len(timed),  # taken while the rounds ran (the figures are over these)
        "samples_total": len(samples),  # including set-up and the correctness check
        "limits": limits.as_dict(),
        "figures": figures,
        "throttle_rule": (
            f"a non-idle sample with SM clock < {SM_CLOCK_FLOOR_RATIO:.0%} of max, or an active "
            f"reason other than {', '.join(sorted(BENIGN_REASONS))}"
        ),
        "throttle_reasons_seen": dict(reasons_seen),  # samples per reason
        "rounds": len(per_round),
        "throttled_rounds": sum(throttled),
        "throttled_round_indices": [i for i, t in enumerate(throttled) if t],
        "throttle_causes": dict(Counter(c for c in per_round if isinstance(c, str))),
        "rounds_without_sample": sum(1 for c in per_round if c is False),
        "throttled": any(throttled),
        "unavailable": unavailable,
    }
    return summary, per_round


def unavailable_summary(reason: str) -> dict:
    """What is recorded when no source could be opened (or telemetry is off)."""
    return {
        "source": "unavailable",
        "reason": reason,
        "samples": 0,
        "throttled_rounds": None,
        "throttled": None,
    }
