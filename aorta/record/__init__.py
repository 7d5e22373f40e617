"""The run record: one module owns what a benchmark's ``extra_info`` holds, how a saved run is read and
validated, and how every output file is written (atomically, readable like any other file).

Beside it: ``metric`` (one reported figure), ``output_paths`` (every output place checked before a run),
``benchmark_json`` and ``benchmark_json_option`` (pytest-benchmark's JSON written whole, at the end),
``rank_breakdown`` (a multi-rank record's per-rank split, for the FSDP lines and the report) and ``table``
(plain-text tables for the terminal: what a run prints, as the record is what it writes)."""

from aorta.record.atomic import write_bytes_atomic, write_json_atomic, write_text_atomic
from aorta.record.bench import (
    READABLE_SCHEMAS,
    SCHEMA_VERSION,
    BenchRecord,
    is_aorta_bench,
    record_of,
    write_record,
)
from aorta.record.load import RecordError, check_run, check_samples, load_run

__all__ = [
    "READABLE_SCHEMAS",
    "SCHEMA_VERSION",
    "BenchRecord",
    "RecordError",
    "check_run",
    "check_samples",
    "is_aorta_bench",
    "load_run",
    "record_of",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_record",
    "write_text_atomic",
]
