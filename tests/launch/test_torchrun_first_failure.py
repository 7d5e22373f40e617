"""The rank that failed first is named with its reason (issue 38, case 23): ranks other than 0 print nothing,
so each rank's first failure goes to a file of the launcher's, and ``aorta torchrun`` names the earliest
(it was never named: after 336 s the failing rank blamed the healthy one)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aorta.launch.torchrun import first_failure
from aorta.processes import rank_exit

REPO = Path(__file__).resolve().parents[2]


def test_the_earliest_failure_is_named_with_the_others_after_it(tmp_path):
    (tmp_path / "rank1.error").write_text(
        "100.5 t.py::test_big: torch.OutOfMemoryError: CUDA out of memory\n"
    )
    (tmp_path / "rank0.error").write_text(
        "130.0 t.py::test_big: RuntimeError: peer rank 1 closed the connection\n"
    )
    assert first_failure(tmp_path) == (
        "rank 1 failed first: t.py::test_big: torch.OutOfMemoryError: CUDA out of memory (later also rank 0)"
    )
    assert first_failure(tmp_path / "none") is None


OOM_TESTS = (
    "def test_ok():\n    pass\n\n"
    "def test_big():\n    raise MemoryError('out of memory on purpose')\n\n"
    "def test_later():\n    raise ValueError('a later failure')\n"
)


def test_a_rank_leaves_its_first_failure_and_its_code_in_process(pytester, monkeypatch):
    """``rank_exit.main``, which ``python -m aorta.processes.rank_exit`` exits with, run here (in pytester's folder,
    its modules put back after): the same files as from a rank's own process, in a fraction of its start-up."""
    codes = pytester.mkdir("codes")
    pytester.makepyfile(test_oom=OOM_TESTS)
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # main sets it as `python -m pytest` would see it
    assert rank_exit.main([str(codes), "-q", "-p", "no:cacheprovider", "test_oom.py"]) == 1
    assert (codes / "rank3.code").read_text().strip() == "1"
    assert (
        first_failure(codes)
        == "rank 3 failed first: test_oom.py::test_big: MemoryError: out of memory on purpose"
    )


@pytest.mark.slow  # a rank's own process: its exit status; the files in process: the test above
def test_a_rank_leaves_its_first_failure_and_its_code(tmp_path):
    codes = tmp_path / "codes"
    codes.mkdir()
    (tmp_path / "test_oom.py").write_text(OOM_TESTS)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "aorta.processes.rank_exit",
            str(codes),
            "-q",
            "-p",
            "no:cacheprovider",
            "test_oom.py",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO), "RANK": "3"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1 and (codes / "rank3.code").read_text().strip() == "1"
    assert (
        first_failure(codes)
        == "rank 3 failed first: test_oom.py::test_big: MemoryError: out of memory on purpose"
    )
