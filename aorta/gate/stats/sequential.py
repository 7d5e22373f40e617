"""Decide, then stop: the gate's sequential rule for ``--aorta-runs auto`` (pure: no torch, no I/O).

``--aorta-runs auto`` adds fresh-process runs until every figure is decided or the wall budget ends. Looking
at the data after every run and stopping at the first significant p inflates false alarms (ten looks at
alpha 0.01 call about 4% of unchanged figures significant). The rule here keeps the rate at ``alpha``:

* **Looks are fixed in advance**: the candidate's run counts at which the gate may judge, ``LOOKS`` (3, 5,
  8, 12, 20 runs a side), never data-dependent. A look at a run count not on the schedule happens only when
  the budget or the run cap ends the gate early, and it then takes the place of the next scheduled look.
* **Each look tests at ``alpha / len(LOOKS)``** (Bonferroni over the looks): whatever the correlation
  between looks, the chance that any of them calls an unchanged figure SLOWER is at most ``alpha`` (the
  union bound). Benjamini-Hochberg across the figures of one look runs at the same level.
* **A figure is decided** when it is SLOWER / FASTER at its look's level, SAME with its MDE (at the look's
  level) within the bound, or NOT_GATEABLE even at the most runs the gate may take (its projected MDE at the
  last look still exceeds the bound, or its values are not positive). Stopping to accept never adds a
  false alarm.

``tests/gate/test_sequential.py`` shows it by simulation (10,000 A/A compares drawn from measured noise: the
false-alarm rate stays under ``alpha``) and gives the power table; docs/gate.md has both.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from aorta.gate.runs.blocks import MIN_PAIRS

LOOKS = (3, 5, 8, 12, 20)  # candidate runs at which the auto gate judges; the last is its run cap
MAX_AUTO_RUNS = LOOKS[-1]
BUDGET_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def look_alpha(alpha: float, looks: Sequence[int] = LOOKS) -> float:
    """The level each look tests at: ``alpha`` shared equally by the scheduled looks."""
    return alpha / len(looks)


def next_look(runs_done: int, looks: Sequence[int] = LOOKS) -> int | None:
    """The next scheduled run count after ``runs_done`` runs (None past the last)."""
    return next((k for k in looks if k > runs_done), None)


def parse_budget(option: str, text: str) -> float:
    """A wall budget as seconds: ``600``, ``600s``, ``10m``, ``1.5h``. Refuses anything else, naming the option."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text or "")
    value = float(m.group(1)) * BUDGET_UNITS[m.group(2) or "s"] if m else -1.0
    if not m or not math.isfinite(value) or value <= 0 or value > 7 * 24 * 3600:
        raise ValueError(
            f"{option}={text!r}: expected a wall time such as 600, 600s, 10m or 1.5h (more than 0, at most a week)"
        )
    return value


@dataclass(frozen=True)
class Budget:
    """When the auto gate stops adding runs: the wall budget and the run cap."""

    seconds: float
    max_runs: int = MAX_AUTO_RUNS

    def room_for_another(self, elapsed_s: float, run_walls: Sequence[float], runs_done: int) -> bool:
        """Another run fits: under the cap, and the slowest run so far (of the kind that comes next: give the
        lean runs' walls once there are some) would end inside the budget."""
        if runs_done >= self.max_runs:
            return False
        slowest = max(run_walls, default=0.0)
        return elapsed_s + slowest <= self.seconds


def runs_to_gateable(
    sigma: float,
    ref_runs: int,
    cand_runs: int,
    *,
    alpha: float,
    power: float,
    max_mde: float,
    both_sides: bool = True,
    limit: int = 50,
) -> int | None:
    """How many more runs a side (the candidate's alone where ``both_sides`` is False) would bring a figure
    with between-run noise ``sigma`` (log scale) to an MDE within ``max_mde``; 0 if it is already there,
    None if not within ``limit`` more."""
    from scipy import stats as sps  # when used: its import costs every start 0.7 s

    for extra in range(limit + 1):
        m = ref_runs + (extra if both_sides else 0)
        n = cand_runs + extra
        df = max(m + n - 2, 1)
        k = float(sps.t.ppf(1.0 - alpha / 2.0, df) + sps.t.ppf(power, df))
        if math.expm1(k * sigma * math.sqrt(1.0 / m + 1.0 / n)) <= max_mde:
            return extra
    return None


# --- The rule by simulation (used by the tests and by docs/gate.md's table) ---------------------------------


@dataclass(frozen=True)
class _LookRule:
    """One look of the simulated gate over many compares at once, as ``aorta.gate.verdicts.verdict.decide`` rules."""

    level: float
    power: float
    max_mde: float
    min_effect: float

    def look(self, outcome, used, d, se, df, n: int, *, last: bool, accept: bool = True) -> None:
        """Decide the still open compares (``outcome`` 0) from their log changes ``d`` and standard errors:
        1 SLOWER, 2 FASTER, 3 SAME, 4 NOT_GATEABLE at the last look; ``used`` gets ``n`` where decided."""
        from scipy import stats as sps  # when used: its import costs every start 0.7 s

        p = 2.0 * sps.t.sf(np.abs(d) / se, df)
        mde = np.expm1((sps.t.ppf(1 - self.level / 2, df) + sps.t.ppf(self.power, df)) * se)
        open_ = outcome == 0
        sig = (p < self.level) & (np.abs(np.expm1(d)) >= self.min_effect)
        # a significant change past the figure's own MDE is judged even above the bound (decide's rule)
        judged = sig & ((mde <= self.max_mde) | (np.abs(np.expm1(d)) >= mde))
        same = ~sig & (mde <= self.max_mde) & accept
        outcome[open_ & judged & (d > 0)] = 1
        outcome[open_ & judged & (d < 0)] = 2
        outcome[open_ & same] = 3
        outcome[open_ & last & ~judged & ~same] = 4
        used[open_ & (judged | same | last)] = n


def simulate_gate(
    sigmas: Sequence[float],
    *,
    ref_runs: int,
    shift: float = 0.0,
    alpha: float = 0.01,
    power: float = 0.95,
    max_mde: float = 0.05,
    min_effect: float = 0.01,
    looks: Sequence[int] = LOOKS,
    both_sides_grow: bool = False,
    compares: int = 10_000,
    seed: int = 0,
    accept_early: bool = True,
) -> dict:
    """Simulate ``compares`` sequential compares of one figure per noise in ``sigmas`` (log-normal run
    figures, the candidate shifted by ``shift``, e.g. 0.02 = 2% slower): the baseline holds ``ref_runs``
    runs (or grows with the candidate where ``both_sides_grow``, as ``aorta ab`` does); at each look the
    figure is tested at ``alpha / len(looks)`` and the compare stops for it once decided. Returns, per sigma,
    the share called SLOWER, FASTER, SAME and left undecided, and the mean candidate runs used.
    ``accept_early`` False: a figure stops only when significant (every look is a chance to cry wolf)."""
    rng = np.random.default_rng(seed)
    level = look_alpha(alpha, looks)
    out = []
    for sigma in sigmas:
        n_max = looks[-1]
        m_max = n_max if both_sides_grow else ref_runs
        ref = rng.normal(0.0, sigma, size=(compares, m_max))
        cand = rng.normal(math.log1p(shift), sigma, size=(compares, n_max))
        outcome = np.zeros(compares, dtype=int)  # 0 undecided, 1 SLOWER, 2 FASTER, 3 SAME, 4 NOT_GATEABLE
        used = np.full(compares, n_max)
        for n in looks:
            m = n if both_sides_grow else ref_runs
            r, c = ref[:, :m], cand[:, :n]
            df = m + n - 2
            ss = ((r - r.mean(1, keepdims=True)) ** 2).sum(1) + ((c - c.mean(1, keepdims=True)) ** 2).sum(1)
            s = np.sqrt(ss / df)
            se = s * math.sqrt(1.0 / m + 1.0 / n)
            d = c.mean(1) - r.mean(1)
            rule = _LookRule(level, power, max_mde, min_effect)
            rule.look(outcome, used, d, se, df, n, last=n == looks[-1], accept=accept_early or n == looks[-1])
        out.append(
            {
                "sigma": sigma,
                "slower": float(np.mean(outcome == 1)),
                "faster": float(np.mean(outcome == 2)),
                "same": float(np.mean(outcome == 3)),
                "not_gateable": float(np.mean(outcome == 4)),
                "mean_runs": float(np.mean(used)),
            }
        )
    return {"alpha": alpha, "look_alpha": level, "looks": list(looks), "shift": shift, "rows": out}


def simulate_paired_gate(
    within: float,
    block: float,
    *,
    runs: int,
    shift: float = 0.0,
    alpha: float = 0.01,
    power: float = 0.95,
    max_mde: float = 0.05,
    min_effect: float = 0.01,
    min_pairs: int = MIN_PAIRS,
    compares: int = 10_000,
    seed: int = 0,
) -> dict:
    """The auto gate against a baseline of ``runs`` runs in ``runs`` blocks (issue 45), by simulation: run k
    of either side is ``block effect k`` (SD ``block``, shared by both sides: order, kind, time slot) plus its
    own noise (SD ``within``); the candidate is shifted by ``shift``. Looks at ``LOOKS`` below ``runs`` and at
    ``runs`` (the cap: a candidate run needs a partner), each at ``alpha / len(LOOKS)``; from ``min_pairs``
    pairs on the figure is judged on the paired differences, below on independent runs (all the baseline's).
    Returns the shares called SLOWER, FASTER, SAME, left NOT_GATEABLE, and the mean candidate runs used."""
    rng = np.random.default_rng(seed)
    level = look_alpha(alpha)
    looks = [k for k in LOOKS if k < runs] + [runs]
    effect = rng.normal(0.0, block, size=(compares, runs))
    ref = effect + rng.normal(0.0, within, size=(compares, runs))
    cand = effect + math.log1p(shift) + rng.normal(0.0, within, size=(compares, runs))
    outcome = np.zeros(compares, dtype=int)  # 0 undecided, 1 SLOWER, 2 FASTER, 3 SAME, 4 NOT_GATEABLE
    used = np.full(compares, runs)
    for n in looks:
        c = cand[:, :n]
        if n >= min_pairs:
            diff = c - ref[:, :n]
            d, df = diff.mean(1), n - 1
            se = diff.std(1, ddof=1) / math.sqrt(n)
        else:
            df = runs + n - 2
            ss = ((ref - ref.mean(1, keepdims=True)) ** 2).sum(1) + ((c - c.mean(1, keepdims=True)) ** 2).sum(
                1
            )
            se = np.sqrt(ss / df) * math.sqrt(1.0 / runs + 1.0 / n)
            d = c.mean(1) - ref.mean(1)
        _LookRule(level, power, max_mde, min_effect).look(outcome, used, d, se, df, n, last=n == looks[-1])
    return {
        "within": within,
        "block": block,
        "runs": runs,
        "shift": shift,
        "slower": float(np.mean(outcome == 1)),
        "faster": float(np.mean(outcome == 2)),
        "same": float(np.mean(outcome == 3)),
        "not_gateable": float(np.mean(outcome == 4)),
        "mean_runs": float(np.mean(used)),
    }
