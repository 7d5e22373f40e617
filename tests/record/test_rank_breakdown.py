"""The per-rank breakdown of a multi-rank run as the terminal and the report show it (pure: no torch)."""

from aorta.record import BenchRecord
from aorta.record.rank_breakdown import BREAKDOWN, per_rank_breakdown


def step(compute_only_ms: float) -> dict:
    return dict.fromkeys(BREAKDOWN, 0.0) | {"compute_only_ms": compute_only_ms}


def record(per_rank_steps: dict) -> BenchRecord:
    return BenchRecord(
        "fsdp",
        "cuda",
        "kernel timestamps",
        "device",
        [1.0],
        "step_ms",
        details={"per_rank_steps": per_rank_steps},
    )


def test_twelve_ranks_are_listed_in_rank_order_each_with_its_median_step():
    # the record keeps ranks as JSON keys (text): "10" sorts before "2" as text
    rec = record({str(r): [step(r + 1.0), step(r + 3.0), step(r + 2.0)] for r in (11, 0, 10, 2, 1)})
    rows = per_rank_breakdown(rec)
    assert [(row["rank"], row["steps"], row["compute_only_ms"]) for row in rows] == [
        (0, 3, 2.0),
        (1, 3, 3.0),
        (2, 3, 4.0),
        (10, 3, 12.0),
        (11, 3, 13.0),
    ]


def test_a_rank_that_kept_no_steps_has_no_row():
    assert [row["rank"] for row in per_rank_breakdown(record({"0": [step(1.0)], "1": []}))] == [0]
