"""A baseline of several runs (fresh processes): saving adds runs, keeps a noise profile measured from them,
and the gate judges run figures against the noise between runs (pure: no torch, no benchmarks run)."""

import json

import pytest
from test_gate_offline import BASE, bench, multi, run

from aorta.exit_codes import EXIT_INCONCLUSIVE, EXIT_REGRESSION
from aorta.gate.baselines import baseline as bl
from aorta.gate.comparison.compare import compare_runs
from aorta.gate.outputs.render import header_lines
from aorta.gate.stats.samples import baseline_runs
from aorta.gate.verdicts.verdict import NOT_GATEABLE, SLOWER
from aorta.record.run_samples import RUNS_KEY


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


def test_a_two_run_baseline_against_one_run_is_not_gateable_for_this_noise(tmp_path):
    # Runs at 10.0 and 10.4 ms (4% apart), one candidate run at 10.5: with 1 degree of freedom the MDE is
    # far beyond 5%: reported with its value and MDE, never a verdict.
    comp = compare_runs(two_run_baseline(tmp_path), run([bench("a", 10.5, seed=9)]))
    v = next(v for v in comp.verdicts if v.metric == "device_ms")
    assert v.outcome == NOT_GATEABLE and v.mde > 0.05 and "exceeds the 5% bound" in v.reason
    assert comp.exit_code == EXIT_INCONCLUSIVE  # judged nothing: not clean, not a regression
    assert any("runs (the sample): baseline 2, this run 1" in line for line in header_lines(comp))


def test_a_change_past_the_noise_between_runs_is_slower_and_the_reason_says_why(tmp_path):
    for i, c in enumerate(BASE):
        path, n = bl.save_baseline(run([bench("a", c, seed=i)]), tmp_path, "base", {})
    comp = compare_runs(bl.load_run(path), multi("a", [11.5, 11.52, 11.47], seed=9))
    v = next(v for v in comp.verdicts if v.metric == "device_ms")
    assert v.outcome == SLOWER and v.ref_runs == 4 and v.cand_runs == 3
    assert v.change_ratio == pytest.approx(0.149, abs=0.005) and v.ci_low > 0.1
    assert "Benjamini-Hochberg over the comparison's 2 tests" in v.reason
    assert comp.exit_code == EXIT_REGRESSION


def test_saving_keeps_a_noise_profile_measured_from_the_runs(tmp_path):
    for i, c in enumerate(BASE):
        path, n = bl.save_baseline(run([bench("a", c, seed=i)]), tmp_path, "base", {})
    profile = bl.load_run(path)["aorta_baseline"]["noise_profile"]
    entry = profile["figures"]["benchmarks/hw_queue/test_x.py::a"]["device_ms"]
    assert profile["runs"] == 4 and entry["runs"] == 4 and entry["df"] == 3
    assert 0.001 < entry["sigma_log"] < 0.004 and entry["gateable"] is True and entry["mde"] < 0.05
    assert profile["gateable"] == 2 and profile["not_gateable"] == 0


def test_a_one_run_baseline_profile_says_the_noise_is_not_known(tmp_path):
    path, _ = bl.save_baseline(run([bench("a", 10.0)]), tmp_path, "base", {})
    entry = bl.load_run(path)["aorta_baseline"]["noise_profile"]["figures"][
        "benchmarks/hw_queue/test_x.py::a"
    ]
    assert entry["device_ms"] == {
        "runs": 1,
        "gateable": False,
        "reason": "one run: the between-run noise is not known",
    }


def test_saving_a_multi_run_document_adds_each_of_its_runs(tmp_path):
    path, n = bl.save_baseline(multi("a", BASE), tmp_path, "base", {})
    assert n == 4 and "aorta_runs" not in bl.load_run(path)


def test_negative_device_times_in_a_stored_run_are_refused_naming_the_run(tmp_path):
    # Before: a baseline with one run of negative samples read an 841% spread and hid a +44% slowdown.
    doc = two_run_baseline(tmp_path)
    samples = doc["aorta_baseline"][RUNS_KEY][1]["benchmarks"]["benchmarks/hw_queue/test_x.py::a"][
        "device_ms"
    ]
    samples[:] = [-x for x in samples]
    with pytest.raises(
        bl.BaselineError,
        match=r"base.json: aorta_baseline.runs\[1\] \(run 2 of 2\).*a device time cannot be negative",
    ):
        baseline_runs(doc, source="base.json")


def test_past_the_cap_the_oldest_runs_are_dropped_and_the_newest_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(bl, "MAX_BASELINE_RUNS", 3)
    for i in range(5):
        path, n = bl.save_baseline(run([bench("a", 10.0 + i, seed=i)]), tmp_path, "base", {})
    assert n == 3
    runs = baseline_runs(bl.load_run(path))
    medians = [sorted(r["benchmarks/hw_queue/test_x.py::a"]["device_ms"])[10] for r in runs]
    assert medians == pytest.approx([12.0, 13.0, 14.0], rel=0.01)  # runs 3, 4 and 5, oldest first


def test_a_baseline_name_resolves_to_this_machines_file_before_another_machines(tmp_path):
    for key in ("a100-x1", "h100-x1", "mi300x-x8"):  # another machine's sorts before this one's
        (tmp_path / key).mkdir()
        (tmp_path / key / "rocm-7.0.8.json").write_text("{}")
    assert bl.resolve("rocm-7.0.8", tmp_path, "h100-x1") == tmp_path / "h100-x1" / "rocm-7.0.8.json"
    # none of this machine's own: another machine's (the hardware check then decides)
    assert bl.resolve("rocm-7.0.8", tmp_path, "h200-x1") == tmp_path / "a100-x1" / "rocm-7.0.8.json"


def test_several_candidate_runs_show_the_latest_runs_stack(tmp_path):
    older, newer = (
        run([bench("a", 10.0, seed=s)], torch=t) for s, t in ((1, "2.11.0+cu130"), (2, "2.12.0+cu130"))
    )
    combined = bl.combine_runs([older, newer], ["run1", "run2"])
    comp = compare_runs(multi("a", BASE), combined)
    assert ("torch", "2.11.0+cu130", "2.12.0+cu130") in comp.stack
