"""A report stopped by SIGTERM or SIGHUP leaves nothing behind (issue 38, case 5): the folder it was built in
beside the output is removed, the earlier report stays whole, and ``aorta report`` exits 130 naming the
signal. The report runs in a child process that signals itself while drawing."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from aorta.record.stop_signals import Stopped, stop_signals_raise

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "report"

STOPS_ITSELF = textwrap.dedent(
    """
    import os, signal, sys
    from aorta.cli import main
    from aorta.report import build

    def drawing(*args, **kwargs):
        os.kill(os.getpid(), getattr(signal, sys.argv[2]))
        raise AssertionError("the signal did not stop the report")

    build.draw_figures = drawing
    sys.exit(main(["report", "--run", sys.argv[3], "--label", "a", "--output", sys.argv[1]]))
    """
)


def test_a_report_stopped_by_sigterm_removes_its_temp_folder_and_exits_143(tmp_path):
    sig = "SIGTERM"
    out = tmp_path / "rep"
    out.mkdir()
    (out / "report.html").write_text("the earlier report")
    proc = subprocess.run(
        [sys.executable, "-c", STOPS_ITSELF, str(out), sig, str(DATA / "hwq_per_round.json")],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 143, proc.stderr  # 128 + SIGTERM (issue 65)
    assert (
        f"aorta report: interrupted by {sig}: no report written; --output {out} is as it was" in proc.stderr
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]  # no .rep.tmp-* left beside it
    assert (out / "report.html").read_text() == "the earlier report"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # this process untouched


@pytest.fixture
def disposition():
    """Set a signal's disposition for one test, whatever the runner was started with (``nohup`` ignores
    SIGHUP), and put back the one it found."""
    found: dict[int, object] = {}

    def set_to(sig: int, handler) -> None:
        found.setdefault(sig, signal.getsignal(sig))
        signal.signal(sig, handler)

    yield set_to
    for sig, handler in found.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_inside_the_block_sigterm_and_sighup_raise_and_the_handlers_come_back(sig, disposition):
    disposition(sig, signal.SIG_DFL)
    with pytest.raises(Stopped, match=f"stopped by {sig.name}"), stop_signals_raise():
        os.kill(os.getpid(), sig)
        time.sleep(5)  # the handler runs at the next bytecode; never reached
    assert signal.getsignal(sig) is signal.SIG_DFL


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_ignored_when_the_block_begins_stays_ignored_as_nohup_asks(sig, disposition):
    disposition(sig, signal.SIG_IGN)
    with stop_signals_raise():
        assert signal.getsignal(sig) is signal.SIG_IGN
        os.kill(os.getpid(), sig)  # ignored: nothing raised
    assert signal.getsignal(sig) is signal.SIG_IGN
