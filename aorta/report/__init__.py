"""Reports over saved runs: summary JSON, figures, one self-contained HTML page, Chrome traces.

Data and drawing are apart: ``runs`` and ``fsdp_artifacts`` read files, ``summary`` aggregates and
compares (pure, no torch, no matplotlib), ``figures`` draws (matplotlib, Agg, only when a report is
asked for), ``html_page`` renders, ``build`` writes a report directory atomically. ``chrome_trace``
turns recorded stream intervals into trace events; ``trace_merge`` merges per-rank profiler traces.
"""

from aorta.report.errors import ReportInputError

__all__ = ["ReportInputError"]
