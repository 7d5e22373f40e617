"""Where the gate's verdicts go: a JSON verdict file, a markdown summary, the CI job summary."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from aorta.gate.baseline import write_json_atomic
from aorta.gate.compare import Comparison
from aorta.gate.render import markdown, verdict_document
from aorta.report.atomic_files import write_text_atomic

DEFAULT_VERDICT_JSON = Path("reports") / "aorta-verdict.json"


class OutputPlaceError(ValueError):
    """A file or folder the gate was told to write cannot be written; names the option and the path."""


def check_writable_folder(option: str, folder: str | os.PathLike, *, for_file: str | os.PathLike | None = None) -> None:
    """Create ``folder`` if missing and write (then remove) a probe file in it, so that a place that
    cannot take the run's files is refused before any benchmark runs, not after."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".aorta-write-check.", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        where = "there" if for_file is None else f"in its folder {folder}"
        raise OutputPlaceError(f"{option} {for_file or folder}: cannot write {where} ({exc.strerror or exc}); "
                               "give a folder that exists or can be created, and that you may write to") from None


def check_writable_file(option: str, path: str | os.PathLike) -> None:
    """``path`` may be created or replaced: not a folder, in a folder that is (or can be made) writable."""
    path = Path(path)
    if path.is_dir():
        raise OutputPlaceError(f"{option} {path}: is a folder; give a file name, e.g. {path / 'verdict.json'}")
    check_writable_folder(option, path.parent, for_file=path)


def write_outputs(comps: Sequence[Comparison], exit_code: int, *, verdict_json: str | os.PathLike | None,
                  markdown_path: str | os.PathLike | None, environ: Mapping[str, str] = os.environ) -> list[str]:
    """Write the verdict JSON (atomically), the markdown file, and append the markdown to
    ``$GITHUB_STEP_SUMMARY`` when set. Returns one line per file written."""
    written = []
    if verdict_json:
        write_json_atomic(verdict_json, verdict_document(comps, exit_code))
        written.append(f"verdict JSON: {verdict_json}")
    md = markdown(comps)
    if markdown_path:
        write_text_atomic(markdown_path, md)
        written.append(f"markdown summary: {markdown_path}")
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as fh:
            fh.write(md + "\n")
        written.append(f"appended to $GITHUB_STEP_SUMMARY ({summary})")
    return written
