"""aorta.report data functions: loading saved runs, per-run summaries, comparisons, bad input (pure, fast)."""

import json
import math
import shutil
from pathlib import Path

import pytest

from aorta.report import ReportInputError
from aorta.report.fsdp_artifacts import read_rank_file
from aorta.report.runs import load_run, load_runs
from aorta.report.summary import build_summary, compare, run_summary, scaling_series

DATA = Path(__file__).parents[1] / "data" / "report"
HWQ_A, HWQ_B = DATA / "hwq_per_round.json", DATA / "hwq_end_only.json"
FSDP_A, FSDP_B = DATA / "fsdp_a", DATA / "fsdp_b"


def test_a_benchmark_json_run_keeps_every_aorta_benchmark_and_the_stack():
    run = load_run(HWQ_A, "a")
    assert run.kind == "benchmark_json"
    assert sorted(b["name"] for b in run.benchmarks) == [
        "test_large_gemm_only[streams1-bf16]",
        "test_large_gemm_only[streams1-fp32]",
        "test_large_gemm_only[streams2-bf16]",
        "test_large_gemm_only[streams2-fp32]",
    ]
    assert run.machine["backend"] == "cpu" and run.machine["torch"].startswith("2.")


def test_benchmark_summary_holds_the_recorded_metrics_and_median_device_time():
    bench = next(
        b
        for b in json.loads(HWQ_A.read_text())["benchmarks"]
        if b["name"] == "test_large_gemm_only[streams2-bf16]"
    )
    cfg = run_summary(load_run(HWQ_A, "a"))["configurations"]["test_large_gemm_only[streams2-bf16]"]
    per_iter = sorted(bench["extra_info"]["device_ms_per_iteration"])
    assert cfg["figures"]["device_ms"]["value"] == pytest.approx(per_iter[1])  # median of 3 rounds
    assert cfg["figures"]["tflops"]["value"] == bench["extra_info"]["metrics"]["tflops"]["value"]
    assert cfg["figures"]["effective_concurrency"]["value"] == bench["extra_info"]["effective_concurrency"]
    assert cfg["streams"] == 2 and cfg["headline_metric"] == "tflops"
    assert cfg["unavailable"] == {"distinct_streams": "CPU backend: no hardware streams"}


def test_fsdp_summary_is_the_slowest_ranks_median_step_and_window_figures_per_step():
    cfgs = run_summary(load_run(FSDP_A, "a"))["configurations"]
    base = cfgs["fsdp:baseline"]
    assert (base["ranks"], base["timed_steps"], base["profiled_steps"]) == (2, 4, 2)
    f = {k: v["value"] for k, v in base["figures"].items()}
    # slowest rank (1): 40 + 0.5*step + 0.75 over timed steps 1..4 -> median at step 2.5
    assert f["step_ms"] == pytest.approx(40 + 0.5 * 2.5 + 0.75)
    # each profiled step: compute 0-30 ms, all-gather 21-33 ms
    assert f["compute_busy_ms_per_step"] == pytest.approx(30.0)
    assert f["comm_busy_ms_per_step"] == pytest.approx(33 - 21)
    assert f["overlapped_ms_per_step"] == pytest.approx(30 - 21)
    assert f["exposed_comm_ms_per_step"] == pytest.approx(33 - 30)
    assert f["overlap_ratio_worst_rank"] == pytest.approx(9 / 12)
    # window: first kernel at 0, last ends at 40 + 33 ms; busy 2 x 33 ms
    assert f["idle_ms_per_step"] == pytest.approx((40 + 33 - 2 * 33) / 2)
    assert f["busbw_gbps.all_gather"] == pytest.approx(250.0)
    assert f["tokens_per_s"] == pytest.approx(2 * 4096 / (f["step_ms"] / 1e3), rel=0.02)
    assert cfgs["fsdp:explicit_prefetch"]["figures"]["overlap_ratio_worst_rank"]["value"] == pytest.approx(
        11 / 12
    )


def test_comparison_puts_the_biggest_change_first_with_its_direction():
    summary = build_summary(load_runs([(str(FSDP_A), "a"), (str(FSDP_B), "b")]), "a", "b")
    first = summary["comparison"][0]
    assert (first["configuration"], first["metric"]) == ("fsdp:baseline", "exposed_comm_ms_per_step")
    assert first["ratio"] == pytest.approx(6 / 3) and first["better"] is False
    sizes = [abs(math.log(r["ratio"])) for r in summary["comparison"]]  # halving and doubling weigh the same
    assert sizes == sorted(sizes, reverse=True)
    ov = next(
        r
        for r in summary["comparison"]
        if r["metric"] == "overlap_ratio_worst_rank" and r["configuration"] == "fsdp:baseline"
    )
    assert ov["ratio"] == pytest.approx(0.5 / 0.75) and ov["better"] is False


def test_compare_skips_figures_missing_or_zero_in_either_run():
    ref = {
        "configurations": {
            "x": {
                "figures": {
                    "m": {"value": 0.0, "unit": "ms", "higher_is_better": False},
                    "n": {"value": 2.0, "unit": "ms", "higher_is_better": False},
                }
            }
        }
    }
    cand = {
        "configurations": {
            "x": {
                "figures": {
                    "m": {"value": 1.0, "unit": "ms", "higher_is_better": False},
                    "n": {"value": 1.0, "unit": "ms", "higher_is_better": False},
                }
            }
        }
    }
    rows = compare(ref, cand)
    assert [(r["metric"], r["ratio"], r["better"]) for r in rows] == [("n", 0.5, True)]


def test_scaling_series_has_one_line_per_run_per_dtype_sorted_by_streams():
    summary = build_summary(load_runs([(str(HWQ_A), "a"), (str(HWQ_B), "b")]), "a", "b")
    series = scaling_series(summary["runs"])
    assert sorted(series) == ["large_gemm_only-dtype=bf16", "large_gemm_only-dtype=fp32"]
    line = series["large_gemm_only-dtype=bf16"]["runs"]["b"]
    assert [p[0] for p in line] == [1, 2] and all(p[1] > 0 and p[2] > 0 for p in line)


def test_environment_rows_mark_what_differs():
    summary = build_summary(load_runs([(str(HWQ_A), "a"), (str(HWQ_B), "b")]))
    rows = {r["name"]: r for r in summary["environment"]}
    assert rows["sync mode"]["values"] == {"a": "per_round", "b": "end_only"} and rows["sync mode"]["differs"]
    assert not rows["torch"]["differs"]


def test_cpu_artifacts_without_kernel_timestamps_keep_overlap_unavailable_with_the_reason(tmp_path):
    lines = [
        {"kind": "step", "scenario": "baseline", "rank": 0, "step": s, "phase": "timed", "step_ms": 5.0 + s}
        for s in range(3)
    ]
    lines.append(
        {
            "kind": "overlap",
            "scenario": "baseline",
            "rank": 0,
            "steps": 0,
            "available": False,
            "reason": "CPU: no device kernel timestamps",
            "figures": None,
        }
    )
    (tmp_path / "rank_0_metrics.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    cfg = run_summary(load_run(tmp_path, "cpu"))["configurations"]["fsdp:baseline"]
    assert cfg["figures"]["step_ms"]["value"] == 6.0
    assert cfg["figures"]["overlap_ratio_worst_rank"]["value"] is None
    assert cfg["unavailable"]["exposed_comm_ms_per_step"] == "CPU: no device kernel timestamps"


def test_a_run_folder_with_its_benchmark_json_brings_the_environment(tmp_path):
    shutil.copytree(FSDP_A / "artifacts", tmp_path / "artifacts")
    shutil.copy(HWQ_A, tmp_path / "run.json")
    run = load_run(tmp_path, "a")
    assert run.machine["backend"] == "cpu" and run.fsdp and run.benchmarks


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "is empty"),
        ('{"benchmarks": [', "not valid JSON"),
        ('{"foo": 1}', "not a pytest-benchmark JSON file"),
        ('{"machine_info": {}, "benchmarks": [{"name": "t", "extra_info": {}}]}', "not written by aorta"),
        ('{"machine_info": {"aorta": {}}, "benchmarks": []}', "no aorta benchmark results"),
    ],
)
def test_foreign_or_broken_files_are_refused_naming_the_file(tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(ReportInputError, match=message) as exc:
        load_run(bad, "x")
    assert str(bad) in str(exc.value)


def test_an_artifacts_folder_without_rank_files_or_with_bad_lines_is_refused(tmp_path):
    with pytest.raises(ReportInputError, match="no rank_<r>_metrics.jsonl"):
        load_run(tmp_path, "x")
    f = tmp_path / "rank_0_metrics.jsonl"
    f.write_text('{"kind": "step", "scenario": "b", "step": 0, "step_ms": "fast"}\n')
    with pytest.raises(ReportInputError, match=r"rank_0_metrics.jsonl:1: step_ms must be a number"):
        read_rank_file(f)


def test_a_label_used_twice_is_named():
    with pytest.raises(ReportInputError, match="label 'a' is used twice"):
        load_runs([(str(HWQ_A), "a"), (str(HWQ_B), "a")])


@pytest.mark.parametrize(
    "ref, cand, message",
    [
        ("a", "zz", "--candidate 'zz' is not one of the run labels: a, b"),
        ("a", None, "together"),
        ("a", "a", "both 'a'"),
    ],
)
def test_reference_and_candidate_must_name_two_runs(ref, cand, message):
    runs = load_runs([(str(HWQ_A), "a"), (str(HWQ_B), "b")])
    with pytest.raises(ReportInputError, match=message):
        build_summary(runs, ref, cand)


def test_runs_with_nothing_in_common_are_refused_naming_the_run():
    runs = load_runs([(str(HWQ_A), "hwq"), (str(FSDP_A), "fsdp")])
    with pytest.raises(ReportInputError, match="run 'hwq' has nothing in common"):
        build_summary(runs)


def test_data_modules_import_neither_torch_nor_matplotlib():
    import subprocess
    import sys

    code = (
        "import sys; import aorta.report.summary, aorta.report.runs, aorta.report.html_page, "
        "aorta.report.trace_merge, aorta.report.chrome_trace, aorta.report.build, aorta.cli; "
        "print(sorted(m for m in ('torch', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    ).stdout.strip()
    assert out == "[]"


def test_scaling_series_carries_the_recorded_reason_concurrency_is_missing(tmp_path):
    run = json.loads(HWQ_A.read_text())
    reason = "CPU backend: the profiler records no device kernel timestamps"
    for b in run["benchmarks"]:
        b["extra_info"]["effective_concurrency"] = None
        b["extra_info"].setdefault("unavailable", {})["effective_concurrency"] = reason
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(run))
    series = scaling_series(build_summary(load_runs([(str(path), "cpu")]))["runs"])
    line = series["large_gemm_only-dtype=bf16"]
    assert all(p[2] is None for p in line["runs"]["cpu"])
    assert line["concurrency_unavailable"] == [reason]  # the panel's note, not "graph replay"


def test_report_overlap_ratio_is_the_benchmarks_worst_rank_per_step_not_pooled():
    from aorta.report.fsdp_artifacts import ScenarioRank
    from aorta.report.summary import worst_rank_overlap_ratio

    # Rank 0 hides 0.5, 0.9, 0.2 of its communication, rank 1 0.8, 0.6, 0.3: worst per step 0.5, 0.6, 0.2 ->
    # median 0.5 (the mean would be 0.43, the best rank's median 0.6), not a figure pooled over both ranks'
    # windows (as the report once read it).
    r0 = ScenarioRank("baseline", 0, steps=[{"overlap_ratio": v} for v in (0.5, 0.9, 0.2)])
    r1 = ScenarioRank("baseline", 1, steps=[{"overlap_ratio": v} for v in (0.8, 0.6, 0.3)])
    assert worst_rank_overlap_ratio([r0, r1]) == pytest.approx(0.5)
    old = ScenarioRank("baseline", 1, overlap={"overlap_ratio": 0.4})  # recorded before per-step figures
    assert worst_rank_overlap_ratio([r0, old]) == pytest.approx(0.4)
    assert worst_rank_overlap_ratio([r0, ScenarioRank("baseline", 2)]) is None


def test_an_fsdp_record_brings_its_overlap_breakdown_per_rank_and_the_straggler_to_the_report(tmp_path):
    from aorta.record import BenchRecord
    from aorta.report.html_page import _rank_breakdown_section

    def step(n, transfer, wait):  # ms; the other parts fixed
        return {
            "step": n,
            "compute_only_ms": 50.0,
            "overlapped_ms": 20.0,
            "exposed_transfer_ms": transfer,
            "exposed_wait_ms": wait,
            "idle_ms": 1.0,
        }

    record = BenchRecord(
        workload="fsdp_baseline",
        backend="cuda",
        timing_method="events",
        clock="device_events",
        device_ms_per_iteration=[90.0, 91.0],
        headline_metric="step_ms",
        details={
            "per_rank_steps": {
                "0": [step(0, 2.0, 12.0), step(1, 6.0, 7.0), step(2, 3.0, 8.0)],
                "1": [step(0, 2.0, 0.5), step(1, 6.0, 0.0), step(2, 3.0, 4.0)],
            },
            "stragglers": [
                {"rank": 1, "median_skew_ms": 8.0},
                {"rank": 0, "median_skew_ms": 2.0},
                {"rank": 1, "median_skew_ms": 7.0},
                {"rank": 1, "median_skew_ms": 3.0},
                None,
            ],
        },
    )
    bench = {"name": "test_fsdp_scenario[baseline]", "params": {}, "extra_info": record.to_extra_info()}
    doc = {"machine_info": {}, "commit_info": {}, "datetime": "2026-11-23", "benchmarks": [bench]}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    summary = {"runs": [run_summary(load_run(path, "new"))]}
    found = summary["runs"][0]["configurations"]["test_fsdp_scenario[baseline]"]["rank_breakdown"]
    # medians over the three profiled steps, per rank (the means would read 3.67, 9 and 1.5): rank 0 waited for
    # rank 1 (8 ms), both moved 3 ms
    assert [(r["rank"], r["exposed_transfer_ms"], r["exposed_wait_ms"]) for r in found["ranks"]] == [
        (0, 3.0, 8.0),
        (1, 3.0, 0.5),
    ]
    # rank 1 was last in 3 of the 4 steps with a straggler; its skew is the median of its own steps' (8, 7, 3),
    # not of every step's (5.0) nor their mean (6.0)
    assert found["straggler"].startswith(
        "straggler: rank 1 arrived last most often in 3 of 4 steps, by 7.000 ms"
    )
    html = _rank_breakdown_section(summary)
    assert "exposed wait ms" in html and "rank 1 arrived last" in html


def test_a_figure_over_steps_is_their_median_leaving_out_the_missing():
    from aorta.report.summary import _median_or_none

    assert _median_or_none([40.0, None, 41.0, 90.0]) == 41.0  # the mean of the three would be 57
    assert _median_or_none([None, None]) is None
