"""Between-run noise and the minimum detectable effect (pure: no torch; quantiles from scipy).

The gate's sample is the run. Rounds of one process share its state (launch path, allocator layout,
clocks, power), so they estimate that run's figure and nothing more; what a stack change must beat is
how far fresh processes of the same stack differ. For one figure of one benchmark:

* a run's figure is the median of its rounds (or steps), or its one value where the figure has one per
  run (``run_value``); the gate works on their logarithms, so a change is a ratio and both directions
  are symmetric;
* the between-run noise ``sigma`` is the pooled standard deviation of those logarithms about each
  side's own mean (an A/A has no shift, so a baseline's runs alone estimate it; with a candidate, both
  sides pool, ``df = m + n - 2``);
* the **minimum detectable effect** (MDE) is the smallest true change the gate calls with probability
  ``power`` at significance ``alpha`` (two-sided Student t): ``expm1((t[1-alpha/2, df] + t[power, df]) *
  sigma * sqrt(1/m + 1/n))``. It is measured, never written into the code: a figure whose MDE on this
  machine exceeds the gate's bound is *not gateable* there, and is reported as such.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aorta import stats

DEFAULT_POWER = 0.95  # the MDE is the change caught 19 times in 20
DEFAULT_MAX_MDE = 0.05  # a figure whose MDE exceeds 5% is not gateable (--aorta-max-mde)


def run_value(samples: Sequence[float]) -> float:
    """One run's figure: the median of its rounds or steps (its one value where it has one)."""
    return stats.median(samples)


@dataclass(frozen=True)
class Noise:
    """Between-run noise of one figure: ``sigma`` of the log run values, with its degrees of freedom."""

    sigma: float
    df: int
    runs: int

    def as_dict(self) -> dict:
        return {"sigma_log": self.sigma, "df": self.df, "runs": self.runs}


def pooled_noise(*groups: Sequence[float]) -> Noise | None:
    """Pooled SD of the log values of each group about its own mean; None where no group has 2 runs or a
    value is not positive (a log ratio needs positive figures)."""
    if any(v <= 0 for g in groups for v in g):
        return None
    logs = [[math.log(v) for v in g] for g in groups if g]
    df = sum(len(g) - 1 for g in logs)
    if df < 1:
        return None
    ss = sum(sum((x - sum(g) / len(g)) ** 2 for x in g) for g in logs)
    return Noise(math.sqrt(ss / df), df, sum(len(g) for g in logs))


def mde(noise: Noise, m: int, n: int, *, alpha: float, power: float = DEFAULT_POWER) -> float:
    """The smallest relative change caught with probability ``power`` at two-sided ``alpha``, with ``m``
    baseline runs and ``n`` candidate runs (a ratio: 0.05 = 5%)."""
    from scipy import stats as sps  # when used: its import costs every start 0.7 s

    if m < 1 or n < 1:
        raise ValueError(f"the MDE needs a run on each side, got {m} and {n}")
    se = noise.sigma * math.sqrt(1.0 / m + 1.0 / n)
    k = float(sps.t.ppf(1.0 - alpha / 2.0, noise.df) + sps.t.ppf(power, noise.df))
    return math.expm1(k * se)


def profile_entry(
    run_values: Sequence[float],
    *,
    alpha: float,
    planned_runs: int,
    max_mde: float,
    power: float = DEFAULT_POWER,
) -> dict:
    """The noise profile of one figure from a baseline's A/A runs: its between-run noise and the MDE a
    compare with ``planned_runs`` candidate runs would have; ``gateable`` with the reason where not."""
    entry: dict = {"runs": len(run_values)}
    if any(v <= 0 for v in run_values):
        entry.update(gateable=False, reason="values at or below zero: a relative change is not defined")
        return entry
    noise = pooled_noise(run_values)
    if noise is None:
        entry.update(gateable=False, reason="one run: the between-run noise is not known")
        return entry
    # The compare pools both sides' runs (df = m + n - 2), as ``aorta noise`` plans it: the save line and
    # ``aorta noise`` then agree on what is gateable (issue 38, case 24: this used the baseline's df alone).
    planned = Noise(noise.sigma, len(run_values) + planned_runs - 2, noise.runs)
    m = mde(planned, len(run_values), planned_runs, alpha=alpha, power=power)
    entry.update(noise.as_dict(), mde=m, gateable=m <= max_mde)
    if m > max_mde:
        entry["reason"] = f"MDE {m * 100:.3g}% exceeds the {max_mde * 100:.3g}% bound"
    return entry


def noise_profile(
    runs: Sequence[Mapping[str, Mapping[str, Sequence[float]]]],
    *,
    alpha: float,
    planned_runs: int,
    max_mde: float,
    power: float = DEFAULT_POWER,
) -> dict:
    """A baseline's noise profile from its runs (each ``{fullname: {figure: samples}}``, all of one stack:
    an A/A): per benchmark and figure, the between-run noise and the MDE of a compare with
    ``planned_runs`` candidate runs, and whether that is within ``max_mde``."""
    names = dict.fromkeys(n for r in runs for n in r)
    out: dict[str, dict] = {}
    for fullname in names:
        figs = dict.fromkeys(f for r in runs if fullname in r for f in r[fullname])
        out[fullname] = {
            fig: profile_entry(
                [run_value(r[fullname][fig]) for r in runs if fullname in r and r[fullname].get(fig)],
                alpha=alpha,
                planned_runs=planned_runs,
                max_mde=max_mde,
                power=power,
            )
            for fig in figs
        }
    entries = [e for figs in out.values() for e in figs.values()]
    return {
        "runs": len(runs),
        "alpha": alpha,
        "power": power,
        "max_mde": max_mde,
        "planned_runs": planned_runs,
        "gateable": sum(bool(e.get("gateable")) for e in entries),
        "not_gateable": sum(not e.get("gateable") for e in entries),
        "figures": out,
    }
