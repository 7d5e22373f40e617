"""Every refusal of the output checks, called in this process (aorta/record/output_paths.py, issue 58): each
branch that refuses a place gets a case it refuses, word for word, and a case beside it that it lets through,
so a check taken out, turned around or pointed at the wrong folder fails here. Nothing already saved is lost:
an existing file is never truncated by a check, and a stored history or baseline is never an output's place."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from aorta.record import output_paths
from aorta.record.output_paths import (
    KINDS,
    SNIFF_LIMIT_BYTES,
    OutputPathError,
    check_appendable,
    check_not_an_input,
    check_not_another_output,
    check_not_stored_runs,
    check_output,
    check_output_dir,
    check_output_file,
    check_output_renamed_into_place,
    check_path_names,
    stored_kind,
)

SQLITE_HEAD = b"SQLite format 3\0"


def _refusal(check, *args, **kw) -> str:
    with pytest.raises(OutputPathError) as exc:
        check(*args, **kw)
    return str(exc.value)


@pytest.fixture
def write_checks(monkeypatch):
    """The folders the writability check creates its temporary file in (the real ``mkstemp`` still runs)."""
    seen: list[tuple[str, str]] = []
    real = output_paths.tempfile.mkstemp

    def recording(*, prefix, dir):
        seen.append((prefix, str(dir)))
        return real(prefix=prefix, dir=dir)

    monkeypatch.setattr(output_paths.tempfile, "mkstemp", recording)
    return seen


# -- where writability is tried -------------------------------------------------------------------------------


def test_a_missing_folder_is_tried_in_its_nearest_existing_parent_with_a_hidden_named_file(
    tmp_path, write_checks
):
    out = tmp_path / "a" / "b" / "c"
    assert check_output_dir("--out", str(out)) == out
    assert write_checks == [(".aorta-write-check.", str(tmp_path))]
    assert not (tmp_path / "a").exists()  # nothing created by the check
    assert list(tmp_path.iterdir()) == []


def test_a_relative_missing_folder_is_tried_in_the_working_folder(tmp_path, monkeypatch, write_checks):
    monkeypatch.chdir(tmp_path)
    assert check_output_file("--out", "x/y/run.json") == Path("x/y/run.json")
    assert write_checks == [(".aorta-write-check.", ".")]


def test_a_file_output_is_tried_in_its_own_existing_folder(tmp_path, write_checks):
    (tmp_path / "runs").mkdir()
    check_output_file("--out", tmp_path / "runs" / "run.json")
    assert write_checks == [(".aorta-write-check.", str(tmp_path / "runs"))]


def test_a_write_refused_without_an_errno_says_what_was_raised(tmp_path, monkeypatch):
    def refused(**kw):
        raise OSError("quota reached")

    monkeypatch.setattr(output_paths.tempfile, "mkstemp", refused)
    assert _refusal(check_output_file, "--out", tmp_path / "x.json") == (
        f"--out {tmp_path / 'x.json'}: cannot write in {tmp_path}: quota reached"
    )


# -- a file where a folder is meant, a folder where a file is meant --------------------------------------------


def test_a_folder_output_that_is_a_file_is_refused_naming_the_file(tmp_path):
    f = tmp_path / "f"
    f.write_text("kept")
    assert _refusal(check_output_dir, "--runs-dir", f) == f"--runs-dir {f}: {f} is a file, not a folder"
    assert _refusal(check_output_dir, "--runs-dir", f / "sub" / "deeper") == (
        f"--runs-dir {f / 'sub' / 'deeper'}: cannot be created: {f} is a file, not a folder"
    )
    assert f.read_text() == "kept"


def test_a_file_output_that_is_a_folder_is_refused(tmp_path):
    assert (
        _refusal(check_output_file, "--json", tmp_path) == f"--json {tmp_path}: is a folder; give a file name"
    )


def test_a_file_output_under_a_file_is_refused_naming_the_file(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    assert _refusal(check_output_file, "--json", f / "x.json") == (
        f"--json {f / 'x.json'}: {f} is a file, not a folder"
    )


def test_a_writer_that_does_not_create_its_folder_needs_it_there(tmp_path):
    missing, f = tmp_path / "missing", tmp_path / "f"
    f.write_text("")
    assert _refusal(check_output_file, "--benchmark-json", missing / "x.json", create_parent=False) == (
        f"--benchmark-json {missing / 'x.json'}: its folder {missing} does not exist; create it first or give "
        "another path"
    )
    assert _refusal(check_output_file, "--benchmark-json", f / "x.json", create_parent=False) == (
        f"--benchmark-json {f / 'x.json'}: its folder {f} is a file, not a folder; create it first or give "
        "another path"
    )
    assert (
        check_output_file("--benchmark-json", tmp_path / "x.json", create_parent=False) == tmp_path / "x.json"
    )
    assert check_output_file("--json", missing / "x.json") == missing / "x.json"  # the writer creates it


def test_a_place_renamed_into_place_needs_a_parent_that_can_be_a_folder(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    assert check_output_renamed_into_place("--output", str(tmp_path / "new" / "R")) == tmp_path / "new" / "R"
    assert _refusal(check_output_renamed_into_place, "--output", f / "R") == (
        f"--output {f / 'R'}: {f} is a file, not a folder"
    )


# -- names too long, links that lead nowhere ------------------------------------------------------------------


def test_the_name_limit_is_the_one_of_the_deepest_existing_folder(tmp_path, monkeypatch):
    asked = []

    def pathconf(folder, name):
        asked.append((str(folder), name))
        return 40

    monkeypatch.setattr(output_paths.os, "pathconf", pathconf)
    (tmp_path / "a").mkdir()
    out = tmp_path / "a" / "b" / ("n" * 41)
    assert _refusal(check_path_names, "--history", str(out)) == (
        f"--history {out}: the name {'n' * 40}... is 41 bytes long; this filesystem takes at most 40"
    )
    assert asked == [(str(tmp_path / "a"), "PC_NAME_MAX")]
    check_path_names("--history", tmp_path / "a" / "b" / ("n" * 40))  # at the limit: taken


def test_a_relative_path_asks_the_limit_from_the_working_folder_down(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(output_paths.os, "pathconf", lambda folder, name: asked.append(str(folder)) or 255)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    check_path_names("--history", "a/history.db")
    check_path_names("--history", "missing/history.db")
    assert asked == ["a", "."]


def test_where_the_filesystem_does_not_say_its_limit_255_bytes_are_taken(tmp_path, monkeypatch):
    def unknown(folder, name):
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(output_paths.os, "pathconf", unknown)
    check_output_file("--json", tmp_path / ("a" * 255))
    long = "é" * 128  # 128 characters, 256 bytes
    assert _refusal(check_output_file, "--json", tmp_path / long) == (
        f"--json {tmp_path / long}: the name {long[:40]}... is 256 bytes long; this filesystem takes at most 255"
    )


def test_the_name_of_a_place_renamed_into_place_is_checked_itself(tmp_path):
    long = "r" * 300
    message = _refusal(check_output_renamed_into_place, "--output", tmp_path / long)
    assert message.startswith(f"--output {tmp_path / long}: the name {'r' * 40}... is 300 bytes long; ")


def test_a_link_that_leads_nowhere_anywhere_on_the_path_is_refused_naming_it(tmp_path):
    (tmp_path / "gone").symlink_to(tmp_path / "missing")
    (tmp_path / "real").mkdir()
    (tmp_path / "good").symlink_to(tmp_path / "real")
    out = tmp_path / "gone" / "sub" / "x.json"
    assert _refusal(check_output_file, "--json", out) == (
        f"--json {out}: {tmp_path / 'gone'} is a symbolic link that leads nowhere (a loop or a missing target)"
    )
    assert _refusal(check_output_renamed_into_place, "--output", tmp_path / "gone") == (
        f"--output {tmp_path / 'gone'}: {tmp_path / 'gone'} is a symbolic link that leads nowhere (a loop or a "
        "missing target)"
    )
    assert check_output_file("--json", tmp_path / "good" / "x.json") == tmp_path / "good" / "x.json"


# -- appended to: nothing already there is lost ----------------------------------------------------------------


def test_an_existing_summary_is_opened_for_appending_and_kept_as_it_was(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("## earlier step\n")
    assert check_appendable("$GITHUB_STEP_SUMMARY", str(summary)) == summary
    assert summary.read_text() == "## earlier step\n"


def test_a_summary_that_is_a_folder_or_in_a_missing_folder_is_refused(tmp_path):
    assert _refusal(check_appendable, "$GITHUB_STEP_SUMMARY", tmp_path) == (
        f"$GITHUB_STEP_SUMMARY {tmp_path}: is a folder; give a file name"
    )
    missing = tmp_path / "no" / "summary.md"
    assert _refusal(check_appendable, "$GITHUB_STEP_SUMMARY", missing) == (
        f"$GITHUB_STEP_SUMMARY {missing}: its folder {missing.parent} does not exist; create it first or give "
        "another path"
    )
    assert check_appendable("$GITHUB_STEP_SUMMARY", tmp_path / "new.md") == tmp_path / "new.md"
    assert not (tmp_path / "new.md").exists()


def test_a_summary_that_cannot_be_opened_for_appending_is_refused(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("kept")

    def read_only(path, mode="r", **kw):  # as a read-only file answers: read yes, append no
        if "a" in mode or "w" in mode:
            raise PermissionError(13, "Permission denied")
        return open(path, mode, **kw)

    monkeypatch.setattr(output_paths, "open", read_only, raising=False)
    assert _refusal(check_appendable, "$GITHUB_STEP_SUMMARY", summary) == (
        f"$GITHUB_STEP_SUMMARY {summary}: cannot be appended to: Permission denied"
    )
    assert summary.read_text() == "kept"


# -- an output is never an input --------------------------------------------------------------------------------


def test_an_output_is_refused_on_an_input_under_any_spelling_or_link(tmp_path):
    base = tmp_path / "base.json"
    base.write_text("{}")
    (tmp_path / "link.json").symlink_to(base)
    inputs = {"a candidate": tmp_path / "cand.json", "the baseline": base}  # the second one matches
    for given in (base, tmp_path / "x" / ".." / "base.json", tmp_path / "link.json"):
        assert _refusal(check_not_an_input, "--json", given, inputs) == (
            f"--json {given}: is the baseline ({base}), an input of this run; writing there would replace what "
            "is stored in it: give another path"
        )


def test_a_hard_link_to_an_input_is_that_input(tmp_path):
    base = tmp_path / "base.json"
    base.write_text("{}")
    os.link(base, tmp_path / "same.json")
    assert ": is the baseline (" in _refusal(
        check_not_an_input, "--json", tmp_path / "same.json", {"the baseline": base}
    )
    assert ": is also --json (" in _refusal(
        check_not_another_output, "--markdown", tmp_path / "same.json", {"--json": base}
    )


def test_a_history_not_yet_created_is_refused_as_an_output_through_a_linked_folder(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "data")
    history = tmp_path / "data" / "history.db"  # created by the run, after the checks
    out = tmp_path / "alias" / "history.db"
    assert _refusal(check_output, "--junitxml", out, inputs={"the history": history}) == (
        f"--junitxml {out}: is the history ({history}), an input of this run; writing there would replace what "
        "is stored in it: give another path"
    )
    assert ": is also --json (" in _refusal(check_not_another_output, "--markdown", out, {"--json": history})


def test_names_no_filesystem_takes_are_compared_as_written(tmp_path):
    odd = tmp_path / "bad\0name"
    assert ": is the run (" in _refusal(
        check_not_an_input, "--json", str(odd), {"the run": tmp_path / "x" / ".." / "bad\0name"}
    )
    check_not_an_input("--json", tmp_path / "other", {"the run": odd})


def test_an_existing_output_is_not_taken_for_an_input_that_is_not_there(tmp_path):
    out = tmp_path / "out.json"
    out.write_text("{}")
    check_not_an_input("--json", out, {"the history": tmp_path / "history.db"})


def test_an_input_that_cannot_be_compared_is_not_taken_for_the_output(tmp_path, monkeypatch):
    out, other = tmp_path / "out.json", tmp_path / "other.json"
    out.write_text("{}")
    other.write_text("{}")

    def cannot(a, b):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(output_paths.os.path, "samefile", cannot)
    check_not_an_input("--json", out, {"the baseline": other})


def test_an_output_inside_a_folder_that_is_read_is_refused_but_not_one_beside_it(tmp_path):
    runs = tmp_path / "runs"
    (runs / "sub").mkdir(parents=True)
    (tmp_path / "runs2").mkdir()
    inputs = {"what --sweep names": runs}
    out = runs / "sub" / "x.json"
    assert _refusal(check_not_an_input, "--json", out, inputs) == (
        f"--json {out}: is inside {runs}, a folder this run reads (what --sweep names); a file written there is "
        "read as an input: give a path outside it"
    )
    check_not_an_input("--json", tmp_path / "runs2" / "x.json", inputs)  # a name that only starts the same
    check_not_an_input("--json", tmp_path / "x.json", inputs)


def test_an_output_inside_a_read_folder_through_a_link_is_refused(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    (tmp_path / "alias").symlink_to(runs)
    message = _refusal(check_not_an_input, "--json", tmp_path / "alias" / "x.json", {"the runs": runs})
    assert message.startswith(f"--json {tmp_path / 'alias' / 'x.json'}: is inside {runs}, ")


def test_a_folder_replaced_whole_is_refused_where_it_holds_an_input_however_deep(tmp_path):
    history = tmp_path / "R" / "deep" / "history.db"
    history.parent.mkdir(parents=True)
    history.write_bytes(b"")
    assert _refusal(
        check_not_an_input, "--basetemp", tmp_path / "R", {"the history": history}, replaces=True
    ) == (
        f"--basetemp {tmp_path / 'R'}: holds the history ({history}), an input of this run; this folder is "
        "replaced as a whole, which would delete it: give another folder"
    )
    check_not_an_input("--basetemp", tmp_path / "S", {"the history": history}, replaces=True)


def test_an_input_that_is_no_path_at_all_never_stops_the_check(tmp_path):
    check_not_an_input("--basetemp", tmp_path / "R", {"odd": "bad\0name"}, replaces=True)


def test_two_outputs_on_one_file_are_refused_but_an_option_is_not_its_own_other(tmp_path):
    out = tmp_path / "x.json"
    out.write_text("")
    (tmp_path / "y.json").symlink_to(out)
    assert _refusal(check_not_another_output, "--markdown", out, {"--verdict-json": tmp_path / "y.json"}) == (
        f"--markdown {out}: is also --verdict-json ({tmp_path / 'y.json'}); two outputs cannot share one file, the "
        "second would replace the first: give each its own"
    )
    check_not_another_output("--markdown", out, {"--markdown": out})
    check_not_another_output("--markdown", out, {"--verdict-json": tmp_path / "z.json"})


# -- what is stored is never replaced ---------------------------------------------------------------------------


def test_a_history_and_a_baseline_are_told_by_their_content(tmp_path):
    history, base, other = tmp_path / "h", tmp_path / "b", tmp_path / "o"
    sqlite3.connect(history).execute("CREATE TABLE t (x)").connection.close()
    base.write_text('{"version": 1, "aorta_baseline": {"runs": []}}')  # the marker past the first 16 bytes
    other.write_text('{"benchmarks": []}')
    assert stored_kind(history) == "a run history (a SQLite database)"
    assert stored_kind(base) == "a baseline"
    assert stored_kind(other) is None
    assert stored_kind(tmp_path) is None
    assert stored_kind(tmp_path / "missing") is None


def test_the_marker_is_read_where_it_starts_inside_the_first_16_bytes(tmp_path):
    base = tmp_path / "b"
    base.write_text('{"x":1,"aorta_baseline":{}}')  # the marker starts at byte 7, ends past byte 16
    assert stored_kind(base) == "a baseline"


def test_a_history_is_told_whatever_its_size_a_baseline_only_up_to_the_limit(tmp_path):
    big_history, at_limit, past_limit = tmp_path / "h", tmp_path / "at", tmp_path / "past"
    with open(big_history, "wb") as fh:  # sparse: no disk used
        fh.write(SQLITE_HEAD)
        fh.truncate(2 * SNIFF_LIMIT_BYTES)
    for path, size in ((at_limit, SNIFF_LIMIT_BYTES), (past_limit, SNIFF_LIMIT_BYTES + 1)):
        with open(path, "wb") as fh:
            fh.write(b'{"aorta_baseline": {}}')
            fh.truncate(size)
    assert SNIFF_LIMIT_BYTES == 64 * 2**20
    assert stored_kind(big_history) == "a run history (a SQLite database)"
    assert stored_kind(at_limit) == "a baseline"
    assert stored_kind(past_limit) is None


def test_a_file_that_cannot_be_read_is_not_taken_for_stored_runs(tmp_path, monkeypatch):
    f = tmp_path / "f"
    f.write_bytes(SQLITE_HEAD)

    def refused(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(output_paths, "open", refused, raising=False)
    assert stored_kind(f) is None


def test_stored_runs_are_never_an_output_a_baseline_only_for_a_baseline_output(tmp_path):
    history, base = tmp_path / "history.db", tmp_path / "base.json"
    sqlite3.connect(history).execute("CREATE TABLE t (x)").connection.close()
    base.write_text('{"aorta_baseline": {}}')
    assert _refusal(check_not_stored_runs, "--junitxml", history, baseline_ok=True) == (
        f"--junitxml {history}: holds a run history (a SQLite database); writing there would replace the runs "
        "stored in it: give another path"
    )
    assert _refusal(check_not_stored_runs, "--json", base).startswith(f"--json {base}: holds a baseline; ")
    check_not_stored_runs("--aorta-save-baseline", base, baseline_ok=True)


# -- check_output: each kind goes through its own checks -------------------------------------------------------


@pytest.fixture
def places(tmp_path):
    history, base = tmp_path / "history.db", tmp_path / "base.json"
    sqlite3.connect(history).execute("CREATE TABLE t (x)").connection.close()
    base.write_text('{"aorta_baseline": {}}')
    (tmp_path / "trace").mkdir()
    return tmp_path, history, base


def test_a_file_output_may_create_its_folder_a_file_in_folder_may_not(places):
    tmp_path, _, _ = places
    out = tmp_path / "new" / "x.json"
    assert check_output("--json", str(out)) == out
    assert _refusal(check_output, "--benchmark-json", out, kind="file-in-folder").startswith(
        f"--benchmark-json {out}: its folder {out.parent} does not exist"
    )


@pytest.mark.parametrize("kind", ["file", "file-in-folder", "appended", "baseline"])
def test_a_file_kind_is_refused_on_an_input_and_on_a_history(places, kind):
    tmp_path, history, _ = places
    given = tmp_path / "given.json"
    given.write_text("{}")
    assert _refusal(check_output, "--o", given, kind=kind, inputs={"the run": given}).startswith(
        f"--o {given}: is the run ("
    )
    assert _refusal(check_output, "--o", history, kind=kind).startswith(f"--o {history}: holds a run history")
    check_output("--o", tmp_path / "free.json", kind=kind, inputs={"the run": given})


@pytest.mark.parametrize("kind", ["file", "file-in-folder", "appended"])
def test_only_a_baseline_output_may_replace_a_baseline(places, kind):
    tmp_path, _, base = places
    assert _refusal(check_output, "--o", base, kind=kind).startswith(f"--o {base}: holds a baseline")
    assert check_output("--aorta-save-baseline", base, kind="baseline") == base


def test_an_appended_output_that_is_a_folder_is_refused_as_appendable(places):
    tmp_path, _, _ = places
    assert _refusal(check_output, "$GITHUB_STEP_SUMMARY", tmp_path, kind="appended") == (
        f"$GITHUB_STEP_SUMMARY {tmp_path}: is a folder; give a file name"
    )


def test_a_folder_output_is_written_into_so_it_may_hold_an_input_but_not_be_inside_a_read_folder(places):
    tmp_path, history, _ = places
    assert check_output("--runs-dir", tmp_path, kind="dir", inputs={"the history": history}) == tmp_path
    inside = tmp_path / "trace" / "out"
    assert _refusal(
        check_output, "--runs-dir", inside, kind="dir", inputs={"the trace": tmp_path / "trace"}
    ).startswith(f"--runs-dir {inside}: is inside ")
    f = tmp_path / "f"
    f.write_text("")
    assert (
        _refusal(check_output, "--runs-dir", f, kind="dir") == f"--runs-dir {f}: {f} is a file, not a folder"
    )


@pytest.mark.parametrize("kind", ["renamed", "emptied"])
def test_a_folder_replaced_whole_may_not_hold_an_input_nor_be_stored_runs(places, kind):
    tmp_path, history, _ = places
    assert "which would delete it" in _refusal(
        check_output, "--output", tmp_path, kind=kind, inputs={"the history": history}
    )
    assert _refusal(check_output, "--output", history, kind=kind).startswith(
        f"--output {history}: holds a run history"
    )
    assert check_output("--output", str(tmp_path / "R"), kind=kind, inputs={"the history": history}) == (
        tmp_path / "R"
    )
    assert _refusal(check_output, "--output", history / "R", kind=kind) == (
        f"--output {history / 'R'}: {history} is a file, not a folder"
    )


def test_a_prefix_needs_a_writable_folder_and_is_no_input(places, write_checks):
    tmp_path, history, _ = places
    assert check_output("--benchmark-histogram", str(tmp_path / "new" / "hist"), kind="prefix") == (
        tmp_path / "new" / "hist"
    )
    assert write_checks == [(".aorta-write-check.", str(tmp_path))]
    assert ": is the history (" in _refusal(
        check_output, "--benchmark-histogram", history, kind="prefix", inputs={"the history": history}
    )
    f = tmp_path / "f"
    f.write_text("")
    assert _refusal(check_output, "--benchmark-histogram", f / "hist", kind="prefix") == (
        f"--benchmark-histogram {f / 'hist'}: {f} is a file, not a folder"
    )


def test_an_unknown_kind_is_refused_naming_every_kind():
    assert KINDS == ("file", "file-in-folder", "dir", "renamed", "emptied", "baseline", "appended", "prefix")
    with pytest.raises(ValueError) as exc:
        check_output("--o", "x", kind="folder")
    assert str(exc.value) == (
        "check_output: kind='folder'; allowed: file, file-in-folder, dir, renamed, emptied, baseline, appended, "
        "prefix"
    )
    assert not isinstance(exc.value, OutputPathError)


def test_no_check_leaves_a_file_or_changes_one(places):
    tmp_path, history, base = places
    before = {p: p.read_bytes() for p in (history, base)}
    names = sorted(os.listdir(tmp_path))
    for kind in KINDS:
        check_output("--o", tmp_path / "free", kind=kind)
    assert sorted(os.listdir(tmp_path)) == names
    assert {p: p.read_bytes() for p in (history, base)} == before
