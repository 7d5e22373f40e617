"""`aorta report`: the files it writes, a self-contained page, exit 2 on bad input, never a partial report."""

import json
import re
from pathlib import Path

import pytest
from run_once import once

from aorta.cli import main
from aorta.report import build

pytestmark = pytest.mark.slow  # builds whole reports, PNG figures included (seconds each)

DATA = Path(__file__).parents[1] / "data" / "report"
HWQ_A, HWQ_B = DATA / "hwq_per_round.json", DATA / "hwq_end_only.json"
FSDP_A, FSDP_B = DATA / "fsdp_a", DATA / "fsdp_b"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def report(out, *pairs, ref=None, cand=None, extra=()):
    argv = ["report", "--output", str(out), *extra]
    for path, label in pairs:
        argv += ["--run", str(path), "--label", label]
    if ref:
        argv += ["--reference", ref, "--candidate", cand]
    return main(argv)


@pytest.fixture(scope="module")
def full_report(pytestconfig, tmp_path_factory):
    return once(pytestconfig, tmp_path_factory, "report", _full_report)  # one report per session


def _full_report(folder):
    out = folder / "old-vs-new"
    rc = report(
        out,
        (FSDP_A, "old"),
        (FSDP_B, "new"),
        (HWQ_A, "per_round"),
        (HWQ_B, "end_only"),
        ref="old",
        cand="new",
    )
    assert rc == 0
    return out


def test_summary_json_holds_every_run_and_the_comparison(full_report):
    summary = json.loads((full_report / "summary.json").read_text())
    assert [r["label"] for r in summary["runs"]] == ["old", "new", "per_round", "end_only"]
    assert (summary["reference"], summary["candidate"]) == ("old", "new")
    top = summary["comparison"][0]
    assert (top["configuration"], top["metric"], top["better"]) == (
        "fsdp:baseline",
        "exposed_comm_ms_per_step",
        False,
    )
    assert summary["verdicts"] is None and "no verdicts" in summary["verdict_note"]


def test_every_figure_is_a_non_empty_png(full_report):
    expected = {
        "old_timeline.png",
        "new_timeline.png",
        "old_overlap_baseline.png",
        "new_overlap_baseline.png",
        "old_overlap_explicit_prefetch.png",
        "new_overlap_explicit_prefetch.png",
        "scaling_large_gemm_only-dtype=bf16.png",
        "scaling_large_gemm_only-dtype=fp32.png",
    }
    assert {p.name for p in full_report.glob("*.png")} == expected
    for name in expected:
        data = (full_report / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000, name


def test_the_page_is_self_contained(full_report):
    page = (full_report / "report.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.IGNORECASE)
    assert "<link" not in page and "<script" not in page and "@import" not in page
    srcs = re.findall(r'<img[^>]*\ssrc="([^"]*)"', page)
    assert len(srcs) == 8 and all(s.startswith("data:image/png;base64,") for s in srcs)


def test_the_page_shows_verdict_note_changes_environments_and_configurations(full_report):
    page = (full_report / "report.html").read_text()
    order = [
        page.index(h)
        for h in (
            "<h2>Verdicts",
            "<h2>Biggest changes",
            "<h2>Environments",
            "<h2>Hardware-queue workloads",
            "<h2>FSDP scenarios",
        )
    ]
    assert order == sorted(order)
    env = page[page.index("<h2>Environments") : page.index("<h2>Hardware-queue workloads")]
    assert (
        '<tr class="differs"><td>sync mode</td><td>-</td><td>-</td><td>per_round</td><td>end_only</td>' in env
    )
    assert "busbw_gbps.all_gather" in page and "exposed_comm_ms_per_step" in page


def test_verdicts_from_a_gate_file_are_shown(tmp_path):
    verdicts = tmp_path / "verdicts.json"
    verdicts.write_text(
        json.dumps(
            {
                "verdicts": [
                    {
                        "benchmark": "test_large_gemm_only[streams1-bf16]",
                        "metric": "tflops",
                        "verdict": "SLOWER",
                        "change_ratio": 0.9,
                        "p_value": 0.01,
                        "reason": "shifted by 10%",
                    }
                ]
            }
        )
    )
    out = tmp_path / "r"
    assert (
        report(out, (HWQ_A, "a"), (HWQ_B, "b"), ref="a", cand="b", extra=["--verdicts", str(verdicts)]) == 0
    )
    page = (out / "report.html").read_text()
    assert 'class="SLOWER"' in page and "shifted by 10%" in page


def test_the_gates_verdict_file_is_read_and_joined_to_the_changes(tmp_path):
    # the gate's verdict document: comparisons, verdicts keyed by pytest fullname, "outcome" for the verdict
    fullname = "benchmarks/hw_queue/test_large_gemm_only.py::test_large_gemm_only[streams1-fp32]"
    doc = {
        "schema": 1,
        "exit_code": 10,
        "comparisons": [
            {
                "baseline": "a",
                "candidate": "b",
                "verdicts": [
                    {
                        "benchmark": fullname,
                        "metric": "device_ms",
                        "unit": "ms",
                        "higher_is_better": False,
                        "outcome": "SLOWER",
                        "reason": "median +35483%",
                        "change_ratio": 354.8,
                        "p_value": 0.004,
                    },
                    {
                        "benchmark": fullname,
                        "metric": "tflops",
                        "unit": "TFLOP/s",
                        "higher_is_better": True,
                        "outcome": "SAME",
                        "reason": "within 3%",
                        "change_ratio": 0.01,
                        "p_value": 0.5,
                    },
                ],
            }
        ],
    }
    (tmp_path / "verdict.json").write_text(json.dumps(doc))
    out = tmp_path / "r"
    assert (
        report(
            out,
            (HWQ_A, "a"),
            (HWQ_B, "b"),
            ref="a",
            cand="b",
            extra=["--verdicts", str(tmp_path / "verdict.json")],
        )
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert [v["verdict"] for v in summary["verdicts"]] == ["SLOWER", "SAME"]
    page = (out / "report.html").read_text()
    changes = page[page.index("<h2>Biggest changes") : page.index("<h2>Environments")]
    assert "<td>test_large_gemm_only[streams1-fp32]</td><td>device_ms</td>" in changes
    assert '<td class="SLOWER">SLOWER</td>' in changes
    assert "+35480.0%" in page[page.index("<h2>Verdicts") : page.index("<h2>Biggest changes")]


def test_a_verdict_file_in_another_shape_exits_2(tmp_path, capsys):
    (tmp_path / "v.json").write_text('{"verdicts": [{"metric": "x"}]}')
    assert (
        report(tmp_path / "r", (HWQ_A, "a"), (HWQ_B, "b"), extra=["--verdicts", str(tmp_path / "v.json")])
        == 2
    )
    assert "lacks benchmark, metric or verdict" in capsys.readouterr().err


@pytest.mark.parametrize(
    "case, message",
    [
        ("twice", "label 'a' is used twice"),
        ("unknown_ref", "--reference 'zz' is not one of the run labels"),
        ("foreign", "not a pytest-benchmark JSON file"),
        ("nothing_common", "has nothing in common"),
        ("missing", "no such file or folder"),
    ],
)
def test_bad_input_exits_2_naming_the_file_or_label_and_writes_nothing(tmp_path, capsys, case, message):
    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"hello": "world"}')
    runs = {
        "twice": [(HWQ_A, "a"), (HWQ_B, "a")],
        "unknown_ref": [(HWQ_A, "a"), (HWQ_B, "b")],
        "foreign": [(HWQ_A, "a"), (foreign, "b")],
        "nothing_common": [(HWQ_A, "a"), (FSDP_A, "b")],
        "missing": [(HWQ_A, "a"), (tmp_path / "nope.json", "b")],
    }[case]
    out = tmp_path / "out"
    rc = report(
        out, *runs, ref="zz" if case == "unknown_ref" else None, cand="b" if case == "unknown_ref" else None
    )
    assert rc == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_a_failed_report_leaves_the_earlier_one_whole(tmp_path, monkeypatch):
    out = tmp_path / "rep"
    assert report(out, (HWQ_A, "a"), (HWQ_B, "b")) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken(*args, **kwargs):
        raise RuntimeError("disk full while drawing")

    monkeypatch.setattr(build, "draw_figures", broken)
    with pytest.raises(RuntimeError):
        report(out, (HWQ_A, "x"), (HWQ_B, "y"))
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]  # no temp folder left behind


def test_a_new_report_replaces_an_earlier_one_but_not_an_unrelated_folder(tmp_path, capsys):
    out = tmp_path / "rep"
    assert report(out, (HWQ_A, "a"), (HWQ_B, "b")) == 0
    assert report(out, (HWQ_A, "c"), (HWQ_B, "d")) == 0
    assert json.loads((out / "summary.json").read_text())["runs"][0]["label"] == "c"
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    assert report(other, (HWQ_A, "a"), (HWQ_B, "b")) == 2
    assert "holds no earlier report" in capsys.readouterr().err
    assert [p.name for p in other.iterdir()] == ["keep.txt"]


def test_run_and_label_counts_must_match(tmp_path, capsys):
    assert (
        main(
            [
                "report",
                "--run",
                str(HWQ_A),
                "--run",
                str(HWQ_B),
                "--label",
                "a",
                "--output",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert "one --label per --run" in capsys.readouterr().err


def test_labels_and_values_are_escaped_in_the_page(tmp_path):
    out = tmp_path / "r"
    assert report(out, (HWQ_A, "<b>old</b>"), (HWQ_B, "new&co"), ref="<b>old</b>", cand="new&co") == 0
    page = (out / "report.html").read_text()
    assert "<b>old</b>" not in page and "&lt;b&gt;old&lt;/b&gt;" in page and "new&amp;co" in page


def test_a_run_with_a_bad_sample_exits_2_naming_the_file_and_field(tmp_path, capsys):
    doc = json.loads(HWQ_B.read_text())
    doc["benchmarks"][0]["extra_info"]["device_ms_per_iteration"][1] = None  # the gate's own check, reused
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    out = tmp_path / "out"
    assert report(out, (HWQ_A, "a"), (bad, "b")) == 2
    err = capsys.readouterr().err
    assert f"aorta report: error: {bad}: benchmarks[0].extra_info.device_ms_per_iteration[1]: null" in err
    assert "Traceback" not in err and not out.exists()
