"""scripts/realistic_bugs.py and its list of hand-made bugs (docs/mutation_testing.md): the list names real
text and real tests, and a bug whose text the code no longer holds is reported stale, never caught."""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("realistic_bugs", ROOT / "scripts" / "realistic_bugs.py")
rb = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("realistic_bugs", rb)  # its dataclass looks its module up by name
_spec.loader.exec_module(rb)

BUGS = rb.load()
PACKAGES = {
    "gate",
    "fsdp",
    "timeline",
    "hw_queue",
    "timing",
    "sweep",
    "record",
    "cli",
    "history",
    "report",
    "device",
}


def test_the_list_covers_every_package_with_at_least_60_bugs():
    assert len(BUGS) >= 60
    assert {b.package for b in BUGS} == PACKAGES


@pytest.mark.parametrize("bug", BUGS, ids=lambda b: b.id)
def test_each_bug_names_tests_that_exist(bug):
    for test in bug.tests:
        path, _, name = test.partition("::")
        assert (ROOT / path).exists(), f"{bug.id}: {path} does not exist"
        if name:
            func = name.split("[")[0]
            assert re.search(rf"^def {func}\(", (ROOT / path).read_text(encoding="utf-8"), re.M), test


@pytest.mark.parametrize("bug", BUGS, ids=lambda b: b.id)
def test_each_bugs_text_is_in_its_file_once(bug):
    # Fails after a change moves the text: re-read the bug against the new code and fix its old/new text
    # (the script would report it "stale")
    assert rb.occurrences(bug, ROOT) == 1, f"{bug.id}: its old text is not found once in {bug.file}"


def test_a_bug_whose_text_the_code_no_longer_holds_is_stale_not_caught(tmp_path):
    (tmp_path / "m.py").write_text("def f():\n    return 1\n")
    moved = rb.Bug("moved", "gate", "m.py", "    return 0\n", "    return 2\n", "gone", ("tests",))
    assert rb.try_bug(moved, tmp_path, timeout_s=1) == ("stale", "old text not found")
    twice = rb.Bug("twice", "gate", "m.py", "1", "2", "ambiguous", ("tests",))
    (tmp_path / "m.py").write_text("a = 1\nb = 1\n")
    assert rb.try_bug(twice, tmp_path, timeout_s=1) == ("stale", "old text found 2 times")
    assert (tmp_path / "m.py").read_text() == "a = 1\nb = 1\n"  # never written


def test_a_malformed_entry_is_refused_naming_it(tmp_path):
    bad = tmp_path / "bugs.toml"
    bad.write_text('[[bug]]\nid = "x"\npackage = "gate"\nfile = "f"\nold = "a"\nnew = "b"\ntests = []\n')
    with pytest.raises(ValueError, match=r"bug #1 \(x\) lacks what"):
        rb.load(bad)
    bad.write_text(
        '[[bug]]\nid = "x"\npackage = "gate"\nfile = "f"\nold = "a"\nnew = "b"\nwhat = "w"\ntests = []\n'
        'expect = "missed"\n'
    )
    with pytest.raises(ValueError, match="an expected miss must say why no test can see it"):
        rb.load(bad)


def test_a_bug_runs_the_tests_that_reach_its_lines_the_named_first_then_the_quickest():
    text = "def f(x):\n    y = (x +\n         1)\n    return y\n"
    bug = rb.Bug(
        "b", "gate", "m.py", "         1)", "         2)", "off by one", ("tests/t.py::named", "tests/u.py")
    )
    reach = {
        "files": {"m.py": {"1": ["tests/t.py::at_import"], "2": ["tests/t.py::slow", "tests/t.py::quick"]}},
        "seconds": {"tests/t.py::slow": 3.0, "tests/t.py::quick": 0.1},
    }
    assert list(rb.changed_lines(bug, text)) == [3]
    # line 3 is inside the statement of line 2, which coverage records: its tests reach the bug
    assert rb.tests_for(bug, text, reach) == ["tests/t.py::named", "tests/t.py::quick", "tests/t.py::slow"]
    reach["at_import"] = {"m.py": [2]}  # its statement also runs at import: the list's whole files too, first
    assert rb.tests_for(bug, text, reach) == [
        "tests/t.py::named",
        "tests/u.py",
        "tests/t.py::quick",
        "tests/t.py::slow",
    ]
    reach["at_import"] = {"m.py": [2]}
    reach["files"]["m.py"] = {"1": ["tests/t.py::f"]}  # the statement runs at import only: the list's tests
    assert rb.tests_for(bug, text, reach) == ["tests/t.py::named", "tests/u.py"]
    reach["files"]["m.py"] = {"4": ["tests/t.py::later"]}  # no test reaches the lines: the list's tests
    assert rb.tests_for(bug, text, reach) == ["tests/t.py::named", "tests/u.py"]
    assert rb.tests_for(bug, text, None) == ["tests/t.py::named", "tests/u.py"]
