"""``aorta report --sweep`` over two recorded sweeps (tests/data/sweeps: real CPU runs, stack B with
TORCH_NCCL_HIGH_PRIORITY=1): heatmap numbers, best cells, ratios, verdicts, differences, bad input, and the
page in a headless browser."""

import json
import math
import shutil
from pathlib import Path

import pytest
from test_report_browser import CHROMIUM, screenshot

from aorta.cli import main
from aorta.report.errors import ReportInputError
from aorta.report.sweep_summary import build_sweep_summary, layout
from aorta.report.sweeps import load_sweeps

DATA = Path(__file__).parents[1] / "data" / "sweeps"
A, B = str(DATA / "stack_a"), str(DATA / "stack_b")
BENCH = "test_tiny_kernel_stress[streams1-breadth-eager]"


def recorded(folder: str, cell: int) -> float:
    """The headline (us_per_launch) a cell's own benchmark JSON holds, read without the report's code."""
    doc = json.loads((Path(folder) / "sweep.json").read_text())
    run = json.loads((Path(folder) / doc["cells"][cell]["benchmark_json"]).read_text())
    bench = next(b for b in run["benchmarks"] if b["name"] == BENCH)
    return bench["extra_info"]["metrics"]["us_per_launch"]["value"]


@pytest.fixture(scope="module")
def summary():
    return build_sweep_summary(load_sweeps([A, B]))


def test_layout_puts_one_axis_across_and_more_down_and_across():
    x, y, z = ({"name": n, "values": ["1"]} for n in "xyz")
    assert layout([x]) == ([], [x])
    assert layout([x, y, z]) == ([x], [y, z])


def test_heatmap_cells_hold_each_cells_recorded_figure(summary):
    entry = next(
        h for h in summary["heatmaps"] if h["configuration"] == BENCH and h["metric"] == "us_per_launch"
    )
    grid = entry["stacks"]["A"]
    assert grid["rows"] == ["NCCL_NTHREADS=256", "NCCL_NTHREADS=512"]
    assert grid["cols"] == ["NCCL_MAX_NCHANNELS=4", "NCCL_MAX_NCHANNELS=16"]
    # cells in manifest order: (256, 4), (256, 16), (512, 4), (512, 16)
    assert grid["values"] == [[recorded(A, 0), recorded(A, 1)], [recorded(A, 2), recorded(A, 3)]]
    assert entry["stacks"]["B"]["values"][1][0] == recorded(B, 2)
    assert entry["higher_is_better"] is False and entry["unit"] == "us"


def test_best_cell_per_stack_is_the_lowest_launch_cost(summary):
    best = next(b for b in summary["best"]["B"] if b["configuration"] == BENCH)
    values = [recorded(B, i) for i in range(4)]
    assert best["value"] == min(values) and best["cells_compared"] == 4
    ids = [c["id"] for c in summary["sweeps"][1]["cells"]]
    assert best["cell"] == ids[values.index(min(values))]


def test_cells_are_compared_with_ratios_and_the_gates_verdicts(summary):
    comp = summary["comparisons"][0]
    assert (comp["reference"], comp["candidate"]) == ("A", "B")
    row = next(
        r
        for r in comp["rows"]
        if r["cell"] == "NCCL_NTHREADS=512 NCCL_MAX_NCHANNELS=16" and r["configuration"] == BENCH
    )
    assert row["ratio"] == pytest.approx(recorded(B, 3) / recorded(A, 3))
    assert row["verdict"] in ("SAME", "UNSURE", "FASTER", "SLOWER", "NOT_GATEABLE")  # a cell is one run
    assert len(comp["notes"]) == 4 and all("SAME" in n for n in comp["notes"])
    logs = [abs(math.log(r["ratio"])) for r in comp["disagree_most"]]
    assert logs == sorted(logs, reverse=True) and len(logs) == 8  # 4 cells x 2 benchmarks


def test_what_differs_between_the_stacks_leaves_the_grid_out(summary):
    between = summary["differences"]["between"]
    assert {
        "group": "settings",
        "name": "TORCH_NCCL_HIGH_PRIORITY",
        "values": {"A": "unset", "B": "1"},
    } in between
    assert not any(r["name"].startswith("NCCL_") for r in between)
    assert summary["differences"]["within"] == []


def test_a_failed_cell_is_grey_with_its_status_and_left_out_of_the_comparison(tmp_path):
    b = shutil.copytree(B, tmp_path / "stack_b")
    doc = json.loads((b / "sweep.json").read_text())
    doc["cells"][0].update(status="timeout", benchmark_json=None, note="stopped after --cell-timeout 60 s")
    (b / "sweep.json").write_text(json.dumps(doc))
    s = build_sweep_summary(load_sweeps([A, str(b)]))
    entry = next(h for h in s["heatmaps"] if h["configuration"] == BENCH)
    assert entry["stacks"]["B"]["values"][0][0] is None and entry["stacks"]["B"]["status"][0][0] == "timeout"
    assert "NCCL_NTHREADS=256 NCCL_MAX_NCHANNELS=4: did not finish in B" in s["comparisons"][0]["notes"]


def test_a_cell_whose_json_cannot_be_read_is_shown_as_unreadable(tmp_path):
    b = shutil.copytree(B, tmp_path / "stack_b")
    doc = json.loads((b / "sweep.json").read_text())
    (b / doc["cells"][3]["benchmark_json"]).write_text('{"benchmarks": [')  # truncated
    (sweep_b,) = load_sweeps([str(b)])
    cell = sweep_b.cells[3]
    assert cell.status == "unreadable" and cell.run is None and "is not valid JSON" in cell.note
    assert len(sweep_b.ok_cells()) == 3


def test_sweeps_over_other_variables_or_with_one_label_are_refused(tmp_path):
    b = shutil.copytree(B, tmp_path / "b")
    doc = json.loads((b / "sweep.json").read_text())
    doc["label"] = "A"
    (b / "sweep.json").write_text(json.dumps(doc))
    with pytest.raises(ReportInputError, match="are both labelled 'A'"):
        load_sweeps([A, str(b)])
    doc["label"], doc["grid"][1]["name"] = "B", "NCCL_MIN_NCHANNELS"
    (b / "sweep.json").write_text(json.dumps(doc))
    with pytest.raises(ReportInputError, match="need the same grid variables"):
        load_sweeps([A, str(b)])
    with pytest.raises(ReportInputError, match="holds no sweep.json"):
        load_sweeps([str(tmp_path)])


def test_cli_writes_the_report_and_refuses_runs_mixed_with_sweeps(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["report", "--sweep", A, "--sweep", B, "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "2 sweeps, 2 heatmaps" in printed and "where B and A disagree most" in printed
    assert sorted(p.name for p in out.iterdir()) == [
        "heatmap_test_tiny_kernel_stress_streams1-breadth-eager_us_per_launch.png",
        "heatmap_test_tiny_kernel_stress_streams2-breadth-eager_us_per_launch.png",
        "report.html",
        "summary.json",
    ]
    page = (out / "report.html").read_text()
    assert "TORCH_NCCL_HIGH_PRIORITY" in page and page.count("data:image/png;base64,") == 2
    assert "http://" not in page and "https://" not in page
    assert main(["report", "--sweep", A, "--run", "x.json", "--label", "x", "--output", str(out)]) == 2
    assert "--sweep makes a report of its own" in capsys.readouterr().err


@pytest.mark.slow  # starts a headless browser
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium found; set AORTA_CHROMIUM to a browser binary")
def test_sweep_report_renders_in_headless_chromium(tmp_path):
    from PIL import Image

    out = tmp_path / "rep"
    assert main(["report", "--sweep", A, "--sweep", B, "--output", str(out)]) == 0
    shot = screenshot(out / "report.html", tmp_path, "1300,2600")
    colours = Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 16) or []
    assert len(colours) > 50, "screenshot is (nearly) one colour: the page did not render"
    # the heatmaps rendered: viridis' bright end (#fde725) and the ratio map's green end are on screen
    assert any(abs(r - 0xFD) < 10 and abs(g - 0xE7) < 10 and abs(b - 0x25) < 14 for _, (r, g, b) in colours)
    assert any(r < 40 and 90 < g < 120 and 40 < b < 80 for _, (r, g, b) in colours)


def test_every_version_of_each_stack_is_listed(summary):
    versions = summary["differences"]["versions"]
    assert set(versions) == {"A", "B"}
    assert (
        versions["A"]["torch"]
        == json.loads(
            (
                Path(A) / "cells" / "cell01_NCCL_NTHREADS=256_NCCL_MAX_NCHANNELS=4" / "benchmark.json"
            ).read_text()
        )["machine_info"]["aorta"]["torch"]
    )


@pytest.mark.slow  # two torchrun launches of the FSDP baseline scenario on CPU (about 12 s each)
def test_fsdp_sweeps_under_torchrun_on_cpu_are_reported_cell_by_cell(tmp_path):
    import os
    import subprocess
    import sys

    from test_fsdp_torchrun_cpu import FSDP_BASELINE_2

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "TORCH_NCCL_HIGH_PRIORITY"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    for label, extra in (("A", {}), ("B", {"TORCH_NCCL_HIGH_PRIORITY": "1"})):
        cmd = [
            sys.executable,
            "-m",
            "aorta",
            "sweep",
            "--override",
            "training.steps=5",
            "--output",
            str(tmp_path / label),
            "--label",
            label,
            "--cell-timeout",
            "240",
            "--",
            *FSDP_BASELINE_2,
        ]
        done = subprocess.run(
            cmd, cwd=root, env={**env, **extra}, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    cell = json.loads((tmp_path / "A" / "sweep.json").read_text())["cells"][0]
    assert sorted(p.name for p in (tmp_path / "A" / cell["artifacts"]).glob("rank_*_metrics.jsonl")) == [
        "rank_0_metrics.jsonl",
        "rank_1_metrics.jsonl",
    ]
    s = build_sweep_summary(load_sweeps([str(tmp_path / "A"), str(tmp_path / "B")]))
    step = next(h for h in s["heatmaps"] if h["metric"] == "step_ms")
    assert step["configuration"] == "test_fsdp_scenario[baseline]" and step["stacks"]["A"]["values"][0][0] > 0
    (row,) = [r for r in s["comparisons"][0]["rows"] if r["metric"] == "step_ms"]
    assert row["ratio"] == pytest.approx(row["candidate"] / row["reference"])
    assert {"group": "settings", "name": "TORCH_NCCL_HIGH_PRIORITY", "values": {"A": "unset", "B": "1"}} in s[
        "differences"
    ]["between"]


def test_heatmaps_draw_one_axis_three_stacks_and_missing_cells(tmp_path):
    from PIL import Image

    from aorta.report.sweep_figures import draw_heatmap, ratio_grid

    def grid(values, status):
        return {
            "rows": [""],
            "cols": ["X=1", "X=2", "X=3"],
            "row_axis": "",
            "col_axis": "X",
            "row_ticks": [""],
            "col_ticks": ["1", "2", "3"],
            "values": [values],
            "status": [status],
        }

    a = grid([10.0, 20.0, None], ["ok", "ok", "timeout"])
    b = grid([5.0, 40.0, 30.0], ["ok", "ok", "ok"])
    assert ratio_grid(a, b)["values"] == [[0.5, 2.0, None]]
    entry = {
        "configuration": "c",
        "metric": "step_ms",
        "unit": "ms",
        "higher_is_better": False,
        "stacks": {"A": a, "B": b, "C": b},
    }
    path = draw_heatmap(entry, tmp_path / "h.png")
    width, height = Image.open(path).size
    assert width > 4 * height  # three stack panels and two ratio panels side by side
