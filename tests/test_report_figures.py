"""Figures whose data a run could not measure are still drawn, with the reason, never with invented numbers."""

from aorta.report import figures
from aorta.report.fsdp_artifacts import ScenarioRank
from aorta.report.summary import breakdown_rows

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_unmeasured_figures_are_drawn_with_their_reason(tmp_path):
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
