"""Make a report directory: load -> summarise -> draw -> render, written atomically.

Everything is written into a temporary folder next to the output and moved into place at the end, so
a failed or interrupted report never leaves a partial one where a complete one was expected, and an
earlier report in that folder stays whole until the new one is complete.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from aorta.record.output_paths import OutputPathError, check_output_renamed_into_place
from aorta.report import html_page
from aorta.report import summary as summ
from aorta.report.errors import ReportInputError
from aorta.report.runs import Run, load_runs
from aorta.report.verdicts import gate_verdicts, load_verdict_file
from aorta.report.world_scaling import world_size_view

REPORT_FILES = ("report.html", "summary.json")


def _verdicts(
    runs: list[Run], reference: str | None, candidate: str | None, verdicts_path: str | None
) -> tuple[list[dict] | None, str]:
    if verdicts_path is not None:
        return load_verdict_file(verdicts_path), f"from {verdicts_path}"
    if reference is None:
        return None, "no verdicts: give --reference and --candidate (or --verdicts FILE from the gate)"
    by_label = {r.label: r for r in runs}
    ref = by_label.get(reference)
    cand = by_label.get(candidate) if candidate is not None else None
    if ref is None or cand is None or ref.kind != "benchmark_json" or cand.kind != "benchmark_json":
        return None, "no verdicts: the gate compares pytest-benchmark JSON runs; give --verdicts FILE"
    found, note = gate_verdicts(ref.path, cand.path, ref.label, cand.label)  # the labels asked for
    return found, (f"no verdicts: {note}" if found is None else note)


def check_output(output: Path) -> None:
    """Refuse to replace a folder (or file) that is not an earlier aorta report."""
    if output.exists() and not output.is_dir():
        raise ReportInputError(f"--output {output}: exists and is not a folder")
    if output.is_dir() and any(output.iterdir()) and not (output / "report.html").exists():
        raise ReportInputError(
            f"--output {output}: folder is not empty and holds no earlier report; "
            "choose a new or empty folder"
        )
    try:  # the report is built beside the output and moved into place: its parent must take new folders
        check_output_renamed_into_place("--output", output)
    except OutputPathError as exc:
        raise ReportInputError(str(exc)) from None


def _unique(name: str, used: set[str]) -> str:
    stem, n = name[:-4], 2
    while name in used:
        name, n = f"{stem}-{n}.png", n + 1
    used.add(name)
    return name


def draw_figures(runs: list[Run], scaling: dict, folder: Path) -> dict[str, str]:
    """Every figure of the report into ``folder``; returns figure key -> file name."""
    from aorta.report import figures  # matplotlib only when a report is being made

    names: dict[str, str] = {}
    used: set[str] = set()
    for key, entry in sorted(scaling.items()):
        name = _unique(f"scaling_{summ.safe_name(key)}.png", used)
        figures.draw_scaling(key, entry, folder / name)
        names[key] = name
    for run in runs:
        if not run.fsdp:
            continue
        by_scenario = summ.fsdp_scenarios(run.fsdp)
        name = _unique(f"{summ.safe_name(run.label)}_timeline.png", used)
        figures.draw_timeline(run.label, by_scenario, folder / name)
        names[f"timeline:{run.label}"] = name
        for scenario, ranks in by_scenario.items():
            name = _unique(f"{summ.safe_name(run.label)}_overlap_{summ.safe_name(scenario)}.png", used)
            figures.draw_overlap_breakdown(run.label, scenario, summ.breakdown_rows(ranks), folder / name)
            names[f"overlap:{run.label}:{scenario}"] = name
    return names


def _replace_dir(new: Path, output: Path) -> None:
    """Move the finished report into place; an earlier report is set aside first and removed after."""
    if output.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{output.name}.old-", dir=output.parent))
        os.rmdir(old)
        os.replace(output, old)
        os.replace(new, output)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(new, output)


def write_report(
    pairs: list[tuple[str, str]],
    output: str | Path,
    *,
    reference: str | None = None,
    candidate: str | None = None,
    verdicts_path: str | None = None,
) -> dict:
    """Write summary.json, the figures and report.html into ``output``; returns the summary."""
    output = Path(output)
    check_output(output)
    runs = load_runs(pairs)
    summary = summ.build_summary(runs, reference, candidate)  # validates labels before any gate work
    verdicts, note = _verdicts(runs, reference, candidate, verdicts_path)
    summary["verdicts"] = verdicts
    summary["world_size_scaling"] = world_size_view(runs)  # None unless FSDP runs at two or more world sizes
    scaling = summ.scaling_series(summary["runs"])
    with report_folder(output) as tmp:
        names = draw_figures(runs, scaling, tmp)
        summary["figure_files"] = names
        summary["verdict_note"] = note
        (tmp / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n", encoding="utf-8")
        page = html_page.render(summary, scaling, {k: tmp / v for k, v in names.items()}, note)
        (tmp / "report.html").write_text(page, encoding="utf-8")
    return summary


@contextlib.contextmanager
def report_folder(output: Path) -> Iterator[Path]:
    """A temporary folder beside ``output`` to write the report into; moved into place when the block ends,
    removed if it fails or is interrupted."""
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{output.name}.tmp-", dir=output.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes 0700; the report folder gets the usual permissions
    try:
        yield tmp
        _replace_dir(tmp, output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_sweep_report(folders: list[str], output: str | Path) -> dict:
    """The report of one or more recorded sweeps (``aorta report --sweep``): summary.json, one heatmap per
    configuration and figure, report.html; written beside ``output`` and moved into place when complete."""
    from aorta.report import sweep_page
    from aorta.report.sweep_summary import build_sweep_summary
    from aorta.report.sweeps import load_sweeps

    output = Path(output)
    check_output(output)
    summary = build_sweep_summary(load_sweeps(folders))
    with report_folder(output) as tmp:
        from aorta.report.sweep_figures import draw_heatmap

        figures: dict[str, Path] = {}
        used: set[str] = set()
        for i, entry in enumerate(summary["heatmaps"]):
            name = _unique(
                f"heatmap_{summ.safe_name(entry['configuration'])}_{summ.safe_name(entry['metric'])}.png",
                used,
            )
            figures[f"heatmap:{i}"] = draw_heatmap(entry, tmp / name)
        summary["figure_files"] = {k: v.name for k, v in figures.items()}
        (tmp / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n", encoding="utf-8")
        (tmp / "report.html").write_text(sweep_page.render(summary, figures), encoding="utf-8")
    return summary
