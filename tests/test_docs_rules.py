"""The docs pages state rules in the present tense; issue numbers and the history of fixes live in the commit
log. Two pages are measurement logs, dated by design, and are left out: docs/measurements.md and
docs/mutation_testing.md. A link may still point at a log's dated section: link targets, code spans and
code blocks are not prose and are not read."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LOGS = {"measurements.md", "mutation_testing.md"}
PAGES = sorted(p for p in (REPO / "docs").glob("*.md") if p.name not in LOGS)

# What a page that states rules does not say, with the reason a reader would give.
BANNED = {
    r"(?P<repo>[\w.-]+/[\w.-]+ )?\bissues? #?\d+": "an issue number (history: the commit log has it)",
    r"\(#\d+\)": "an issue number (history: the commit log has it)",
    r"\bbefore this change\b": "history of a change",
    r"\b(?:was|were) fixed\b": "history of a fix",
    r"(?<!is )(?<!are )(?<!be )(?<!been )\bused to\b": "history ('used to')",
    r"\bno longer\b": "history ('no longer')",
    r"\bas before\b": "history ('as before')",
    r"\bis gone\b": "history ('is gone')",
    r"\b20\d\d-\d\d-\d\d\b": "a date (dated history; the measurement logs keep dates)",
}
NOT_PROSE = [
    re.compile(r"^```.*?^```", re.M | re.S),  # code blocks
    re.compile(r"`[^`]*`"),  # code spans
    re.compile(r"\]\([^)]*\)"),  # link targets (a log's anchors carry dates and issue numbers)
]


def prose(text: str) -> str:
    """The page's prose: code and link targets blanked, line breaks kept so findings have line numbers."""
    for pattern in NOT_PROSE:
        text = pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    return text


def findings(text: str) -> list[str]:
    """``line N: 'match' (reason)`` for each banned phrase in the prose of ``text``."""
    body = prose(text)
    found = []
    for pattern, reason in BANNED.items():
        for m in re.finditer(pattern, body, flags=re.I):
            if m.groupdict().get("repo"):
                continue  # another project's issue (ROCm/rocm-systems issue 11212): a citation, not history
            line = body.count("\n", 0, m.start()) + 1
            found.append((m.start(), f"line {line}: {m.group(0)!r} ({reason})"))
    return [f for _, f in sorted(found)]


def test_the_checker_finds_issue_numbers_and_history_and_spares_links_and_code():
    text = (
        "A run is judged paired (issue 63). Issue 55's rule holds.\n"
        "The gate no longer saves it, as before. It used to fail; this was fixed on 2026-11-28.\n"
        "See [the log](measurements.md#lean-runs-issue-63-h100-2026-12-07) and `issue 7`.\n"
        "```\nissue 9 in a code block\n```\n"
        "The seed is used to shuffle the files (ROCm/rocm-systems issue 11212).\n"
    )
    assert [f.split(" (")[0] for f in findings(text)] == [
        "line 1: 'issue 63'",
        "line 1: 'Issue 55'",
        "line 2: 'no longer'",
        "line 2: 'as before'",
        "line 2: 'used to'",
        "line 2: 'was fixed'",
        "line 2: '2026-11-28'",
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_states_rules_without_issue_numbers_or_history(page):
    found = findings(page.read_text(encoding="utf-8"))
    assert found == [], f"docs/{page.name} holds history that belongs in the commit log:\n" + "\n".join(found)
