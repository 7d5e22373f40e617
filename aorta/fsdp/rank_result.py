"""What one rank measured of one FSDP scenario, sent to every rank after its profiled steps (pure: no torch).

``aorta.fsdp.measure`` builds it; the ranks exchange it as a plain dict (``as_dict`` / ``from_dict``: the one
place it crosses processes); rank 0 turns every rank's into the record (``aorta.fsdp.figures``), which keeps
``record_dict()`` of each in ``per_rank``. Inside the suite its figures are attributes, so a misspelt or
missing one is a type error rather than a ``KeyError`` on rank 0 after every rank has run.

Every field but ``rank`` has a default so that a test can build a rank from the figures it is about; a rank
that ran always sets them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

# Sent to rank 0 but not kept in the record: the per-step kernel timelines are only for matching the
# collectives across ranks, and rank 0's kernel summary is kept once, outside ``per_rank``.
NOT_RECORDED = ("timeline", "kernel_summary")


@dataclass(frozen=True)
class RankResult:
    """One rank's measurements of one scenario. Field order is the order of the record's ``per_rank`` keys."""

    rank: int
    device_index: int | None = None
    step_ms: list[float] = field(default_factory=list)  # device ms of each timed step
    peak_memory_bytes: int | None = None  # None on the CPU backend
    samples_per_step: int = 0  # this rank's samples per optimizer step
    check: dict | None = None  # the first step against the unsharded model (Trainer.check_first_step)
    overlap: dict | None = None  # trace_analysis.analyze of the whole profiled window, as a dict
    overlap_reason: str | None = None  # why ``overlap`` is None
    per_step: list[dict] | None = None  # one dict of figures per profiled step (analyze of its kernels)
    per_step_reason: str | None = None
    per_step_note: str | None = None  # kernels or steps the per-step figures leave out, and how many
    timeline: dict | None = None  # per step: comm kernels, compute and window intervals (for matching)
    compute_slowdown_ratio: float | None = None  # against the compute-only reference
    slowdown_reason: str | None = None
    stream_busy_ms: dict[str, float] | None = None  # per device stream over the profiled window
    kernel_summary: dict[str, Any] | None = (
        None  # per normalised kernel name, per step (timeline.kernel_summary)
    )
    trace_file: str | None = None
    trace_note: str | None = None
    host_enqueue_ms: list[float] = field(default_factory=list)  # host time to enqueue each timed step
    comm_ballast: dict | None = None  # --aorta-test-comm-ballast: what was added, or why not
    host: dict | None = None  # where this rank runs (aorta.fsdp.rank_host): the evidence beside a straggler
    warnings: list[str] = field(default_factory=list)
    telemetry: dict | None = None  # this rank's GPU during the timed steps (aorta.fsdp.rank_telemetry)
    lean_run: str | None = None  # a gate's lean repeat run: why the first step went unchecked (fsdp.measure)
    host_phase_s: dict[str, float] = field(default_factory=dict)  # host seconds of each measuring step

    def as_dict(self) -> dict:
        """Every field, by name: what the ranks exchange."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def record_dict(self) -> dict:
        """The fields the record keeps in ``per_rank``."""
        return {k: v for k, v in self.as_dict().items() if k not in NOT_RECORDED}

    @classmethod
    def from_dict(cls, d: Mapping) -> RankResult:
        """``as_dict``'s output back; a key that is not a field is refused (a rank running other code)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"rank result with unknown keys {unknown}; expected some of {sorted(names)}")
        return cls(**d)


def recorded_keys() -> tuple[str, ...]:
    """The keys of each entry of the record's ``per_rank``, in order."""
    return tuple(f.name for f in fields(RankResult) if f.name not in NOT_RECORDED)
