"""The one-machine rule's pieces against numbers worked out by hand (aorta/gate/verdicts/machine_rule.py, issue
58): the combined standard error and Satterthwaite's degrees of freedom, p at a zero noise, a verdict whose
spread is unknown, the interval both sides, and the machines as a reader names them."""

import math

import pytest
from scipy import stats as sps

from aorta.gate.stats.machine_spread import Spread
from aorta.gate.verdicts.machine_rule import (
    WHAT_TO_DO,
    _band,
    across_one_machine,
    combined,
    machine_name,
    machines_named,
)
from aorta.gate.verdicts.verdict import SLOWER, UNSURE, Verdict

SPREAD = Spread(sigma=0.01, machines=4, source="measured on 4 H100s", measured=True)


def test_the_combined_error_adds_both_machines_offsets_to_the_run_noise_with_satterthwaites_df():
    # machine var 2 * 0.01^2 = 2e-4, run se 0.02: var 6e-4; df = var^2 / ((2e-4)^2 / 3 + 0.02^4 / 8)
    se_c, df_c, p = combined(0.03, 0.02, 8.0, SPREAD)
    var = 2e-4 + 4e-4
    df = var**2 / ((2e-4) ** 2 / 3 + 0.02**4 / 8)  # 3.6e-7 / (1.333e-8 + 2e-8) = 10.8
    assert se_c == pytest.approx(math.sqrt(var), rel=1e-12)
    assert df_c == pytest.approx(df, rel=1e-12) and df_c == pytest.approx(10.8, rel=1e-9)
    assert p == pytest.approx(2 * sps.t.sf(0.03 / math.sqrt(var), df), rel=1e-12)


def test_one_machine_measured_gives_the_spread_one_degree_of_freedom_and_no_run_df_leaves_the_spreads():
    one = Spread(sigma=0.01, machines=1, source="one", measured=True)
    se_c, df_c, _ = combined(0.0, 0.0, 0.0, one)  # no run noise: df from the spread alone (1)
    assert (se_c, df_c) == (pytest.approx(math.sqrt(2e-4)), 1.0)
    two = Spread(sigma=0.01, machines=3, source="three", measured=True)
    assert combined(0.0, 0.0, 0.0, two)[1] == pytest.approx(2.0)


def test_no_noise_at_all_gives_p_0_for_a_change_and_1_for_none():
    still = Spread(sigma=0.0, machines=4, source="s", measured=True)
    assert combined(0.01, 0.0, 5.0, still)[2] == 0.0
    assert combined(0.0, 0.0, 5.0, still) == (0.0, 5.0, 1.0)


def test_an_unknown_spread_is_infinite_with_one_df_and_p_1():
    assert combined(0.5, 0.01, 5.0, Spread(math.inf, 2, "unknown", False)) == (math.inf, 1.0, 1.0)


def verdict(change: float) -> Verdict:
    return Verdict("b", "device_ms", "ms", False, SLOWER, "+x", change_ratio=change, p_value=1e-6)


def test_a_change_beyond_the_spread_stands_with_the_combined_interval_both_ends():
    d = math.log1p(0.2)
    out = across_one_machine(
        verdict(0.2), se=0.01, df=8.0, spread=SPREAD, ref_machine="m1", cand_machines=["m2"], alpha=0.01
    )
    se_c, df_c, _ = combined(d, 0.01, 8.0, SPREAD)
    tq = sps.t.ppf(0.995, df_c)
    assert out.outcome == SLOWER
    assert (out.ci_low, out.ci_high) == (
        pytest.approx(math.expm1(d - tq * se_c)),
        pytest.approx(math.expm1(d + tq * se_c)),
    )
    assert (
        "beyond the machine spread: baseline machine m1, this run's m2, machines of this kind differ by 1% (measured on 4 H100s)"
        in out.reason
    )


def test_a_change_an_unknown_spread_could_explain_is_unsure_saying_what_to_do():
    def unknown_spread(why: str, **unsure):
        return across_one_machine(
            verdict(0.2),
            se=0.01,
            df=8.0,
            spread=Spread(math.inf, 2, why, False),
            ref_machine="m1",
            cand_machines=["m2"],
            alpha=0.01,
            **unsure,
        )

    out = unknown_spread("no spread for this figure", unsure=UNSURE)
    assert out.outcome == "UNSURE"
    assert (
        out.reason == f"+x; but baseline machine m1, this run's m2: no spread for this figure; {WHAT_TO_DO}"
    )
    default = unknown_spread("s")  # the rule's own default for ``unsure``
    assert default.outcome == "UNSURE"


def test_bands_below_a_factor_of_2_are_percent_above_a_factor():
    assert _band(math.log(1.5)) == "+-50%"
    assert _band(math.log(2.0)) == "a factor of 2"
    assert _band(math.log(2.5)) == "a factor of 2.5"


@pytest.mark.parametrize(
    ("machine_id", "name"),
    [
        ("GPU-a609d101-1234-5678-9abc-def012345678", "a609d101"),
        ("a609d101-1234-5678-9abc-def012345678", "a609d101"),
        ("gpu-a609d101-1234-5678-9abc-def012345678", "gpu-a609d101-1234-5678-9abc-def012345678"),
        ("host-1", "host-1"),
        ("a609d1-1234-5678-9abc-def012345678", "a609d1-1234-5678-9abc-def012345678"),  # 6 digits: not a UUID
        ("a609d101-1234-5678-9abc", "a609d101-1234-5678-9abc"),  # 4 parts
    ],
)
def test_a_machine_is_named_by_its_gpu_uuids_first_8_digits(machine_id, name):
    assert machine_name(machine_id) == name


def test_machines_are_named_once_each_in_order_or_a_question_mark():
    assert machines_named(["b", "", "a", "b"]) == "b+a"
    assert machines_named(["", ""]) == "?"


def test_run_noise_of_one_degree_of_freedom_counts_in_satterthwaites_df():
    # denominator (2e-4)^2 / 3 + 0.02^4 / 1 = 1.333e-8 + 1.6e-7
    df = (6e-4) ** 2 / ((2e-4) ** 2 / 3 + 0.02**4 / 1)
    assert combined(0.03, 0.02, 1.0, SPREAD)[1] == pytest.approx(df, rel=1e-12)


def test_the_machine_spread_is_said_to_two_figures():
    spread = Spread(sigma=0.0095, machines=4, source="measured", measured=True)
    out = across_one_machine(
        verdict(0.2), se=0.01, df=8.0, spread=spread, ref_machine="m1", cand_machines=["m2"], alpha=0.01
    )
    assert "machines of this kind differ by 0.95% (measured)" in out.reason
