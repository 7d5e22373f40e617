"""Every script, module or test file the docs and README cite exists (issue 24, case 19: a removed probe
script was still cited)."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
CITED = re.compile(
    r"`((?:scripts|aorta|tests|benchmarks|config|docker)/[A-Za-z0-9_./-]+\.(?:sh|py|yaml|md|txt))`"
)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_cited_file_exists(page):
    text = page.read_text(encoding="utf-8")
    missing = sorted(
        {
            m.group(1)
            for m in CITED.finditer(text)
            if not (REPO / m.group(1)).exists() and "removed" not in text[m.end() : m.end() + 12]
        }
    )  # a file cited as removed (history) is fine
    assert missing == [], f"{page.name} cites files that are not in the repository: {missing}"
