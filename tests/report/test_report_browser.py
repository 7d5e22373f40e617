"""report.html renders in a real headless browser (Debian's chromium) and the screenshot is not blank."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from aorta.cli import main

DATA = Path(__file__).parents[1] / "data" / "report"
CHROMIUM = next(
    (
        p
        for p in (
            os.environ.get("AORTA_CHROMIUM"),
            shutil.which("chromium"),
            shutil.which("chromium-browser"),
            shutil.which("google-chrome"),
        )
        if p
    ),
    None,
)


def screenshot(page: Path, tmp_path: Path, size: str) -> Path:
    """A headless chromium screenshot of ``page`` (asserted to exist, with chromium's stderr if not)."""
    shot, profile = tmp_path / "shot.png", tmp_path / "profile"
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            f"--screenshot={shot}",
            f"--window-size={size}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.exists() and shot.stat().st_size > 0, proc.stderr[-2000:]
    return shot


@pytest.mark.slow  # starts a headless browser
@pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium found (scripts/bootstrap.sh dev installs it with apt-get "
    "when run as root on Debian); set AORTA_CHROMIUM to a browser binary",
)
def test_report_renders_in_headless_chromium(tmp_path):
    from PIL import Image

    out = tmp_path / "rep"
    assert (
        main(
            [
                "report",
                "--run",
                str(DATA / "fsdp_a"),
                "--label",
                "a",
                "--run",
                str(DATA / "fsdp_b"),
                "--label",
                "b",
                "--reference",
                "a",
                "--candidate",
                "b",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    shot = screenshot(out / "report.html", tmp_path, "1200,2400")
    img = Image.open(shot).convert("RGB")
    colours = img.getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 50, "screenshot is (nearly) one colour: the page did not render"
    # the embedded figures rendered: the overlap breakdown's green (overlapped) bars are on screen
    assert any(
        abs(r - 0x55) < 8 and abs(g - 0xA8) < 8 and abs(b - 0x68) < 8 for _, (r, g, b) in colours or []
    )
