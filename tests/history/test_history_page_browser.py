"""``aorta history page`` in a real headless browser (Debian's chromium): the page loads with no console
message (no script error, no resource it fails to fetch) and every trend plot is in the rendered DOM."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from test_history_cli import write_runs
from test_report_browser import CHROMIUM

from aorta.cli import main

pytestmark = [
    pytest.mark.slow,  # starts a headless browser
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no chromium found (scripts/bootstrap.sh dev installs it with apt-get when run as root on "
        "Debian); set AORTA_CHROMIUM to a browser binary",
    ),
]


def load(page: Path, tmp_path: Path) -> tuple[str, list[str]]:
    """(the DOM after load, the console lines chromium logged)."""
    proc = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]


def test_the_check_sees_a_console_error(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>missing();</script></body></html>")
    _, console = load(bad, tmp_path)
    assert any("missing is not defined" in line for line in console)


def test_the_history_page_opens_with_no_console_error_and_every_plot(tmp_path):
    db = str(tmp_path / "h.db")
    assert main(["history", "--history", db, "add", *write_runs(tmp_path)]) == 0
    page = tmp_path / "history.html"
    assert main(["history", "--history", db, "page", str(page)]) == 0
    dom, console = load(page, tmp_path)
    assert console == []
    sections = re.findall(r"<section id=\"s\d+\">(.*?)</section>", dom, flags=re.S)
    assert len(sections) == 2  # device_ms and busbw_gbps of test_a
    for body in sections:
        assert body.count("<svg") == 1 and "<path" in body  # each plot drew its lines
    assert "versions.torch: 2.11.0+cu130 -&gt; 2.12.0+cu130" in dom
