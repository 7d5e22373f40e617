"""What the history keeps of a run file: one row per run, a document of several runs giving each."""

from __future__ import annotations

from history_docs import run_doc

from aorta.gate.baselines.baseline import combine_runs
from aorta.history.run_rows import run_rows, utc_text, verdict_rows


def test_a_document_of_several_runs_gives_each_in_order_with_its_samples():
    """Such a document keeps when each run was saved (``saved_at``), which is what the history keeps."""
    docs = [run_doc(f"2026-11-2{i}T08:00:00+00:00", 10.0 + i, host=f"h{i}") for i in range(3)]
    doc = combine_runs(docs, ["r0", "r1", "r2"])
    rows = run_rows(doc, "runs.json", "now")
    assert [r.recorded_at for r in rows] == [utc_text(e["saved_at"], "") for e in doc["aorta_runs"]]
    assert [next(f.value for f in r.figures if f.figure == "device_ms") for r in rows] == [10.0, 11.0, 12.0]
    assert {f.unit for r in rows for f in r.figures if f.figure == "busbw_gbps"} == {"GB/s"}
    assert len({r.run_key for r in rows}) == 3
    assert [r.machine_id for r in rows] == ["h0", "h1", "h2"]  # each run's own machine, not the document's


def test_times_are_kept_in_utc():
    assert utc_text("2026-11-26T09:30:00+01:00", "x") == "2026-11-26T08:30:00+00:00"
    assert utc_text("2026-11-26T08:30:00", "x") == "2026-11-26T08:30:00+00:00"
    assert utc_text(None, "fallback") == "fallback"


def test_verdict_rows_read_the_gates_verdict_file():
    doc = {
        "comparisons": [
            {
                "verdicts": [
                    {"benchmark": "b", "metric": "device_ms", "outcome": "SLOWER", "change_ratio": 0.06},
                    {"benchmark": "b", "metric": "busbw_gbps", "outcome": "UNSURE", "change_ratio": None},
                ]
            }
        ]
    }
    assert [(v.figure, v.verdict, v.change) for v in verdict_rows(doc)] == [
        ("device_ms", "SLOWER", 0.06),
        ("busbw_gbps", "UNSURE", None),
    ]
