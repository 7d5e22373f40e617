"""Another machine is not a regression: a baseline of one machine, a candidate on another (pure: no torch).

A baseline whose runs all come from one machine measures the noise between fresh processes of that
machine, not between machines. A candidate on another machine of the kind carries that machine's own
offset on top of any change of the stack: on two H100s with identical software, hetero_kernels'
``tiny_us_per_kernel_alone`` at 16 streams read +1.4% SLOWER after confirmation while its host enqueued 30%
slower (issue 36). ``aorta.gate.stats.machine_spread`` holds how much machines of one kind differ, measured.

The rule, for a SLOWER or FASTER found on run noise alone. Two machines' offsets are independent, each of
SD ``sigma`` (the figure's measured machine spread), so with no change in the stack the change's log ``d``
is ``N(0, 2 sigma^2 + se^2)``, ``se`` the run noise's standard error. The change stands where it is
significant at ``alpha`` against that variance: ``|d| > t[1 - alpha/2, df] * sqrt(2 sigma^2 + se^2)``,
with Satterthwaite's degrees of freedom from the machine spread's (machines measured - 1) and the run
noise's; the figure's interval and p become the combined ones and the reason says the machine spread it
beat. Otherwise the machines could explain it: UNSURE, naming both machines and what to do. A baseline
of two machines or more measures its own machine noise (``aorta.gate.stats.machine_noise``) and never gets here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar, Protocol, Self, TypeVar

from aorta.gate.stats.machine_spread import Spread


class Judged(Protocol):
    """What the rule reads of a verdict and changes in it (``aorta.gate.verdicts.verdict.Verdict``, which applies this
    rule: named here by what it has, so the rule need not import the module that imports it)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]  # a dataclass: the rule ``replace``s its interval and p

    @property
    def outcome(self) -> str: ...

    @property
    def reason(self) -> str: ...

    @property
    def change_ratio(self) -> float | None: ...

    @property
    def p_value(self) -> float | None: ...

    def with_outcome(self, outcome: str, reason: str) -> Self: ...


V = TypeVar("V", bound=Judged)

WHAT_TO_DO = (
    "save runs of this machine to the baseline, save the baseline from several machines (one "
    "--aorta-baseline-dir), or use `aorta ab` (both stacks interleaved on this machine)"
)


def machine_name(machine_id: str) -> str:
    """A machine as a reader tells it apart: a GPU UUID's first 8 hex digits (``a609d101``), else the id."""
    parts = machine_id.removeprefix("GPU-").split("-")
    return parts[0] if len(parts) == 5 and len(parts[0]) == 8 else machine_id


def machines_named(ids: Sequence[str]) -> str:
    return "+".join(dict.fromkeys(machine_name(m) for m in ids if m)) or "?"


def _band(log_width: float) -> str:
    """``+-6.7%``; ``a factor of 2.5`` past +-100% (a log band is symmetric in ratio, not in percent)."""
    if log_width < math.log(2.0):
        return f"+-{math.expm1(log_width) * 100:.2g}%"
    return f"a factor of {math.exp(log_width):.3g}"


def combined(d: float, se: float, df: float, spread: Spread) -> tuple[float, float, float]:
    """(the combined standard error, its degrees of freedom, the two-sided p of ``d`` against it)."""
    from scipy import stats as sps  # when used: its import costs every start 0.7 s

    machine_var = 2.0 * spread.sigma**2  # both machines' offsets
    var = machine_var + se**2
    if math.isinf(var):
        return math.inf, 1.0, 1.0
    df_m = max(1, spread.machines - 1)
    denom = machine_var**2 / df_m + (se**4 / df if df > 0 else 0.0)
    df_c = var**2 / denom if denom > 0 else df
    se_c = math.sqrt(var)
    p = (0.0 if d else 1.0) if se_c == 0 else float(2.0 * sps.t.sf(abs(d) / se_c, df_c))
    return se_c, max(1.0, df_c), p


def across_one_machine(
    verdict: V,
    *,
    se: float,
    df: float,
    spread: Spread,
    ref_machine: str,
    cand_machines: Sequence[str],
    alpha: float,
    unsure: str = "UNSURE",
) -> V:
    """The SLOWER / FASTER ``verdict`` (a ``aorta.gate.verdicts.verdict.Verdict`` found on run noise: ``se`` and
    ``df`` its standard error of the log change and degrees of freedom) of a candidate on ``cand_machines``
    against a baseline of ``ref_machine`` alone: kept where the change beats the machine spread, else
    ``unsure`` with the reason why and what to do (see the module doc)."""
    from scipy import stats as sps  # when used: its import costs every start 0.7 s

    if verdict.change_ratio is None:  # nothing was compared: nothing for the machines to explain
        return verdict
    d = math.log1p(verdict.change_ratio)
    se_c, df_c, p = combined(d, se, df, spread)
    # Satterthwaite's df can exceed the run noise's (a still baseline, the machine spread's own df): another
    # machine never makes a change surer than run noise alone says
    p = max(p, verdict.p_value or 0.0)
    both = f"baseline machine {machine_name(ref_machine)}, this run's {machines_named(cand_machines)}"
    sigma = f"machines of this kind differ by {spread.sigma * 100:.2g}% ({spread.source})"
    if math.isinf(se_c):
        return verdict.with_outcome(unsure, f"{verdict.reason}; but {both}: {spread.source}; {WHAT_TO_DO}")
    tq = float(sps.t.ppf(1.0 - alpha / 2.0, df_c))
    band = _band(tq * se_c)
    out = replace(verdict, p_value=p, ci_low=math.expm1(d - tq * se_c), ci_high=math.expm1(d + tq * se_c))
    if abs(d) > tq * se_c:
        return out.with_outcome(
            verdict.outcome,
            f"{verdict.reason}; beyond the machine spread: {both}, {sigma}: past {band} "
            f"with the run noise, p={p:.2g}",
        )
    return out.with_outcome(
        unsure,
        f"{verdict.reason}; but another machine could explain it: {both}, {sigma}, so a change within "
        f"{band} could be the machine (p={p:.2g} with it): {WHAT_TO_DO}",
    )
