"""A sweep report names no best configuration where no setting took effect (issue 38, case 25): with a
``knobs.json`` in which every setting of every cell has no evidence, ``aorta report --sweep`` says so instead
of naming a best cell; one setting with evidence somewhere and the best cell is named as before."""

import json
import shutil
from pathlib import Path

import pytest

from aorta.cli import main
from aorta.report.knob_doubt import knobs_without_any_evidence

DATA = Path(__file__).parents[1] / "data" / "sweeps"


def knobs(folder: Path, statuses: list[str]) -> None:
    rows = [{"cell": f"c{i}", "knobs": {"NCCL_NTHREADS": {"status": s}}} for i, s in enumerate(statuses)]
    (folder / "knobs.json").write_text(json.dumps({"cells": rows}))


@pytest.fixture
def sweep(tmp_path) -> Path:
    folder = tmp_path / "stack_a"
    shutil.copytree(DATA / "stack_a", folder)
    return folder


def test_no_best_is_named_where_no_setting_took_effect_in_any_cell(sweep, tmp_path, capsys):
    knobs(sweep, ["no_evidence", "no_evidence"])
    assert main(["report", "--sweep", str(sweep), "--output", str(tmp_path / "rep")]) == 0
    out = capsys.readouterr().out
    assert "  no best in " in out and "the knob check found no evidence that NCCL_NTHREADS took effect" in out
    assert "  best in " not in out
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "none: no evidence NCCL_NTHREADS took effect" in page


def test_evidence_in_one_cell_is_enough_to_name_the_best(sweep):
    knobs(sweep, ["no_evidence", "took_effect"])
    assert knobs_without_any_evidence(sweep) == []
    (sweep / "knobs.json").unlink()
    assert knobs_without_any_evidence(sweep) == []  # nothing checked: nothing to say
