"""GPU telemetry of an FSDP scenario, per rank and for the record (pure: no torch).

Each rank samples its own GPU while its steps are timed (the telemetry plugin's sampler and summary,
aorta/telemetry); no step is dropped, since a step is one collective-synchronised unit across ranks and
dropping it on one rank would misalign the per-step figures. The record keeps every rank's summary in
``per_rank`` and, as ``telemetry``, the summary of the rank whose steps were most often throttled (the
lowest such rank on a tie, rank 0 where none was): the one ``aorta compare``'s ``throttle`` cause reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aorta.fsdp.rank_result import RankResult


def worst_rank_telemetry(ranks: Sequence[RankResult]) -> tuple[dict | None, str | None]:
    """``(summary with its "rank", None)`` for the record, or ``(None, why)`` where no rank sampled its GPU."""
    measured = [
        (r.rank, r.telemetry) for r in ranks if isinstance(r.telemetry, Mapping) and r.telemetry.get("rounds")
    ]
    if not measured:
        reasons = [
            str(r.telemetry.get("reason"))
            for r in ranks
            if isinstance(r.telemetry, Mapping) and r.telemetry.get("reason")
        ]
        return None, reasons[0] if reasons else "no rank recorded telemetry"
    rank, summary = max(measured, key=lambda rs: (rs[1].get("throttled_rounds") or 0, -rs[0]))
    return {"rank": rank, **summary}, None
