"""Runs as blocks (aorta.gate.runs.blocks, issue 45): what a baseline run and a candidate run share is paired out; a
figure is judged on the paired differences from MIN_PAIRS shared blocks on, as independent runs below that;
the check run is never a sample."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_tiers import examples

from aorta.gate.runs import blocks
from aorta.gate.runs.blocks import MIN_PAIRS, pair
from aorta.gate.verdicts.verdict import NOT_GATEABLE, SAME, SLOWER, decide


def keys(n, kind="lean"):
    return [blocks.block_key(blocks.run_block(k + 1, kind, "sel", True)) for k in range(n)]


def test_a_block_is_seed_kind_and_selection_and_a_run_without_one_is_a_sample_unpaired():
    a = blocks.run_block(3, "lean", "abc", True)
    assert blocks.block_key(a) == "seed 3, lean, selection abc"
    assert blocks.block_key(blocks.run_block(3, "full", "abc", False)) != blocks.block_key(a)
    assert blocks.block_key(None) is None and blocks.is_sample(None)  # an older aorta's run
    assert not blocks.is_sample(blocks.run_block(0, "full", "abc", False))  # the check run
    with pytest.raises(ValueError, match="'lean' or 'full'"):
        blocks.run_block(1, "restricted", "abc", True)


def test_the_selection_id_ignores_the_order_the_seed_gives():
    assert blocks.selection_id(["a", "b"]) == blocks.selection_id(["b", "a"]) != blocks.selection_id(["a"])


def test_pairs_from_min_pairs_shared_blocks_on_and_counts_the_runs_left_without_a_partner():
    ref = [10.0] * (MIN_PAIRS + 1)
    assert pair(ref[: MIN_PAIRS - 1], keys(MIN_PAIRS - 1), ref[: MIN_PAIRS - 1], keys(MIN_PAIRS - 1)) is None
    p = pair(ref, keys(MIN_PAIRS + 1), [11.0] * MIN_PAIRS, keys(MIN_PAIRS))
    assert p is not None and p.pairs == MIN_PAIRS and p.unpaired_ref == 1 and p.unpaired_cand == 0
    assert p.mean == pytest.approx(math.log(1.1))
    assert "1 run(s) without a partner left out" in p.note()
    assert pair(ref, [None] * len(ref), ref, keys(len(ref))) is None  # a run that names no block


def test_runs_of_one_block_are_averaged_on_the_log_scale_first():
    k = keys(MIN_PAIRS)
    p = pair([10.0] * MIN_PAIRS + [40.0], [*k, k[0]], [20.0] * MIN_PAIRS, k)
    assert p is not None and p.pairs == MIN_PAIRS
    assert p.diffs[0] == pytest.approx(math.log(20.0) - math.log(20.0))  # geometric mean of 10 and 40


@settings(max_examples=examples(60), deadline=None)
@given(
    effects=st.lists(st.floats(-0.3, 0.3), min_size=MIN_PAIRS, max_size=12),
    noise=st.lists(st.floats(-0.005, 0.005), min_size=24, max_size=24),
    change=st.floats(-0.1, 0.1),
)
def test_what_both_sides_of_a_block_share_cancels_whatever_its_size(effects, noise, change):
    """A block effect (order, kind, time slot) of up to +-30% on both sides leaves the paired change and its
    noise as they are without it: only the stack's change and the run noise remain."""
    n = len(effects)
    ref0 = [math.exp(noise[i]) for i in range(n)]
    cand0 = [math.exp(change + noise[12 + i]) for i in range(n)]
    plain = pair(ref0, keys(n), cand0, keys(n))
    shifted = pair(
        [r * math.exp(e) for r, e in zip(ref0, effects)],
        keys(n),
        [c * math.exp(e) for c, e in zip(cand0, effects)],
        keys(n),
    )
    assert plain is not None and shifted is not None
    assert shifted.mean == pytest.approx(plain.mean, abs=1e-9)
    assert shifted.sd == pytest.approx(plain.sd, abs=1e-9)


def _runs(values):
    return [[v] * 10 for v in values]


def test_a_figure_whose_runs_share_blocks_is_judged_within_them():
    """Run k of each side ran in order k: +-8% between orders, 0.2% within. As independent runs that is
    too noisy to judge; paired, a 3% slowdown is SLOWER and no change is SAME."""
    n = 8
    order = [1.0 + 0.08 * ((-1) ** k) * (k % 3) for k in range(n)]
    jitter = [1.0 + 0.002 * ((-1) ** (k // 2)) for k in range(n)]
    ref = [10.0 * o for o in order]
    same = [10.0 * o * j for o, j in zip(order, jitter)]
    slow = [10.3 * o * j for o, j in zip(order, jitter)]
    args = ("b", "device_ms", "ms", False)
    unpaired = decide(*args, _runs(ref), _runs(slow))
    assert unpaired.outcome == NOT_GATEABLE and unpaired.pairs == 0
    paired = decide(*args, _runs(ref), _runs(slow), ref_blocks=keys(n), cand_blocks=keys(n))
    assert paired.outcome == SLOWER and paired.pairs == n
    assert f"{n} pairs (runs paired by order seed, kind and selection)" in paired.reason
    aa = decide(*args, _runs(ref), _runs(same), ref_blocks=keys(n), cand_blocks=keys(n))
    assert aa.outcome == SAME and aa.mde is not None and aa.mde < 0.05


def test_a_candidate_on_a_new_machine_against_several_machines_is_judged_unpaired():
    n = MIN_PAIRS
    v = decide(
        "b",
        "device_ms",
        "ms",
        False,
        _runs([10.0, 10.1, 9.9, 10.0, 10.05]),
        _runs([10.0, 10.02, 9.98, 10.01, 10.0]),
        ref_blocks=keys(n),
        cand_blocks=keys(n),
        ref_machines=["m1", "m2", "m1", "m2", "m1"],
        cand_machines=["m3"] * n,
    )
    assert v.pairs == 0  # the machine-noise path judges it, on independent runs


def test_a_compare_takes_the_baselines_lean_seeds_in_order_and_its_check_run_if_a_sample():
    entries = [{"block": blocks.run_block(s, "lean", "x", True)} for s in (1, 2, 3, 2)]
    assert blocks.paired_seeds(entries) == [1, 2, 3]
    assert blocks.check_was_sample(entries) == 0
    assert blocks.check_was_sample([{"block": blocks.run_block(0, "full", "x", True)}]) == 1
    assert blocks.paired_seeds([*entries, {"id": "old"}]) == []  # a run of an older aorta: unpaired


def test_a_paired_suspect_gets_no_confirmation_run_that_it_would_leave_out():
    from aorta.gate.comparison.compare import Comparison
    from aorta.gate.verdicts.verdict import Verdict

    def slower(name, pairs):
        return Verdict(
            name, "device_ms", "ms", False, SLOWER, "", change_ratio=0.1, p_value=0.001, pairs=pairs
        )

    comp = Comparison("a", "b", "m", "m", verdicts=[slower("paired", 6), slower("unpaired", 0)])
    assert comp.suspects() == ["unpaired"]
