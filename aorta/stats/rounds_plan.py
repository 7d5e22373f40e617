"""How many timed rounds a run should hold: the run-level design of Kalibera and Jones ("Rigorous Benchmarking
in Reasonable Time", ISMM 2013), pure.

A figure measured in ``n`` runs of ``r`` rounds each has a mean whose variance is ``sb2 / n + sw2 / (n r)``:
``sw2`` the variance of one round about its run's mean (within a run), ``sb2`` the variance of the runs' true
means about the stack's (between runs: each process's own launch path, allocator, clocks). A run costs
``c_run`` seconds of its own (process start, checks, every other benchmark) and ``c_round`` seconds a round.
For a fixed budget the variance is least at ``r* = sqrt((c_run / c_round) * (sw2 / sb2))``: where the noise is
between runs, few rounds and many runs; where a round is cheap beside a run, more rounds.

Figures are read on the log scale (their noise is relative), as the gate judges them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Components:
    """Variance components of one figure's log values (one list of rounds per run)."""

    within: float  # sw2: one round about its run's mean, pooled over the runs
    between: float  # sb2: the runs' true means about the stack's (var of run means less within / rounds)
    runs: int
    rounds: float  # mean rounds per run

    @property
    def within_sd(self) -> float:
        return math.sqrt(self.within)

    @property
    def between_sd(self) -> float:
        return math.sqrt(self.between)


def components(runs: Sequence[Sequence[float]]) -> Components | None:
    """One-way analysis of variance of the log values, runs as groups. None where it cannot be had: fewer than
    two runs with two rounds each, or a value that is not positive."""
    if any(not v > 0 for run in runs for v in run):
        return None
    groups = [[math.log(v) for v in run] for run in runs if len(run) >= 2]
    if len(groups) < 2:
        return None
    within_ss = sum(sum((x - statistics.fmean(g)) ** 2 for x in g) for g in groups)
    within_df = sum(len(g) - 1 for g in groups)
    within = within_ss / within_df
    means = [statistics.fmean(g) for g in groups]
    rounds = statistics.fmean(len(g) for g in groups)
    # the spread of the run means holds within / rounds of round noise; what is left is the runs' own
    between = max(statistics.variance(means) - within / rounds, 0.0)
    return Components(within, between, len(groups), rounds)


def best_rounds(
    comp: Components, run_cost_s: float, round_cost_s: float, *, lo: int = 2, hi: int = 1000
) -> int:
    """Kalibera and Jones's rounds per run, within ``[lo, hi]``: ``hi`` where the runs add no noise of their own
    (every round is then as good as a run, and a round is cheaper)."""
    if run_cost_s <= 0 or round_cost_s <= 0:
        raise ValueError(f"costs must be positive seconds, got run {run_cost_s!r} and round {round_cost_s!r}")
    if comp.between <= 0:
        return hi
    r = math.sqrt((run_cost_s / round_cost_s) * (comp.within / comp.between))
    # the cost of a plan is convex in r: the best whole number is one of the two around r*
    near = {min(max(math.floor(r), lo), hi), min(max(math.ceil(r), lo), hi)}
    return min(sorted(near), key=lambda k: variance_per_second(comp, k, run_cost_s, round_cost_s))


def variance_per_second(comp: Components, rounds: float, run_cost_s: float, round_cost_s: float) -> float:
    """The variance of the figure's mean that one second of runs of ``rounds`` rounds buys back (lower is
    better): (sb2 + sw2 / r) x (c_run + r c_round). Compares two plans for one figure."""
    return (comp.between + comp.within / rounds) * (run_cost_s + rounds * round_cost_s)
