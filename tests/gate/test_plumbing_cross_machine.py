"""``decide`` on a baseline saved across three machines and a candidate on a fourth (issue 58's plumbing): the
figure is judged unpaired (blocks given or not) against the noise between machines, its standard error,
degrees of freedom, noise and words taken from ``cross_machine`` of the runs' log figures, each checked here
against that function called by hand on the same runs."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from aorta.gate.stats.machine_noise import cross_machine
from aorta.gate.verdicts.verdict import SLOWER, Policy, decide

REF = [10.0, 10.2, 10.1, 10.3, 10.5, 10.4, 10.1, 10.0, 10.2]  # three runs on each of m1, m2, m3
REF_M = ["m1"] * 3 + ["m2"] * 3 + ["m3"] * 3
CAND = [14.0, 14.3, 13.8, 14.1, 13.9]  # a fourth machine, about 37% slower
CAND_M = ["m4"] * 5


def runs(values: list[float]) -> list[list[float]]:
    return [[v] * 10 for v in values]


def test_a_baseline_of_two_machines_judges_a_third_against_the_noise_between_machines():
    policy = Policy()  # alpha 0.01, power 0.95, MDE bound 5%
    v = decide(
        "b", "device_ms", "ms", False, runs(REF), runs(CAND), policy=policy,
        ref_machines=REF_M, cand_machines=CAND_M,
        ref_blocks=[f"k{i % 5}" for i in range(9)], cand_blocks=[f"k{i}" for i in range(5)],
    )  # fmt: skip
    cross = cross_machine([math.log(x) for x in REF], REF_M, [math.log(x) for x in CAND], CAND_M)
    assert cross is not None and cross.machines == 3
    ref_val = math.exp(sum(math.log(x) for x in REF) / 9)
    cand_val = math.exp(sum(math.log(x) for x in CAND) / 5)
    d = math.log(cand_val) - math.log(ref_val)
    assert v.pairs == 0  # five blocks shared, yet unpaired: the machines are the larger noise
    assert (v.ref_value, v.cand_value) == (pytest.approx(ref_val), pytest.approx(cand_val))
    assert v.p_value == pytest.approx(2 * sps.t.sf(abs(d) / cross.se, cross.df), rel=1e-9)
    assert v.noise_sigma == pytest.approx(math.hypot(cross.sigma_machine, cross.sigma_run), rel=1e-9)
    tq = sps.t.ppf(1 - 0.01 / 2, cross.df)
    assert (v.ci_low, v.ci_high) == (
        pytest.approx(math.expm1(d - tq * cross.se), rel=1e-9),
        pytest.approx(math.expm1(d + tq * cross.se), rel=1e-9),
    )
    assert v.mde == pytest.approx(math.expm1((tq + sps.t.ppf(0.95, cross.df)) * cross.se), rel=1e-9)
    assert (
        f"9 vs 5 runs; another machine: noise between the baseline's 3 machines "
        f"{cross.sigma_machine * 100:.2g}%, between runs {cross.sigma_run * 100:.2g}%"
    ) in v.reason
    # the MDE (df 2) exceeds the 5% bound, but the change is past it and significant: judged, SLOWER
    assert v.mde > 0.05 and abs(v.change_ratio) > v.mde and v.p_value < 0.01
    assert v.outcome == SLOWER
