"""Across ranks, ``aorta trace figures`` compares step N of one rank with step N of another (``ProfilerStep#N``),
never the i-th step of each: ranks whose profilers kept different steps (one started a step late, one trace
lost its last step) are paired on the steps both have, and the figures say which steps a rank lacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_tiers import examples

from aorta.cli import main
from aorta.report import trace_figures

STEP_US = 10_000.0


def kineto(path: Path, compute_ms: dict[int, float]) -> Path:
    """A Kineto trace of one rank: step N (a ProfilerStep#N host range, 10 ms apart) launches one kernel that
    runs ``compute_ms[N]`` ms, linked to its launch by correlation id."""
    events = []
    for n, ms in sorted(compute_ms.items()):
        t0 = n * STEP_US
        events += [
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "ts": t0, "dur": STEP_US - 1,
             "pid": 1, "tid": 1},
            {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "ts": t0 + 10, "dur": 5, "pid": 1,
             "tid": 1, "args": {"correlation": 100 + n}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "ts": t0 + 100, "dur": ms * 1e3, "pid": 0, "tid": 7,
             "args": {"correlation": 100 + n, "stream": 7}},
        ]  # fmt: skip
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_steps_are_paired_by_number_and_the_steps_a_rank_lacks_are_said(tmp_path, capsys):
    a = kineto(tmp_path / "rank0.json", {1: 1.0, 2: 2.0, 3: 3.0})
    b = kineto(tmp_path / "rank1.json", {2: 5.0, 3: 1.0, 4: 9.0})
    across = trace_figures.figures([a, b])["across_ranks"]
    # worst rank per step: step 2 max(2, 5), step 3 max(3, 1); by position it was max(1, 5), max(2, 1), max(3, 9)
    assert across["metrics"]["compute_busy_ms_worst_rank"]["samples"] == pytest.approx([5.0, 3.0])
    assert across["steps_paired"] == (
        "steps paired by number (ProfilerStep#N): 2 in every rank (rank 0 lacks step 4; rank 1 lacks step 1: left out)"
    )
    assert main(["trace", "figures", str(a), str(b)]) == 0
    assert across["steps_paired"] in capsys.readouterr().out.splitlines()


def test_ranks_with_no_step_in_common_have_no_across_ranks_figures_and_say_why(tmp_path):
    a = kineto(tmp_path / "rank0.json", {1: 1.0, 2: 2.0})
    b = kineto(tmp_path / "rank1.json", {3: 1.0, 4: 2.0})
    across = trace_figures.figures([a, b])["across_ranks"]
    assert across == {
        "reason": "no step number is in every rank (rank 0 lacks steps 3, 4; rank 1 lacks steps 1, 2)"
    }


@settings(max_examples=examples(25), deadline=None)
@given(
    st.dictionaries(st.integers(1, 8), st.floats(0.1, 5.0), min_size=1, max_size=5),
    st.dictionaries(st.integers(1, 8), st.floats(0.1, 5.0), min_size=1, max_size=5),
)
def test_the_worst_rank_at_each_common_step_is_the_larger_of_the_two(tmp_path_factory, r0, r1):
    folder = tmp_path_factory.mktemp("ranks")
    result = trace_figures.figures([kineto(folder / "a.json", r0), kineto(folder / "b.json", r1)])
    common = sorted(set(r0) & set(r1))
    if not common:
        assert "no step number is in every rank" in result["across_ranks"]["reason"]
        return
    samples = result["across_ranks"]["metrics"]["compute_busy_ms_worst_rank"]["samples"]
    assert samples == pytest.approx([max(r0[n], r1[n]) for n in common], abs=1e-9)
