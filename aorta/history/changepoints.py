"""Change points in one figure's run series that know the between-run noise and the stack (pure: numpy,
scipy).

The series is the log of each run's figure, oldest first, so a change is a ratio. The noise is the gate's:
the pooled SD of the log run figures of runs of one stack (``aorta.stats.noise.pooled_noise``), which a step
between stacks does not inflate. Detection is binary segmentation of the mean with that noise known: in a
segment, the split ``t`` scores ``z = |mean(after) - mean(before)| / (sigma * sqrt(1/n_before + 1/n_after))``;
the best split is kept if it clears its bound, and both halves are searched again. Two bounds:

* where the stack changed between two runs (a version, a setting or a hardware fact differs), the split is
  one of a few named places: Bonferroni over the stack changes of the series, ``z > isf(alpha / 2k)``;
* anywhere else (a change no stack field explains), Bonferroni over every place in the series,
  ``z > isf(alpha / 2n)``: stricter, so knowing where the stack changed buys power where it matters.

A split must leave ``min_segment`` runs on each side, and the change points kept must each move the figure by
``min_effect`` or more between their neighbouring segments (Chrome's dashboard asks 6 points a segment and
1%): judged after the search, since a segment holding a rise and a fall (+5% then -5%) shows neither in full
to a single split. A split found within ``snap`` runs of a stack change that clears
the stack bound moves onto it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from aorta.stats.noise import pooled_noise

DEFAULT_ALPHA = 0.001
DEFAULT_MIN_SEGMENT = 5
DEFAULT_MIN_EFFECT = 0.01
DEFAULT_SNAP = 2


@dataclass(frozen=True)
class ChangePoint:
    index: int  # first run of the new level
    change: float  # relative change of the figure: exp(mean after - mean before) - 1
    z: float  # the split's score in units of its standard error
    at_stack_change: bool  # the split sits where the stack changed


def series_noise(values: Sequence[float], stack_changes: Sequence[int]) -> float | None:
    """The between-run noise (SD of log run figures) of runs of one stack, pooled over the stack's segments;
    where no segment has two runs, a robust estimate from successive differences. None: not known."""
    cuts = [0, *sorted(i for i in stack_changes if 0 < i < len(values)), len(values)]
    groups = [list(values[a:b]) for a, b in zip(cuts, cuts[1:]) if b > a]
    noise = pooled_noise(*groups)
    if noise is not None and noise.df >= 2:
        return noise.sigma
    return difference_noise(values)


def difference_noise(values: Sequence[float]) -> float | None:
    """A robust SD of the log figures from successive differences (a step moves one difference only):
    1.4826 * MAD(diff) / sqrt(2). None with fewer than 3 positive values."""
    if len(values) < 3 or any(v <= 0 for v in values):
        return None
    d = np.diff(np.log(np.asarray(values, dtype=float)))
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / math.sqrt(2.0)) or None


def _scores(x: np.ndarray, a: int, b: int, sigma: float, min_segment: int) -> tuple[np.ndarray, np.ndarray]:
    """(split positions, z) for every split of x[a:b] leaving min_segment runs each side."""
    t = np.arange(a + min_segment, b - min_segment + 1)
    if t.size == 0:
        return t, np.zeros(0)
    c = np.concatenate([[0.0], np.cumsum(x[a:b])])
    left_n, right_n = t - a, b - t
    left = c[t - a] / left_n
    right = (c[b - a] - c[t - a]) / right_n
    z = np.abs(right - left) / (sigma * np.sqrt(1.0 / left_n + 1.0 / right_n))
    return t, z


def detect(
    values: Sequence[float] | np.ndarray,
    stack_changes: Sequence[int] = (),
    *,
    sigma: float | None = None,
    alpha: float = DEFAULT_ALPHA,
    min_segment: int = DEFAULT_MIN_SEGMENT,
    min_effect: float = DEFAULT_MIN_EFFECT,
    snap: int = DEFAULT_SNAP,
) -> list[ChangePoint]:
    """The change points of a run series (positive figures, oldest first), by index. ``stack_changes``:
    indices ``i`` where run ``i``'s stack differs from run ``i - 1``'s. ``sigma``: the between-run noise of
    the log figure, else ``series_noise``. [] where the noise is unknown or zero."""
    from scipy import stats as sps  # when used: its import costs every start 0.7 s

    n = len(values)
    if n < 2 * min_segment or any(v <= 0 for v in values):
        return []
    if sigma is None:
        sigma = series_noise(list(values), stack_changes)
    if not sigma or sigma <= 0:
        return []
    x = np.log(np.asarray(values, dtype=float))
    stack = sorted({i for i in stack_changes if 0 < i < n})
    z_stack = float(sps.norm.isf(alpha / (2 * max(1, len(stack)))))
    z_any = float(sps.norm.isf(alpha / (2 * n)))
    found: list[ChangePoint] = []
    todo = [(0, n)]
    while todo:
        a, b = todo.pop()
        t, z = _scores(x, a, b, sigma, min_segment)
        if t.size == 0:
            continue
        is_stack = np.isin(t, stack)
        best = None
        cand_any = np.where(z > z_any)[0]
        if cand_any.size:
            k = int(cand_any[np.argmax(z[cand_any])])
            near = np.where(is_stack & (np.abs(t - t[k]) <= snap) & (z > z_stack))[0]
            best = int(near[np.argmax(z[near])]) if near.size else k
        else:
            cand_stack = np.where(is_stack & (z > z_stack))[0]
            if cand_stack.size:
                best = int(cand_stack[np.argmax(z[cand_stack])])
        if best is None:
            continue
        split = int(t[best])
        found.append(ChangePoint(split, 0.0, float(z[best]), split in stack))  # change: measured below
        todo += [(a, split), (split, b)]
    found.sort(key=lambda c: c.index)
    # each change measured between its neighbouring segments, not the segment it was found in; a split
    # between segments that differ by less than min_effect goes, and its neighbours are measured again
    while True:
        changes = _neighbour_changes(x, found)
        small = [i for i, c in enumerate(changes) if abs(c) < min_effect]
        if not small:
            break
        del found[min(small, key=lambda i: abs(changes[i]))]
    return [ChangePoint(c.index, ch, c.z, c.at_stack_change) for c, ch in zip(found, changes)]


def _neighbour_changes(x: np.ndarray, found: list[ChangePoint]) -> list[float]:
    cuts = [0, *(c.index for c in found), len(x)]
    return [
        float(np.expm1(x[cuts[i + 1] : cuts[i + 2]].mean() - x[cuts[i] : cuts[i + 1]].mean()))
        for i in range(len(found))
    ]
