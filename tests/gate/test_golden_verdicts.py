"""``aorta compare`` on the stored runs of tests/data and docs/data gives the verdicts pinned in
tests/data/verdicts_before (issue 66, item 4): exit code, verdict JSON and terminal lines, exactly, nothing masked
(tests/gate/golden_verdicts.py says what each case covers and how the files were made)."""

from pathlib import Path

import pytest
from golden_verdicts import CASES, GOLDEN, golden_text, outcome, stage


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("golden")
    stage(where)
    return where


def test_every_golden_file_is_a_case():
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(c.name for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_verdicts_are_the_pinned_ones(case, folder):
    assert golden_text(outcome(case, folder)) == (GOLDEN / f"{case.name}.json").read_text()
