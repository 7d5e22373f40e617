"""One benchmark's record: the contract between measuring and judging (pure: no torch).

pytest-benchmark keeps device time per round in its ``stats``; everything aorta adds lives in the
benchmark's ``extra_info``, which is this record written out by ``BenchRecord.to_extra_info()`` and read
back by ``BenchRecord.from_extra_info()``. Nothing else in aorta, nor any benchmark, reads or writes ``extra_info``
by key: a benchmark that adds details after its run (``with_details``) writes them with ``write_record``.

Schema 3 (this one) declares no noise floors: the gate measures each figure's noise between fresh-process
runs (aorta.stats.noise). Schemas 1 and 2 load; their declared floors (``min_effect``, a figure's
``noise_floor``) are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from aorta.record.metric import Metric

SCHEMA_VERSION = 3
READABLE_SCHEMAS = (1, 2, 3)

HOST_CLOCK = (
    "host_clock"  # a record's clock without device events (the CPU backend): its figures measure the host
)

# The typed core: every reader (gate, report, terminal table) needs these; the rest is kind-specific
# (hardware-queue intervals, FSDP per-rank figures, telemetry) and kept in ``details`` as written.
_CORE = (
    "aorta_schema",
    "workload",
    "backend",
    "timing_method",
    "clock",
    "device_ms_per_iteration",
    "metrics",
    "headline_metric",
    "unavailable",
    "min_effect",  # schema 1's declared floors: ignored
    "reading_notes",
)


@dataclass
class BenchRecord:
    """What one benchmark measured. ``metrics`` keeps the order figures were added in."""

    workload: str
    backend: str
    timing_method: str
    clock: str
    device_ms_per_iteration: list[float]
    headline_metric: str
    metrics: dict[str, Metric] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    reading_notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    schema: int = SCHEMA_VERSION

    # ------------------------------------------------------------------------------ building
    def add(self, *figures: Metric) -> BenchRecord:
        for m in figures:
            self.metrics[m.name] = m
        return self

    def with_details(self, **details: Any) -> BenchRecord:
        """This record with ``details`` added (kind-specific, kept as given): a new record, the run's own is
        left as it was measured (the session keeps it for reference runs)."""
        return replace(self, details={**self.details, **details})

    def mark_unavailable(self, reasons: Mapping[str, str]) -> BenchRecord:
        self.unavailable.update(reasons)
        return self

    # ------------------------------------------------------------------------------ reading
    def get(self, key: str, default: Any = None) -> Any:
        """A kind-specific detail (``streams_requested``, ``effective_concurrency``, ``per_rank`` ...)."""
        return self.details.get(key, default)

    def headline(self) -> Metric | None:
        return self.metrics.get(self.headline_metric)

    # ------------------------------------------------------------------------------ extra_info
    def to_extra_info(self) -> dict[str, Any]:
        return {
            "aorta_schema": self.schema,
            "workload": self.workload,
            "backend": self.backend,
            "timing_method": self.timing_method,
            "clock": self.clock,
            "device_ms_per_iteration": list(self.device_ms_per_iteration),
            "metrics": {name: m.as_dict() for name, m in self.metrics.items()},
            "headline_metric": self.headline_metric,
            "unavailable": dict(self.unavailable),
            "reading_notes": list(self.reading_notes),
            **self.details,
        }

    @classmethod
    def from_extra_info(cls, extra: Mapping[str, Any]) -> BenchRecord:
        """Read schema 1 or 2 (validated by ``aorta.record.load_run`` when it came from a file)."""
        details = {k: v for k, v in extra.items() if k not in _CORE}
        metrics = {
            str(name): Metric.from_dict(str(name), m)
            for name, m in (extra.get("metrics") or {}).items()
            if isinstance(m, Mapping)
        }
        record = cls(
            workload=str(extra.get("workload") or ""),
            backend=str(extra.get("backend") or ""),
            timing_method=str(extra.get("timing_method") or ""),
            clock=str(extra.get("clock") or ""),
            device_ms_per_iteration=[float(v) for v in extra.get("device_ms_per_iteration") or []],
            headline_metric=str(extra.get("headline_metric") or ""),
            metrics=metrics,
            unavailable=dict(extra.get("unavailable") or {}),
            reading_notes=list(extra.get("reading_notes") or []),
            details=details,
            schema=int(extra.get("aorta_schema") or 1),
        )
        return record


# In a benchmark's record: its run was made earlier in the session as another benchmark's reference (the same
# configuration), and is recorded here rather than measured twice. Its timed seconds were counted with that
# benchmark (``reference_timed_s``): the gate's ledger does not count them again.
MEASURED_AS_REFERENCE = "measured_as_reference"


def write_record(benchmark: Any, record: BenchRecord) -> None:
    """The one writer of a benchmark's ``extra_info`` (pytest-benchmark's ``benchmark`` fixture): ``record`` as
    ``to_extra_info`` gives it, over what an earlier write left (the ``hw_queue`` fixture writes the run's
    record; a benchmark that adds details after its run writes the record again, ``with_details``)."""
    benchmark.extra_info.update(record.to_extra_info())


def record_of(bench: Mapping[str, Any]) -> BenchRecord:
    """The record of one pytest-benchmark entry (``{"name", "fullname", "stats", "extra_info", ...}``)."""
    return BenchRecord.from_extra_info(bench.get("extra_info") or {})


def is_aorta_bench(bench: Mapping[str, Any]) -> bool:
    return isinstance(bench.get("extra_info"), Mapping) and "aorta_schema" in bench["extra_info"]


def schema_of(bench: Mapping[str, Any]) -> int | None:
    return (bench.get("extra_info") or {}).get("aorta_schema") if isinstance(bench, Mapping) else None


def raw_metrics(bench: Mapping[str, Any]) -> object:
    """The ``metrics`` entry as stored (for validation before it is read into a record)."""
    return (bench.get("extra_info") or {}).get("metrics")


def raw_device_ms(bench: Mapping[str, Any]) -> object:
    return (bench.get("extra_info") or {}).get("device_ms_per_iteration")
