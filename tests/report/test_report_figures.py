"""Figures whose data a run could not measure are still drawn, with the reason, never with invented numbers."""

import pytest

from aorta.report.fsdp_artifacts import ScenarioRank
from aorta.report.summary import breakdown_rows

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def figures():
    """aorta.report.figures, imported by the tests that draw: it imports matplotlib (most of a second), which
    every xdist worker would pay while collecting if it were imported here."""
    from aorta.report import figures

    return figures


def test_unmeasured_figures_are_drawn_with_their_reason(tmp_path, figures):
    cpu = ScenarioRank(
        "baseline",
        0,
        step_ms={1: 5.0, 2: 5.5},
        overlap=None,
        overlap_reason="CPU: no device kernel timestamps",
    )
    paths = [
        figures.draw_timeline("cpu", {"baseline": [cpu]}, tmp_path / "t.png"),
        figures.draw_overlap_breakdown("cpu", "baseline", breakdown_rows([cpu]), tmp_path / "o.png"),
        # a graph-replay workload: no per-stream events, so no effective concurrency
        figures.draw_scaling(
            "graph_w",
            {
                "headline_metric": "us_per_launch",
                "unit": "us",
                "runs": {"a": [(1, 2.0, None), (4, 1.5, None)]},
            },
            tmp_path / "s.png",
        ),
    ]
    for p in paths:
        assert p.read_bytes().startswith(PNG_MAGIC) and p.stat().st_size > 3000
    assert breakdown_rows([cpu]) == [
        {
            "rank": 0,
            "compute_only_ms": None,
            "overlapped_ms": None,
            "exposed_comm_ms": None,
            "idle_ms": None,
            "reason": "CPU: no device kernel timestamps",
        }
    ]


def test_a_scaling_panel_without_its_headline_says_why_and_warns_nothing(tmp_path, monkeypatch, figures):
    """Issue 24, case 17: hetero_kernels on the CPU drew an empty panel with no reason and a legend warning."""
    import warnings

    notes = []
    real = figures._note
    monkeypatch.setattr(figures, "_note", lambda ax, text: (notes.append(text), real(ax, text)))
    why = "CPU backend: the profiler records no device kernel timestamps"
    entry = {
        "headline_metric": "tiny_us_per_kernel",
        "unit": "us",
        "runs": {"cpu": [(2, None, None), (4, None, None)]},
        "concurrency_unavailable": [why],
        "headline_unavailable": [why],
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "No artists with labels found to put in legend"
        path = figures.draw_scaling("hetero_kernels", entry, tmp_path / "s.png")
    assert path.read_bytes().startswith(PNG_MAGIC)
    assert notes == [f"unavailable:\n{why}", f"unavailable:\n{why}"]


def test_the_scaling_series_carries_the_reason_a_headline_is_missing(figures):
    from aorta.report.summary import scaling_series

    cfg = {
        "kind": "benchmark",
        "streams": 2,
        "params": {"streams": 2},
        "workload": "hetero_kernels",
        "headline_metric": "tiny_us_per_kernel",
        "figures": {},
        "unavailable": {"tiny_us_per_kernel": "CPU backend: no kernel timestamps"},
    }
    out = scaling_series([{"label": "cpu", "configurations": {"x": cfg}}])
    assert out["hetero_kernels"]["headline_unavailable"] == ["CPU backend: no kernel timestamps"]
