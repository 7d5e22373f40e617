"""Runs as blocks through pytest (issue 45): each run records its block in its JSON; a lean run runs benchmarks
only; a full run of workloads with checks apart is no sample; a compare whose runs share the baseline's blocks
is judged paired, and says so."""

import json

import pytest
from test_gate_plugin import run

CHECK_TEST = "def test_known_answer():\n    assert 1 + 1 == 2\n"
PLAIN_BENCH = "def test_plain(benchmark):\n    benchmark(sum, range(10))\n"


# pytest-benchmark times a plain benchmark for up to --benchmark-max-time (1 s by default) after calibrating:
# seconds per run that these tests, which read only each run's block, do not need.
QUICK = "--benchmark-max-time=0.001"


def _block(pytester, *args):
    out = pytester.path / "run.json"
    r = run(pytester, f"--benchmark-json={out}", QUICK, *args)
    assert r.ret == 0, r.stdout.str()
    return json.loads(out.read_text())["aorta_run"], r


def test_a_full_run_with_checks_apart_is_no_sample_and_its_lean_run_times_benchmarks_only(bench_dir):
    bench_dir.makepyfile(test_check=CHECK_TEST)
    full, r = _block(bench_dir, "--aorta-order-seed=3")
    assert (full["seed"], full["kind"], full["sample"]) == (3, "full", False)
    r.assert_outcomes(passed=2)
    lean, r = _block(bench_dir, "--aorta-order-seed=3", "--aorta-lean-run")
    assert (lean["seed"], lean["kind"], lean["sample"]) == (3, "lean", True)
    r.assert_outcomes(passed=1, deselected=1)  # the known-answer check ran in the check run only
    assert lean["selection"] != full["selection"]  # what each ran is part of its block


def test_a_full_run_with_nothing_a_lean_run_would_skip_is_a_sample(pytester):
    pytester.makepyfile(test_plain=PLAIN_BENCH)
    full, _ = _block(pytester)
    assert (full["kind"], full["sample"]) == ("full", True)


KNOWN_ANSWER_BENCH = (
    "import pytest\n\n@pytest.mark.check_run_only\n"
    "def test_known_answer_bench(benchmark):\n    benchmark(sum, range(10))\n"
)
LEAN_MODE_BENCH = (
    "import pytest\n\n@pytest.mark.lean_mode\ndef test_sweep(benchmark):\n    benchmark(sum, range(10))\n"
)


def test_a_benchmark_marked_check_run_only_is_left_out_of_a_lean_run_and_its_full_run_is_no_sample(pytester):
    """The FSDP known-answer test records through pytest-benchmark, yet it checks a known answer."""
    pytester.makepyfile(test_plain=PLAIN_BENCH, test_known=KNOWN_ANSWER_BENCH)
    full, r = _block(pytester)
    assert (full["kind"], full["sample"]) == ("full", False)
    r.assert_outcomes(passed=2)
    lean, r = _block(pytester, "--aorta-lean-run")
    assert (lean["kind"], lean["sample"]) == ("lean", True)
    r.assert_outcomes(passed=1, deselected=1)


def test_a_benchmark_with_a_lean_mode_stays_in_a_lean_run_and_its_full_run_is_no_sample(pytester):
    """The FSDP collective sweep times only its judged point in a lean run: its full run measures otherwise."""
    pytester.makepyfile(test_plain=PLAIN_BENCH, test_sweep=LEAN_MODE_BENCH)
    full, r = _block(pytester)
    assert (full["kind"], full["sample"]) == ("full", False)
    lean, r = _block(pytester, "--aorta-lean-run")
    assert (lean["kind"], lean["sample"]) == ("lean", True)
    r.assert_outcomes(passed=2)


@pytest.mark.slow
def test_a_compare_of_runs_sharing_the_baselines_blocks_is_judged_paired(counted_work):
    r = run(counted_work, "--aorta-save-baseline", "base", "--aorta-runs=5")
    assert r.ret == 0, r.stdout.str()
    saved = json.loads((counted_work.path / ".aorta" / "baselines" / "cpu" / "base.json").read_text())
    seeds = [e["block"]["seed"] for e in saved["aorta_baseline"]["runs"]]
    assert seeds == [1, 2, 3, 4, 5]
    verdict = counted_work.path / "v.json"
    r = run(counted_work, "--aorta-compare", "base", "--aorta-runs=5", f"--aorta-verdict-json={verdict}")
    assert r.ret in (0, 10, 15), r.stdout.str()
    r.stdout.fnmatch_lines(
        ["runs (the sample): baseline 5, this run 5; paired by order seed, kind and selection: *"]
    )
    (comp,) = json.loads(verdict.read_text())["comparisons"]
    assert {v["pairs"] for v in comp["verdicts"]} == {5}
    assert all(
        "5 pairs (runs paired by order seed, kind and selection)" in v["reason"] for v in comp["verdicts"]
    )


@pytest.mark.slow
def test_aorta_compare_of_an_auto_gates_json_reproduces_its_verdicts(counted_work):
    """Issue 45, item 5: ``--benchmark-json`` of an auto compare holds every run the verdicts used (each with
    its block) and the looks they were judged at; ``aorta compare`` of it judges the same."""
    from aorta.cli import main

    assert run(counted_work, "--aorta-save-baseline", "base", "--aorta-runs=5").ret == 0
    base = counted_work.path / ".aorta" / "baselines" / "cpu" / "base.json"
    runs, gate_v, offline_v = (counted_work.path / n for n in ("runs.json", "gate.json", "offline.json"))
    r = run(
        counted_work,
        "--aorta-compare=base",
        "--aorta-runs=auto",
        "--aorta-budget=10m",
        f"--benchmark-json={runs}",
        f"--aorta-verdict-json={gate_v}",
    )
    assert r.ret in (0, 10, 15), r.stdout.str()
    doc = json.loads(runs.read_text())
    assert [e["block"]["seed"] for e in doc["aorta_runs"]][:3] == [1, 2, 3]  # the baseline's seeds, in turn
    assert "check" not in {e["id"] for e in doc["aorta_runs"]}  # the check run is no sample
    code = main(
        [
            "compare",
            str(base),
            str(runs),
            "--alpha",
            "0.05",
            "--max-mde",
            "10",
            "--verdict-json",
            str(offline_v),
        ]
    )
    assert code == r.ret

    def verdicts(path):
        (comp,) = json.loads(path.read_text())["comparisons"]
        return [
            (v["benchmark"], v["metric"], v["outcome"], v["pairs"], v["cand_runs"]) for v in comp["verdicts"]
        ]

    assert verdicts(offline_v) == verdicts(gate_v)
