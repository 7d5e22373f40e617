"""One map of every place a command reads and writes (issue 56, class 1): a folder that is read stands for
everything in it, two outputs never share one file, and pytest's own outputs and ``$GITHUB_STEP_SUMMARY`` are
places like the others. Each case of the issue is refused before any work, naming the option: exit 2 for an
``aorta`` command, 4 for pytest."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from aorta.cli import main
from aorta.exit_codes import EXIT_PYTEST_USAGE, EXIT_USAGE
from aorta.record.output_paths import (
    OutputPathError,
    check_not_an_input,
    check_not_another_output,
    check_output,
)

RAISES = "def test_x():\n    raise AssertionError('ran')\n"


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- the pure checks ---------------------------------------------------------------------------------------


def test_a_file_inside_a_folder_that_is_read_is_an_input(tmp_path):
    (tmp_path / "trace").mkdir()
    with pytest.raises(
        OutputPathError, match=r"^--json .*new\.json: is inside .*trace, a folder this run reads"
    ):
        check_not_an_input(
            "--json", tmp_path / "trace" / "new.json", {"what TRACE names": tmp_path / "trace"}
        )
    check_not_an_input("--json", tmp_path / "beside.json", {"what TRACE names": tmp_path / "trace"})


def test_a_folder_replaced_whole_may_not_hold_an_input(tmp_path):
    run = tmp_path / "R" / "a.json"
    run.parent.mkdir()
    run.write_text("{}")
    with pytest.raises(OutputPathError, match=r"^--output .*R: holds the run .*a\.json.*would delete it"):
        check_not_an_input("--output", tmp_path / "R", {"the run": run}, replaces=True)
    check_not_an_input("--output", tmp_path / "R", {"the run": run})  # written into, not replaced: no refusal


def test_two_outputs_may_not_name_one_file(tmp_path):
    with pytest.raises(
        OutputPathError, match=r"^--markdown .*F: is also --verdict-json .*two outputs cannot share"
    ):
        check_not_another_output(
            "--markdown", tmp_path / "F", {"--verdict-json": tmp_path / "x" / ".." / "F"}
        )
    check_not_another_output("--markdown", tmp_path / "G", {"--verdict-json": tmp_path / "F"})


def test_an_emptied_folder_such_as_basetemp_may_not_hold_the_history(tmp_path):
    history = tmp_path / "tmp" / "history.db"
    history.parent.mkdir()
    sqlite3.connect(history).close()
    with pytest.raises(OutputPathError, match="--basetemp .*: holds the history"):
        check_output("--basetemp", tmp_path / "tmp", kind="emptied", inputs={"the history": history})


def test_step_summary_appended_never_onto_a_baseline(tmp_path):
    base = tmp_path / "base.json"
    base.write_text('{"aorta_baseline": {"runs": []}}')
    with pytest.raises(OutputPathError, match=r"^\$GITHUB_STEP_SUMMARY .*base\.json: holds a baseline"):
        check_output("$GITHUB_STEP_SUMMARY", base, kind="appended")


# -- the cases of issue 56, as a user types them --------------------------------------------------------------


def test_trace_figures_never_writes_into_the_trace_folder_it_reads(tmp_path, capsys):
    folder = tmp_path / "DIR"
    folder.mkdir()
    (folder / "kernel_trace.csv").write_text("Kernel_Name,Start_Timestamp,End_Timestamp\n")
    before = _snapshot(tmp_path)
    code = main(["trace", "figures", str(folder), "--json", str(folder / "kernel_trace.csv")])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert err.startswith(f"aorta trace figures: error: --json {folder / 'kernel_trace.csv'}: is "), err
    assert _snapshot(tmp_path) == before


def test_report_never_replaces_the_folder_that_holds_its_runs(tmp_path, capsys):
    runs = tmp_path / "R"
    runs.mkdir()
    for name in ("a.json", "b.json"):
        (runs / name).write_text("{}")
    before = _snapshot(tmp_path)
    code = main(
        ["report", "--run", str(runs / "a.json"), "--run", str(runs / "b.json"), "--output", str(runs)]
    )
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert err.startswith(f"aorta report: error: --output {runs}: holds "), err
    assert "would delete it" in err
    assert _snapshot(tmp_path) == before


def test_compare_refuses_verdict_and_markdown_in_one_file(tmp_path, capsys):
    ref, cand, out = tmp_path / "ref.json", tmp_path / "cand.json", tmp_path / "F"
    ref.write_text("{}")
    cand.write_text("{}")
    code = main(["compare", str(ref), str(cand), "--verdict-json", str(out), "--markdown", str(out)])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert f"--markdown {out}: is also --verdict-json" in err
    assert not out.exists()


def test_compare_refuses_markdown_on_its_default_verdict_place(tmp_path, capsys):
    ref, cand = tmp_path / "ref.json", tmp_path / "cand.json"
    ref.write_text("{}")
    cand.write_text("{}")
    code = main(["compare", str(ref), str(cand), "--markdown", str(tmp_path / "cand.verdict.json")])
    assert code == EXIT_USAGE
    assert "--markdown" in capsys.readouterr().err


def test_compare_never_appends_its_summary_to_the_baseline(tmp_path, capsys, monkeypatch):
    ref, cand = tmp_path / "ref.json", tmp_path / "cand.json"
    ref.write_text('{"aorta_baseline": {"runs": []}}')
    cand.write_text("{}")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(ref))
    before = ref.read_bytes()
    assert main(["compare", str(ref), str(cand)]) == EXIT_USAGE
    assert f"$GITHUB_STEP_SUMMARY {ref}: is " in capsys.readouterr().err
    assert ref.read_bytes() == before


def test_pytest_refuses_benchmark_json_and_verdict_json_in_one_file(pytester):
    pytester.makepyfile(RAISES)
    out = pytester.path / "x.json"
    r = pytester.runpytest_inprocess(f"--benchmark-json={out}", f"--aorta-verdict-json={out}")
    assert r.ret == EXIT_PYTEST_USAGE
    assert "two outputs cannot share one file" in r.stderr.str()
    assert "--aorta-verdict-json" in r.stderr.str() and "--benchmark-json" in r.stderr.str()


def test_pytest_never_writes_junit_xml_over_the_history(pytester):
    history = pytester.path / "history.db"
    pytester.makepyfile(RAISES)
    pytester.runpytest_inprocess("--aorta-history", str(history), "--co")  # creates the history
    before = history.read_bytes()
    r = pytester.runpytest_inprocess("--aorta-history", str(history), f"--junitxml={history}")
    assert r.ret == EXIT_PYTEST_USAGE
    assert f"--junitxml {history}: is the history database (--aorta-history)" in r.stderr.str()
    assert history.read_bytes() == before


def test_pytest_never_writes_junit_xml_over_a_history_it_was_not_given(pytester):
    other = pytester.path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE runs (id INTEGER)")
    pytester.makepyfile(RAISES)
    before = other.read_bytes()
    r = pytester.runpytest_inprocess(f"--junitxml={other}")
    assert r.ret == EXIT_PYTEST_USAGE
    assert f"--junitxml {other}: holds a run history" in r.stderr.str()
    assert other.read_bytes() == before


def test_pytest_never_appends_the_step_summary_to_the_baseline_it_compares_with(pytester, monkeypatch):
    base = pytester.path / "base.json"
    base.write_text('{"aorta_baseline": {"runs": []}}')
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(base))
    pytester.makepyfile(RAISES)
    before = base.read_bytes()
    r = pytester.runpytest_inprocess(f"--aorta-compare={base}")
    assert r.ret == EXIT_PYTEST_USAGE
    assert f"$GITHUB_STEP_SUMMARY {base}: " in r.stderr.str()
    assert base.read_bytes() == before


def test_pytest_benchmark_save_checks_its_storage_folder(pytester):
    storage = pytester.path / "storage"
    storage.write_text("a file, not a folder")
    pytester.makepyfile(RAISES)
    r = pytester.runpytest_inprocess("--benchmark-save=x", f"--benchmark-storage=file://{storage}")
    assert r.ret == EXIT_PYTEST_USAGE
    assert f"--benchmark-storage {storage}: " in r.stderr.str()


def test_pytest_basetemp_may_not_hold_the_history(pytester):
    history = pytester.path / "tmp" / "history.db"
    history.parent.mkdir()
    sqlite3.connect(history).close()
    pytester.makepyfile(RAISES)
    r = pytester.runpytest_inprocess("--aorta-history", str(history), f"--basetemp={history.parent}")
    assert r.ret == EXIT_PYTEST_USAGE
    assert f"--basetemp {history.parent}: holds the history database" in r.stderr.str()
    assert history.exists()


def test_ab_refuses_markdown_on_its_default_verdict_place(tmp_path, capsys):
    out = tmp_path / "ab"
    code = main(
        ["ab", "--a", "", "--b", "", "--out", str(out), "--markdown", str(out / "verdict.json"), "--", "x"]
    )
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert f"--markdown {out / 'verdict.json'}: is also --verdict-json" in err
    assert not out.exists()


def test_pytest_refuses_junit_xml_on_a_history_not_yet_created(pytester):
    history = pytester.path / "new-history.db"
    pytester.makepyfile(RAISES)
    r = pytester.runpytest_inprocess("--aorta-history", str(history), f"--junitxml={history}")
    assert r.ret == EXIT_PYTEST_USAGE
    assert f"--junitxml {history}: is the history database (--aorta-history)" in r.stderr.str()
