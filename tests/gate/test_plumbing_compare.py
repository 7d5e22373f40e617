"""The plumbing between the gate's pure functions (issue 58): a whole ``compare_runs`` of known runs, each figure
it gives (verdict, pairs, degrees of freedom, the level its looks test at, run counts, which runs it used)
asserted against a value worked out by hand here. The runs are built so that every wrong choice gives
another answer: the candidate's blocks come in the reverse order of the baseline's, the blocks differ by up to
30% (so pairing by position, or not pairing, cannot find the change), and the change is significant at alpha
tested once but not at alpha shared by five looks."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats as sps

from aorta.gate.baselines import baseline as bl
from aorta.gate.comparison.compare import GateSettings, compare_runs
from aorta.gate.runs.blocks import RUN_KEY, run_block
from aorta.gate.verdicts.verdict import NOT_GATEABLE, SLOWER, UNSURE

H100 = {"backend": "cuda", "gpu_name": "NVIDIA H100 80GB HBM3", "gpu_count": 1}
NAME = "benchmarks/hw_queue/test_x.py::a"

# Run k of either side ran in block k (order seed k): block effects 10, 12, 9, 11, 13 ms
BLOCK_MS = {1: 10.0, 2: 12.0, 3: 9.0, 4: 11.0, 5: 13.0}
# The candidate's run of block k is exp(D[k]) times the baseline's: log differences by block
D = {1: 0.02, 2: 0.03, 3: 0.01, 4: 0.025, 5: 0.015}


def one_run(ms: float, seed: int, when: str) -> dict:
    """A run document of one benchmark whose 10 rounds all took ``ms`` (its figure is ``ms``), in block
    ``seed``."""
    return {
        "machine_info": {"python_version": "3.12.3", "aorta": dict(H100)},
        "datetime": when,
        "version": "5.2.3",
        RUN_KEY: run_block(seed, "lean", "sel", True),
        "benchmarks": [
            {
                "fullname": NAME,
                "name": "a",
                "extra_info": {"aorta_schema": 1, "device_ms_per_iteration": [ms] * 10},
                "stats": {"data": [ms / 1e3] * 10, "median": ms / 1e3},
            }
        ],
    }


def side(values_by_seed: dict[int, float], seeds: list[int], prefix: str) -> dict:
    docs = [one_run(values_by_seed[s], s, f"2026-01-0{i + 1}T00:00:00") for i, s in enumerate(seeds)]
    return bl.combine_runs(docs, [f"{prefix}{i + 1}" for i in range(len(docs))])


BASELINE = side(BLOCK_MS, [1, 2, 3, 4, 5], "b")
# the candidate's runs in the reverse order: run1 is block 5
CANDIDATE = side({s: BLOCK_MS[s] * math.exp(D[s]) for s in BLOCK_MS}, [5, 4, 3, 2, 1], "run")


def by_hand(alpha: float):
    """The paired t test on the log differences, by hand: df = pairs - 1 = 4 (not 5 + 5 - 2 = 8)."""
    diffs = list(D.values())
    mean = statistics.fmean(diffs)  # 0.02
    sd = math.sqrt(sum((x - mean) ** 2 for x in diffs) / 4)  # sqrt(2.5e-4 / 4) = 0.0079057
    se = sd / math.sqrt(5)  # 0.0035355
    p = 2 * sps.t.sf(mean / se, 4)  # t = 5.657: p = 0.0048
    tq = sps.t.ppf(1 - alpha / 2, 4)
    mde = math.expm1((tq + sps.t.ppf(0.95, 4)) * se)
    return mean, sd, se, p, math.expm1(mean - tq * se), math.expm1(mean + tq * se), mde


def test_the_worked_values_are_what_the_test_says():
    mean, sd, se, p, *_ = by_hand(0.01)
    assert (mean, sd, se) == pytest.approx((0.02, 0.0079057, 0.0035355), rel=1e-4)
    assert 0.002 < p < 0.01  # significant tested once at 0.01, not at 0.01 shared by five looks


def test_a_compare_of_blocks_in_reverse_order_pairs_them_by_block_and_tests_at_pairs_minus_1_df():
    comp = compare_runs(BASELINE, CANDIDATE, GateSettings(alpha=0.01))
    (v,) = comp.verdicts
    mean, sd, se, p, low, high, mde = by_hand(0.01)
    assert (comp.ref_runs, comp.cand_runs) == (5, 5)
    assert (v.ref_runs, v.cand_runs, v.pairs) == (5, 5, 5)
    assert v.cand_run_ids == ("run1", "run2", "run3", "run4", "run5")
    assert v.outcome == SLOWER
    assert v.change_ratio == pytest.approx(math.expm1(mean))  # +2.02%
    assert v.p_value == pytest.approx(p, rel=1e-9)  # df 4: at df 8 p would be 0.0005
    assert (v.ci_low, v.ci_high) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))
    assert v.mde == pytest.approx(mde, rel=1e-9)
    assert v.noise_sigma == pytest.approx(sd / math.sqrt(2))  # one run's noise within its block
    # the block's geometric means of each side: the baseline's runs, the candidate's
    assert v.ref_value == pytest.approx(math.exp(statistics.fmean(math.log(x) for x in BLOCK_MS.values())))
    assert "5 pairs (runs paired by order seed, kind and selection)" in v.reason
    assert comp.exit_code == 10


def test_five_looks_test_the_same_pairs_at_alpha_over_five():
    comp = compare_runs(BASELINE, CANDIDATE, GateSettings(alpha=0.01, looks=5))
    (v,) = comp.verdicts
    mean, sd, se, p, low, high, mde = by_hand(0.002)
    assert comp.settings.look_alpha == pytest.approx(0.002)
    assert v.p_value == pytest.approx(p, rel=1e-9)  # the same test ...
    assert v.outcome == UNSURE  # ... not significant at 0.002: suggestive (p < 0.05), not called
    assert v.mde == pytest.approx(mde, rel=1e-9) and v.ci_high == pytest.approx(high, rel=1e-9)
    assert f"p={p:.2g}: suggestive, not significant at 0.002" in v.reason


def test_the_same_runs_without_blocks_are_judged_as_independent_runs_and_cannot_see_the_change():
    def unblocked(doc):
        out = dict(doc)
        out["aorta_runs"] = [{k: x for k, x in e.items() if k != "block"} for e in doc["aorta_runs"]]
        return out

    comp = compare_runs(unblocked(BASELINE), unblocked(CANDIDATE), GateSettings(alpha=0.01))
    (v,) = comp.verdicts
    # between-run noise of the log figures, pooled: the blocks' 13% spread, df = 5 + 5 - 2 = 8
    ref = [math.log(x) for x in BLOCK_MS.values()]
    cand = [math.log(BLOCK_MS[s]) + D[s] for s in BLOCK_MS]
    ss = sum((x - statistics.fmean(ref)) ** 2 for x in ref) + sum(
        (x - statistics.fmean(cand)) ** 2 for x in cand
    )
    sigma = math.sqrt(ss / 8)
    se = sigma * math.sqrt(1 / 5 + 1 / 5)
    assert (v.pairs, v.outcome) == (0, NOT_GATEABLE)
    assert v.noise_sigma == pytest.approx(sigma, rel=1e-9)
    assert v.p_value == pytest.approx(2 * sps.t.sf(0.02 / se, 8), rel=1e-6)


def test_a_candidate_block_held_twice_is_averaged_on_the_log_scale_and_counted_as_two_runs():
    docs = [
        one_run(BLOCK_MS[s] * math.exp(D[s]), s, f"2026-01-0{i + 1}T00:00:00")
        for i, s in enumerate([5, 4, 3, 2, 1])
    ]
    # block 3 again, 4% slower than its first run: its pair's difference is 0.01 + log(1.04) / 2
    docs.append(one_run(BLOCK_MS[3] * math.exp(D[3]) * 1.04, 3, "2026-01-09T00:00:00"))
    cand = bl.combine_runs(docs, [f"run{i + 1}" for i in range(6)])
    comp = compare_runs(BASELINE, cand, GateSettings(alpha=0.01))
    (v,) = comp.verdicts
    diffs = [D[s] + (math.log(1.04) / 2 if s == 3 else 0.0) for s in (5, 4, 3, 2, 1)]
    assert (comp.cand_runs, v.cand_runs, v.pairs) == (6, 6, 5)
    assert v.change_ratio == pytest.approx(math.expm1(statistics.fmean(diffs)), rel=1e-9)
    se = statistics.stdev(diffs) / math.sqrt(5)
    assert v.p_value == pytest.approx(2 * sps.t.sf(statistics.fmean(diffs) / se, 4), rel=1e-9)


# Two figures: A moved 2% with p = 0.0013 (significant at 0.002, the level of each of five looks), B did not move
D_A = {1: 0.02, 2: 0.027, 3: 0.013, 4: 0.0235, 5: 0.0165}
D_B = {1: 0.01, 2: -0.012, 3: 0.004, 4: -0.003, 5: 0.0}


def two_figure_side(by_seed: dict[int, tuple[float, float]], seeds: list[int], prefix: str) -> dict:
    docs = []
    for i, s in enumerate(seeds):
        doc = one_run(by_seed[s][0], s, f"2026-01-0{i + 1}T00:00:00")
        second = dict(doc["benchmarks"][0], fullname=NAME[:-1] + "b", name="b")
        ms = by_seed[s][1]
        second["extra_info"] = {"aorta_schema": 1, "device_ms_per_iteration": [ms] * 10}
        second["stats"] = {"data": [ms / 1e3] * 10, "median": ms / 1e3}
        doc["benchmarks"].append(second)
        docs.append(doc)
    return bl.combine_runs(docs, [f"{prefix}{i + 1}" for i in range(len(docs))])


def test_the_false_alarm_control_of_a_sequential_gate_runs_at_the_looks_level_not_alpha():
    """Benjamini-Hochberg over the comparison's two tests: A's adjusted p is 2 x 0.0013 = 0.0025. At 0.002 (alpha
    0.01 shared by five looks) A's own test passes, but its adjusted p must reach 0.002 too: UNSURE. Run at the
    gate's whole alpha, 0.01, the control would keep it SLOWER, as a gate that looks once does."""
    diffs = list(D_A.values())
    se = statistics.stdev(diffs) / math.sqrt(5)
    p_a = 2 * sps.t.sf(statistics.fmean(diffs) / se, 4)
    assert 0.001 < p_a < 0.002
    ref = two_figure_side({s: (BLOCK_MS[s], BLOCK_MS[s] + 5) for s in BLOCK_MS}, [1, 2, 3, 4, 5], "b")
    cand = two_figure_side(
        {s: (BLOCK_MS[s] * math.exp(D_A[s]), (BLOCK_MS[s] + 5) * math.exp(D_B[s])) for s in BLOCK_MS},
        [5, 4, 3, 2, 1],
        "run",
    )
    once = compare_runs(ref, cand, GateSettings(alpha=0.01)).verdicts  # tested once: at 0.01, BH too
    assert {v.benchmark.rsplit("::", 1)[-1]: v.outcome for v in once}["a"] == SLOWER
    looked = compare_runs(ref, cand, GateSettings(alpha=0.01, looks=5))
    a = {v.benchmark.rsplit("::", 1)[-1]: v for v in looked.verdicts}["a"]
    assert a.p_value == pytest.approx(p_a, rel=1e-9)
    assert a.p_adjusted == pytest.approx(2 * p_a, rel=1e-6)
    assert a.outcome == UNSURE
    assert (
        f"not significant after Benjamini-Hochberg over the comparison's 2 tests: adjusted p={2 * p_a:.2g} >= 0.002"
        in a.reason
    )
