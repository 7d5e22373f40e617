"""Noise between machines: a candidate measured on a machine its baseline never saw (pure: no torch).

Runs of one machine share more than a stack: its host-to-device links, NUMA placement, power delivery and
clocks. Over five lent H100s, 76 of 288 figures of the default suite differed more between machines than
between fresh processes of one machine (host-to-device copy bandwidth 6% on one machine, launch-bound
figures 13-22%): a candidate on a new machine, judged against run-to-run noise alone, read a machine as a
change. Where the baseline holds runs of two or more machines, the gate measures that component too:

* ``sigma_run``: the pooled standard deviation of log run figures about each machine's own mean (both
  sides), ``df_run`` = runs - machines;
* ``s_mm``: the standard deviation of the baseline's machine means (``M`` machines), which holds the
  machine component plus each mean's run noise: ``sigma_machine^2 = max(0, s_mm^2 - sigma_run^2 * h)``
  with ``h`` the mean of ``1/runs`` over the baseline's machines;
* the change's variance: ``sigma_machine^2 * (1/M + 1/M_c) + sigma_run^2 * (h/M + h_c/M_c)`` (the
  candidate's ``M_c`` machines, none in the baseline), never less than the run noise alone gives, with
  Satterthwaite's degrees of freedom (few machines: few degrees of freedom, a wide interval, a large MDE).

A baseline of one machine cannot tell machines apart: ``cross_machine`` returns None there and the verdict
says that machine-to-machine noise is unknown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CrossMachine:
    """The change's standard error (log scale) and degrees of freedom across machines."""

    se: float
    df: float
    sigma_machine: float
    sigma_run: float
    machines: int  # the baseline's

    def as_dict(self) -> dict:
        return {
            "se_log": self.se,
            "df": self.df,
            "sigma_machine_log": self.sigma_machine,
            "sigma_run_log": self.sigma_run,
            "baseline_machines": self.machines,
        }


def new_machines(ref_machines: Sequence[str], cand_machines: Sequence[str]) -> bool:
    """The candidate ran on a machine the baseline holds no run of (every run's machine known)."""
    if not ref_machines or not cand_machines or not all((*ref_machines, *cand_machines)):
        return False
    return bool(set(cand_machines) - set(ref_machines))


def _groups(logs: Sequence[float], machines: Sequence[str]) -> list[list[float]]:
    out: dict[str, list[float]] = {}
    for x, m in zip(logs, machines):
        out.setdefault(m, []).append(x)
    return list(out.values())


def _run_noise2(groups: Sequence[Sequence[float]]) -> tuple[float, int]:
    """(the pooled variance of log run figures about each machine's own mean, its degrees of freedom)."""
    df_run = sum(len(g) - 1 for g in groups)
    ss_run = sum(sum((x - sum(g) / len(g)) ** 2 for x in g) for g in groups)
    return (ss_run / df_run if df_run else 0.0), df_run


def _machine_means2(groups: Sequence[Sequence[float]]) -> tuple[float, float]:
    """(the variance of the machines' mean log figures, ``h``: the mean of ``1/runs`` over the machines)."""
    means = [sum(g) / len(g) for g in groups]
    grand = sum(means) / len(means)
    s_mm2 = sum((x - grand) ** 2 for x in means) / (len(means) - 1)
    return s_mm2, sum(1 / len(g) for g in groups) / len(groups)


@dataclass(frozen=True)
class MachineSpread:
    """How much machines of one kind differ on one figure (log scale): the between-machine component
    ``sigma_machine`` (the machine means' spread less their run noise, never below zero) and the run noise
    ``sigma_run`` within a machine, from ``machines`` machines and ``runs`` runs."""

    sigma_machine: float
    sigma_run: float
    machines: int
    runs: int
    df_run: int


def machine_spread(logs: Sequence[float], machines: Sequence[str]) -> MachineSpread | None:
    """The estimator ``cross_machine`` uses on a baseline's machines, for one pool of runs (log run figures,
    one machine per run): None where it cannot be told apart from run noise (fewer than two machines, or no
    machine with two runs)."""
    if len(logs) != len(machines):
        raise ValueError("one machine per run is needed")
    groups = _groups(logs, machines)
    s_run2, df_run = _run_noise2(groups)
    if len(groups) < 2 or not df_run:
        return None
    s_mm2, h = _machine_means2(groups)
    sigma_m2 = max(0.0, s_mm2 - s_run2 * h)
    return MachineSpread(math.sqrt(sigma_m2), math.sqrt(s_run2), len(groups), len(logs), df_run)


def cross_machine(
    ref_logs: Sequence[float],
    ref_machines: Sequence[str],
    cand_logs: Sequence[float],
    cand_machines: Sequence[str],
) -> CrossMachine | None:
    """The machine-aware standard error of ``mean(cand) - mean(ref)`` (log run figures, each side's mean
    the mean of its machines' means), or None where the baseline holds fewer than two machines."""
    if len(ref_logs) != len(ref_machines) or len(cand_logs) != len(cand_machines):
        raise ValueError("one machine per run is needed on each side")
    ref_g, cand_g = _groups(ref_logs, ref_machines), _groups(cand_logs, cand_machines)
    big_m, m_c = len(ref_g), len(cand_g)
    if big_m < 2:
        return None
    s_run2, df_run = _run_noise2((*ref_g, *cand_g))
    s_mm2, h = _machine_means2(ref_g)
    h_c = sum(1 / len(g) for g in cand_g) / m_c
    a1 = 1 / big_m + 1 / m_c  # on s_mm2
    a2 = h / big_m + h_c / m_c - a1 * h  # on s_run2 (negative where the runs are few)
    within_only = s_run2 * (h / big_m + h_c / m_c)
    var = a1 * s_mm2 + a2 * s_run2
    sigma_m2 = max(0.0, s_mm2 - s_run2 * h)
    if var <= within_only and df_run:
        return CrossMachine(
            math.sqrt(within_only), float(df_run), math.sqrt(sigma_m2), math.sqrt(s_run2), big_m
        )
    denom = (a1 * s_mm2) ** 2 / (big_m - 1) + ((a2 * s_run2) ** 2 / df_run if df_run else 0.0)
    df = var**2 / denom if denom > 0 else float(big_m - 1)
    return CrossMachine(math.sqrt(var), max(1.0, df), math.sqrt(sigma_m2), math.sqrt(s_run2), big_m)
