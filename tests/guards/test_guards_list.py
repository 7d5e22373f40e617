"""``tests/guards/GUARDS.md`` names real tests and real bugs: a test renamed or a bug dropped from
``scripts/realistic_bugs.toml`` fails here, not silently in the list (issue 58)."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUARDS = (Path(__file__).with_name("GUARDS.md")).read_text(encoding="utf-8")
BUGS = {b["id"] for b in tomllib.loads((ROOT / "scripts" / "realistic_bugs.toml").read_text())["bug"]}


def test_every_test_the_list_names_exists():
    named = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", GUARDS)
    assert len(named) >= 30
    for path, func in named:
        assert (ROOT / path).is_file(), path
        if func:
            assert re.search(rf"^def {func}\(", (ROOT / path).read_text(encoding="utf-8"), re.M), (path, func)


def test_every_short_test_name_is_in_the_file_of_its_row():
    for row in GUARDS.splitlines():
        files = re.findall(r"`(tests/[\w/]+\.py)", row)
        for short in re.findall(r"`(test_\w+\.py)::(\w+)`", row):
            where = [f for f in files if f.endswith("/" + short[0])] or [
                str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob(short[0])
            ]
            assert where, short
            assert re.search(rf"^def {short[1]}\(", (ROOT / where[0]).read_text(encoding="utf-8"), re.M), (
                short
            )


def test_every_bug_the_list_names_is_in_the_realistic_bug_list():
    named = set(re.findall(r"bugs? `([\w-]+)`", GUARDS)) | set(
        re.findall(r"`((?:guard|plumb|after)-[\w-]+)`", GUARDS)
    )
    assert named and named <= BUGS, sorted(named - BUGS)
