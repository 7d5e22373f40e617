"""The real AMD traces are read wherever the checkout is beside ``shared/``, or from ``AORTA_AMD_TRACES``, and
a test that cannot find them says where it looked and how to point elsewhere (tests/amd_traces.py)."""

import re
from pathlib import Path

import amd_traces

TESTS = Path(__file__).resolve().parent


def test_the_traces_are_read_from_the_folder_aorta_amd_traces_names(monkeypatch, tmp_path):
    monkeypatch.setenv("AORTA_AMD_TRACES", str(tmp_path))
    assert amd_traces.folder() == tmp_path
    assert amd_traces.header_line() == f"aorta: real AMD traces: {tmp_path} (found)"
    missing = tmp_path / "mi300.json.gz"
    assert amd_traces.absent(missing) == (
        f"{missing} is absent: the real AMD traces are read from {tmp_path}, named by $AORTA_AMD_TRACES; "
        "set AORTA_AMD_TRACES to the folder holding them to run this test"
    )


def test_without_it_they_are_read_from_shared_beside_the_checkout(monkeypatch):
    monkeypatch.delenv("AORTA_AMD_TRACES", raising=False)
    beside = TESTS.parent.parent / "shared" / "amd_traces"
    assert amd_traces.folder() == beside
    assert "beside the checkout (no $AORTA_AMD_TRACES set)" in amd_traces.absent()


def test_an_absent_folder_is_said_in_the_session_header(monkeypatch, tmp_path):
    monkeypatch.setenv("AORTA_AMD_TRACES", str(tmp_path / "nowhere"))
    assert amd_traces.header_line() == (
        f"aorta: real AMD traces: {tmp_path / 'nowhere'} (absent: the real-trace tests skip; set "
        "AORTA_AMD_TRACES to their folder)"
    )


def test_no_test_finds_the_traces_by_a_path_of_its_own():
    # one place decides where the traces are: a test that builds "shared/amd_traces" itself ignores the variable
    own = [
        p.relative_to(TESTS)
        for p in TESTS.rglob("*.py")
        if p.name not in ("amd_traces.py", "test_amd_traces_folder.py")
        and re.search(r"""["']amd_traces["']""", p.read_text(encoding="utf-8"))
    ]
    assert own == []
