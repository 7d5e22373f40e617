"""A baseline of several runs (separate processes): saving adds a run, the gate pools their samples and a
SLOWER verdict must exceed the spread between them (pure: no torch, no benchmarks run)."""

import json

import pytest
from test_gate_offline import bench, run

from aorta.gate import baseline as bl
from aorta.gate.compare import EXIT_CLEAN, EXIT_REGRESSION, compare_runs
from aorta.gate.render import header_lines
from aorta.gate.samples import RUNS_KEY, baseline_runs
from aorta.gate.verdict import SLOWER, UNSURE


def two_run_baseline(tmp_path, first_ms=10.0, second_ms=10.4):
    bl.save_baseline(run([bench("a", first_ms, seed=1)]), tmp_path, "base", {})
    path, n = bl.save_baseline(run([bench("a", second_ms, seed=2)]), tmp_path, "base", {})
    assert n == 2
    return bl.load_run(path)


def test_saving_under_an_existing_name_adds_a_run_and_keeps_each_runs_samples(tmp_path):
    doc = two_run_baseline(tmp_path)
    runs = baseline_runs(doc)
    assert len(runs) == 2 == len(doc["aorta_baseline"][RUNS_KEY])
    name = "benchmarks/hw_queue/test_x.py::a"
    first, second = (r[name]["device_ms"] for r in runs)
    assert first == bench("a", 10.0, seed=1)["extra_info"]["device_ms_per_iteration"]
    assert second == bench("a", 10.4, seed=2)["extra_info"]["device_ms_per_iteration"]
    # The document itself is the latest run, as pytest-benchmark wrote it.
    assert doc["benchmarks"][0]["extra_info"]["device_ms_per_iteration"] == second


def test_benchmarks_the_latest_run_left_out_are_kept_from_earlier_runs(tmp_path):
    bl.save_baseline(run([bench("a", 10.0), bench("b", 5.0)]), tmp_path, "base", {})
    path, _ = bl.save_baseline(run([bench("a", 10.0, seed=3)]), tmp_path, "base", {})
    assert sorted(b["name"] for b in bl.load_run(path)["benchmarks"]) == ["a", "b"]


def test_a_run_of_another_stack_is_refused_and_the_baseline_is_unchanged(tmp_path):
    path, _ = bl.save_baseline(run([bench("a", 10.0)]), tmp_path, "base", {})
    before = path.read_bytes()
    with pytest.raises(
        bl.StackChanged, match=r"torch: '2.11.0\+cu130' -> '2.12.0'.*--aorta-replace-baseline"
    ):
        bl.save_baseline(run([bench("a", 10.0)], torch="2.12.0"), tmp_path, "base", {})
    assert path.read_bytes() == before
    _, n = bl.save_baseline(run([bench("a", 10.0)], torch="2.12.0"), tmp_path, "base", {}, replace=True)
    assert n == 1


def test_a_baseline_saved_before_runs_were_kept_counts_as_its_first_run(tmp_path):
    path, _ = bl.save_baseline(run([bench("a", 10.0)]), tmp_path, "base", {})
    doc = json.loads(path.read_text())
    del doc["aorta_baseline"][RUNS_KEY]
    path.write_text(json.dumps(doc))
    _, n = bl.save_baseline(run([bench("a", 10.0, seed=5)]), tmp_path, "base", {})
    assert n == 2


def test_a_stored_run_with_a_bad_sample_is_named(tmp_path):
    doc = two_run_baseline(tmp_path)
    doc["aorta_baseline"][RUNS_KEY][1]["benchmarks"]["benchmarks/hw_queue/test_x.py::a"]["device_ms"][3] = "x"
    with pytest.raises(
        bl.BaselineError, match=r"aorta_baseline.runs\[1\].*device_ms: expected a list of finite"
    ):
        baseline_runs(doc)


def test_a_change_inside_the_spread_between_baseline_runs_is_not_slower(tmp_path):
    # Runs at 10.0 and 10.4 ms (4% apart); a run at 10.5 ms is 3% above the pooled median of 10.2: past the
    # 3% minimum effect and significant within one run, but not beyond how the baseline's own runs differ.
    comp = compare_runs(two_run_baseline(tmp_path), run([bench("a", 10.5, seed=9)]))
    v = next(v for v in comp.verdicts if v.metric == "device_ms")
    assert v.outcome == UNSURE and "within the spread of the baseline's 2 runs" in v.reason
    assert comp.exit_code == EXIT_CLEAN
    assert any("baseline runs: 2" in line for line in header_lines(comp))


def test_a_change_past_the_spread_is_slower_and_the_reason_says_why(tmp_path):
    comp = compare_runs(two_run_baseline(tmp_path), run([bench("a", 11.5, seed=9)]))
    v = next(v for v in comp.verdicts if v.metric == "device_ms")
    assert v.outcome == SLOWER and v.n_ref == 40 and v.ref_runs == 2
    assert "beyond the" in v.reason and "spread between the baseline's 2 runs" in v.reason
    assert "Benjamini-Hochberg over the run's 2 tests" in v.reason
    assert comp.exit_code == EXIT_REGRESSION
