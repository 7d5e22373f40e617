"""Summary statistics over raw samples (pure: no torch)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(samples: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, ``q`` in [0, 100] (numpy's default method)."""
    if not samples:
        raise ValueError("percentile of no samples")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile q must be in [0, 100], got {q}")
    data = sorted(samples)
    pos = (len(data) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def median(samples: Sequence[float]) -> float:
    return percentile(samples, 50.0)


def mean(samples: Sequence[float]) -> float:
    if not samples:
        raise ValueError("mean of no samples")
    return sum(samples) / len(samples)


def stddev(samples: Sequence[float]) -> float:
    """Sample standard deviation (n - 1); 0 for a single sample."""
    if len(samples) < 2:
        return 0.0
    m = mean(samples)
    return math.sqrt(sum((x - m) ** 2 for x in samples) / (len(samples) - 1))


def summarize(samples: Sequence[float]) -> dict[str, float]:
    """min / median / mean / p90 / p99 / max / stddev / n of the samples."""
    return {
        "n": len(samples),
        "min": min(samples),
        "median": median(samples),
        "mean": mean(samples),
        "p90": percentile(samples, 90.0),
        "p99": percentile(samples, 99.0),
        "max": max(samples),
        "stddev": stddev(samples),
    }
