"""The report's world-size scaling view on synthetic FSDP records at 2 and 4 ranks (pure), and through
``aorta report`` end to end."""

import json
from pathlib import Path

import pytest

from aorta.record import BenchRecord
from aorta.record.metric import Metric
from aorta.report.runs import Run
from aorta.report.world_scaling import view_lines, world_size_view
from scripts.gpu import fsdp_tables


def _bench(scenario, world, step, transfer, wait, ratio, ag_share, compute_only, stragglers, unresolved):
    record = BenchRecord(
        f"fsdp_{scenario}",
        "cuda",
        "events",
        "device_events",
        [step, step],
        "step_ms",
        details={
            "world_size": world,
            "busbw_vs_ceiling": {
                "all_gather": {"busbw_gbps": 200.0 * (ag_share or 0.5), "share_of_ceiling": ag_share},
                "reduce_scatter": {"busbw_gbps": 1.5, "reason": "message size 460 B outside the swept range"},
            },
            "split_resolution": {"unresolved_share": unresolved, "alignment_error_us": 10.0 * world},
            "rank_evidence": [{"rank": r, "compute_only_ms": c} for r, c in enumerate(compute_only)],
            "stragglers": stragglers,
        },
    ).add(
        Metric("step_ms", step, "ms", False, (step, step)),
        Metric("exposed_transfer_ms_worst_rank", transfer, "ms/step", False, (transfer,)),
        Metric("exposed_wait_ms_worst_rank", wait, "ms/step", False, (wait,)),
        Metric("overlap_ratio_worst_rank", ratio, "ratio", True, (ratio,)),
    )
    return {
        "name": f"test_fsdp_scenario[{scenario}]",
        "stats": {"data": [step / 1e3, step / 1e3]},
        "extra_info": record.to_extra_info(),
    }


def _sweep(world):
    record = BenchRecord(
        "fsdp_collective_sweep", "cuda", "events", "device_events", [1.0], "x", details={"world_size": world}
    )
    return {"name": "test_collective_sweep", "stats": {"data": [0.001]}, "extra_info": record.to_extra_info()}


TWO = [
    _bench(
        "baseline", 2, 88.0, 2.0, 1.0, 0.8, 0.6, [40.0, 42.0], [{"rank": 1}, {"rank": 1}, {"rank": 0}], 0.1
    ),
    _bench("explicit_prefetch", 2, 90.0, 3.0, 2.0, 0.7, 0.5, [40.0, 50.0], [None], None),
    _sweep(2),
]
FOUR = [
    _bench("baseline", 4, 99.0, 4.0, 3.0, 0.6, 0.3, [40.0, 69.8, 41.0, 40.5], [{"rank": 1}] * 10, 0.4),
    _bench("explicit_prefetch", 4, 91.7, 5.0, 17.0, 0.5, None, [40.0, 69.8, 40.0, 40.0], [{"rank": 1}], 0.2),
    _sweep(4),
]


def _runs():
    return [
        Run("four", Path("b.json"), "benchmark_json", benchmarks=FOUR),
        Run("two", Path("a.json"), "benchmark_json", benchmarks=TWO),
    ]


def test_rows_by_scenario_fewest_ranks_first_with_step_against_the_fewest():
    view = world_size_view(_runs())
    assert view["world_sizes"] == [2, 4]
    rows = view["rows"]
    assert [(r["scenario"], r["ranks"]) for r in rows] == [
        ("baseline", 2),
        ("baseline", 4),
        ("explicit_prefetch", 2),
        ("explicit_prefetch", 4),
    ]
    b2, b4 = rows[0], rows[1]
    assert b4["step_vs_fewest_ranks"] == pytest.approx(99.0 / 88.0) and b2["step_vs_fewest_ranks"] == 1.0
    assert (b4["exposed_transfer_ms"], b4["exposed_wait_ms"], b4["overlap_ratio"]) == (4.0, 3.0, 0.6)
    assert b4["busbw_share"] == {"all_gather": 0.3, "reduce_scatter": None, "all_reduce": None}
    assert b4["busbw_gbps"] == {"all_gather": pytest.approx(60.0), "reduce_scatter": 1.5, "all_reduce": None}
    assert (b2["alignment_error_us"], b4["alignment_error_us"]) == (20.0, 40.0)
    assert b4["unresolved_share"] == 0.4
    assert b4["compute_only_max_over_min"] == pytest.approx(69.8 / 40.0)
    assert b4["straggler"] == "rank 1 (10/10 steps)"
    assert b2["straggler"] == "rank 1 (2/3 steps)"  # most common, not the last one seen
    assert rows[2]["straggler"] is None


def test_each_scenario_is_against_its_own_fewest_ranks_and_a_missing_step_stays_missing():
    from aorta.report.world_scaling import ordered

    rows = world_size_view(_runs())["rows"]
    assert (
        rows[2]["step_vs_fewest_ranks"] == 1.0
    )  # explicit_prefetch at 2 ranks: its own base, not baseline's
    assert rows[3]["step_vs_fewest_ranks"] == pytest.approx(91.7 / 90.0)
    assert rows[0]["compute_only_max_over_min"] == pytest.approx(42.0 / 40.0)  # two ranks are enough
    row = lambda ranks, step: {"scenario": "x", "run": str(ranks), "ranks": ranks, "step_ms": step}  # noqa: E731
    # no step at 2 ranks: 4 ranks becomes the base; 8 ranks without a step has no ratio
    out = ordered([row(8, None), row(4, 50.0), row(2, None), row(16, 75.0)])
    assert [r["step_vs_fewest_ranks"] for r in out] == [None, 1.0, None, 1.5]


def test_a_record_missing_a_figure_or_ranks_reads_none():
    bench = _bench("baseline", 2, 88.0, 2.0, 1.0, 0.8, 0.6, [40.0], [None], 0.1)
    metrics = bench["extra_info"]["metrics"]
    del metrics["exposed_wait_ms_worst_rank"]
    row = world_size_view([Run("a", Path("a.json"), "benchmark_json", benchmarks=[bench]), _runs()[0]])[
        "rows"
    ][0]
    assert row["ranks"] == 2 and row["exposed_wait_ms"] is None and row["exposed_transfer_ms"] == 2.0
    assert row["compute_only_max_over_min"] is None  # one rank's evidence: no asymmetry


def test_one_world_size_gives_no_view_and_the_text_names_the_sizes():
    assert world_size_view([Run("two", Path("a.json"), "benchmark_json", benchmarks=TWO)]) is None
    lines = view_lines(world_size_view(_runs()))
    assert lines[0] == "FSDP world-size scaling (2 vs 4 ranks):"
    assert any(line.startswith("baseline") and " four " in line and "1.125" in line for line in lines)
    four = next(line for line in lines if line.startswith("baseline") and " four " in line)
    assert "60 (30%)" in four and " 1.5 " in four  # GB/s with its share; GB/s alone where no ceiling


@pytest.mark.slow  # a whole report (matplotlib)
def test_aorta_report_prints_and_renders_the_view(tmp_path):
    from aorta.report.build import write_report

    for name, benches in (("a.json", TWO), ("b.json", FOUR)):
        doc = {"machine_info": {"aorta": {}}, "benchmarks": benches}
        (tmp_path / name).write_text(json.dumps(doc))
    summary = write_report(
        [(str(tmp_path / "a.json"), "two"), (str(tmp_path / "b.json"), "four")], tmp_path / "r"
    )
    assert summary["world_size_scaling"]["world_sizes"] == [2, 4]
    html = (tmp_path / "r" / "report.html").read_text()
    assert "FSDP world-size scaling" in html and "rank 1 (10/10 steps)" in html


def test_scale_summary_table_lists_scenarios_fsdp_tp_and_the_sweep():
    tp = {
        "name": "test_fsdp_tp[streams4-bf16]",
        "extra_info": {
            "workload": "fsdp_tp",
            "workload_info": {"comm": "collectives", "world_size": 4},
            "metrics": {"samples_per_s": {"value": 1.46e5}},
        },
    }
    sweep = {
        "name": "test_collective_sweep",
        "extra_info": {
            "workload": "fsdp_collective_sweep",
            "world_size": 4,
            "ceiling": {"all_reduce": [[65536.0, 1.5], [268435456.0, 300.0]]},
        },
    }
    lines = fsdp_tables.summary_lines(
        [("4ranks", {"benchmarks": FOUR + [tp, sweep]}), ("2ranks", {"benchmarks": TWO})]
    )
    text = "\n".join(lines)
    assert lines[0] == "FSDP scenarios:"
    assert (
        "1.125" in text
    )  # baseline at 4 ranks against 2: 99 / 88, fewest ranks first whatever the order given
    assert "collectives" in text and "1.46e+05" in text
    assert "64KiB: 1.5" in text and "256MiB: 300" in text
