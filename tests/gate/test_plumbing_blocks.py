"""Runs as blocks (aorta.gate.runs.blocks) with data where the wrong choice gives another answer (issue 58):
blocks that come in different orders on the two sides, a block held twice on one side, values where the first
and the last, N and -N, a key and a position differ; every figure worked out by hand in the test."""

from __future__ import annotations

import hashlib
import math
import types

import pytest

from aorta.gate.runs import blocks
from aorta.gate.runs.blocks import pair


def key(seed: int, kind: str = "lean", selection: str = "sel") -> str:
    return blocks.block_key(blocks.run_block(seed, kind, selection, True))


def test_a_run_records_its_seed_kind_selection_sample_and_start_and_nothing_else():
    assert blocks.run_block("3", "lean", "abc", 1, "fork") == {
        "seed": 3,
        "kind": "lean",
        "selection": "abc",
        "sample": True,
        "start": "fork",
    }
    assert blocks.run_block(2, "full", "abc", 0)["start"] == "exec"  # a process started from nothing
    assert blocks.run_block(2, "full", "abc", 0)["sample"] is False


def test_the_selection_id_is_the_first_12_hex_of_the_sorted_names_one_a_line():
    assert blocks.selection_id(["b::y", "a::x"]) == hashlib.sha256(b"a::x\nb::y").hexdigest()[:12]
    assert len(blocks.selection_id(["a"])) == 12


def test_a_benchmark_item_is_one_that_takes_the_benchmark_fixture():
    assert blocks.is_benchmark_item(types.SimpleNamespace(fixturenames=["tmp_path", "benchmark"]))
    assert not blocks.is_benchmark_item(types.SimpleNamespace(fixturenames=["tmp_path"]))
    assert not blocks.is_benchmark_item(types.SimpleNamespace())  # no fixtures at all (a doctest item)


def test_a_run_is_a_sample_unless_its_block_says_otherwise():
    assert blocks.is_sample({"seed": 1}) is True  # a block that does not say: a sample
    assert blocks.is_sample({"seed": 1, "sample": True}) is True
    assert blocks.is_sample({"seed": 1, "sample": False}) is False
    assert blocks.is_sample("not a block") is True


def test_blocks_in_another_order_on_the_candidates_side_pair_by_key_not_by_position():
    # baseline runs in seed order 1..5, the candidate's in 5..1; each candidate run is its block's baseline
    # run times (1 + seed / 100): paired by key every difference is log(1 + seed / 100); by position they
    # would mix blocks (10 vs 50 ...)
    ref = [10.0 * s for s in range(1, 6)]
    cand = [10.0 * s * (1 + s / 100) for s in range(5, 0, -1)]
    p = pair(ref, [key(s) for s in range(1, 6)], cand, [key(s) for s in range(5, 0, -1)])
    assert p is not None and p.pairs == 5
    assert p.diffs == pytest.approx(tuple(math.log(1 + s / 100) for s in range(5, 0, -1)))  # candidate order
    assert p.ref_logs == pytest.approx(tuple(math.log(10.0 * s) for s in range(5, 0, -1)))
    assert p.mean == pytest.approx(math.log(1.05 * 1.04 * 1.03 * 1.02 * 1.01) / 5)
    assert (p.unpaired_ref, p.unpaired_cand) == (0, 0)


def test_a_slower_candidate_gives_positive_differences_and_a_faster_one_negative():
    k = [key(s) for s in range(1, 6)]
    slower = pair([10.0] * 5, k, [11.0] * 5, k)
    faster = pair([11.0] * 5, k, [10.0] * 5, k)
    assert slower is not None and faster is not None
    assert slower.mean == pytest.approx(math.log(1.1)) and faster.mean == pytest.approx(-math.log(1.1))


def test_runs_left_without_a_partner_are_counted_on_each_side():
    ref_keys = [key(s) for s in (1, 2, 3, 4, 5, 6)]  # seed 6: the baseline's alone
    cand_keys = [key(s) for s in (1, 2, 3, 4, 5, 7, 8)]  # seeds 7, 8: the candidate's alone
    p = pair([10.0] * 6, ref_keys, [10.0] * 7, cand_keys)
    assert p is not None and (p.pairs, p.unpaired_ref, p.unpaired_cand) == (5, 1, 2)
    assert p.note() == (
        "5 pairs (runs paired by order seed, kind and selection); 3 run(s) without a partner left out"
    )
    whole = pair([10.0] * 5, ref_keys[:5], [10.0] * 5, cand_keys[:5])
    assert whole is not None and whole.note() == "5 pairs (runs paired by order seed, kind and selection)"


def test_a_block_of_another_kind_or_selection_is_another_block():
    ref = [10.0] * 5
    assert pair(ref, [key(s) for s in range(5)], ref, [key(s, kind="full") for s in range(5)]) is None
    assert pair(ref, [key(s) for s in range(5)], ref, [key(s, selection="other") for s in range(5)]) is None


def test_pairing_needs_every_run_named_on_both_sides_positive_values_and_two_shared_blocks():
    k = [key(s) for s in range(1, 6)]
    ten = [10.0] * 5
    # one baseline run names no block (lists of other lengths), then one candidate run: even 4 shared
    # blocks, past min_pairs, are not paired
    assert pair(ten, k[:4], ten, k, min_pairs=2) is None
    assert pair(ten, k, ten, k[:4], min_pairs=2) is None
    assert pair(ten, k, [10.0, 10.0, 0.0, 10.0, 10.0], k) is None  # a value of 0 has no log ratio
    assert pair(ten[:2], k[:2], ten[:2], k[:2], min_pairs=2) is not None  # two shared blocks are enough
    assert pair(ten[:1], k[:1], ten[:1], k[:1], min_pairs=1) is None  # one is never (no SD)


def test_a_baselines_seeds_are_read_oldest_first_a_block_without_a_seed_as_seed_0():
    entries = [{"block": {"kind": "lean"}}, {"block": {"kind": "lean", "seed": 4}}]
    assert blocks.paired_seeds(entries) == [0, 4]
    assert blocks.paired_seeds(["not an entry"]) == []
    full_then_lean = [{"block": {"kind": "full", "seed": 0}}, {"block": {"kind": "lean", "seed": 1}}]
    assert blocks.paired_seeds(full_then_lean) == [1]  # the check run is no partner
