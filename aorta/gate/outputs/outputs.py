"""Where the gate's verdicts go: a JSON verdict file, a markdown summary, the CI job summary."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from aorta.gate.comparison.compare import Comparison
from aorta.gate.outputs.render import markdown, verdict_document
from aorta.record import write_json_atomic, write_text_atomic
from aorta.record.atomic import append_text

DEFAULT_VERDICT_JSON = Path("reports") / "aorta-verdict.json"


def write_outputs(
    comps: Sequence[Comparison],
    exit_code: int,
    *,
    verdict_json: str | os.PathLike[str] | None,
    markdown_path: str | os.PathLike[str] | None,
    environ: Mapping[str, str] = os.environ,
    budget: Mapping | None = None,
) -> list[str]:
    """Write the verdict JSON (atomically), the markdown file, and append the markdown to
    ``$GITHUB_STEP_SUMMARY`` when set. ``budget``: where the gate's wall went (``aorta.gate.runs.run_wall``),
    kept in the verdict JSON. Returns one line per file written."""
    written = []
    if verdict_json:
        write_json_atomic(verdict_json, verdict_document(comps, exit_code, budget=budget))
        written.append(f"verdict JSON: {verdict_json}")
    md = markdown(comps)
    if markdown_path:
        write_text_atomic(markdown_path, md)
        written.append(f"markdown summary: {markdown_path}")
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        append_text(summary, md + "\n")
        written.append(f"appended to $GITHUB_STEP_SUMMARY ({summary})")
    return written
