"""The inputs are what the run reads (issue 65, class 1): every option that writes, against every kind of file a
run reads whatever its options say (aorta/record/read_files.py), refused before any work naming the option and
the file: a module imported (aorta's plugin itself), a file of the aorta package, a plugin's or conftest file,
the configuration file, a collected test file; a folder replaced whole that holds one; a CSV the trace reader
opens beside a named ``kernel_trace.csv``; a run record ``aorta ab`` writes into ``--out``. Each of these was
replaced, exit 0."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import aorta
from aorta import cli
from aorta import plugin as aorta_plugin
from aorta.record.output_arguments import OPTION_OUTPUTS, option_outputs
from aorta.record.output_paths import OutputPathError
from aorta.record.read_files import (
    check_not_read,
    files_to_collect,
    module_files,
    package_files,
    plugin_files,
)

ROOT = Path(__file__).resolve().parents[2]
WRITTEN_OVER = ("file", "file-in-folder", "appended", "baseline")  # kinds whose file is replaced or appended


def read_kinds() -> dict[str, tuple[dict, Path]]:
    """Each kind of file a run reads: (the map the run builds of it, one such file)."""
    conftest = ROOT / "conftest.py"
    fake_conftest = SimpleNamespace(__file__=str(conftest), __name__="conftest")
    return {
        "an imported module (aorta's plugin)": (module_files(), Path(aorta_plugin.__file__)),
        "a file of the aorta package not imported": (
            package_files(aorta),
            ROOT / "aorta" / "sweep" / "cell_guard.py",
        ),
        "a conftest file": (plugin_files([fake_conftest]), conftest),
        "a collected test file": ({"a collected test file": Path(__file__)}, Path(__file__)),
        "the configuration file": ({"the configuration file": ROOT / "pytest.ini"}, ROOT / "pytest.ini"),
    }


def file_options() -> list[tuple[str, str]]:
    return sorted((dest, kind) for dest, (_, kind, _) in OPTION_OUTPUTS.items() if kind in WRITTEN_OVER)


@pytest.mark.parametrize("dest,kind", file_options())
@pytest.mark.parametrize("read_kind", sorted(read_kinds()))
def test_every_pytest_option_that_writes_is_refused_onto_every_kind_of_file_read(dest, kind, read_kind):
    read, target = read_kinds()[read_kind]
    before = target.read_bytes()
    outputs = option_outputs({dest: str(target)}, environ={})
    assert outputs, dest
    with pytest.raises(OutputPathError) as refused:
        check_not_read(outputs, read)
    assert str(refused.value).startswith(f"{OPTION_OUTPUTS[dest][0]} {target}: is ")
    assert "a file this run reads" in str(refused.value)
    assert target.read_bytes() == before


def test_a_hard_link_or_another_spelling_of_a_read_file_is_that_file(tmp_path):
    source = tmp_path / "test_x.py"
    source.write_text("x = 1\n")
    (tmp_path / "link.py").hardlink_to(source)
    read = {"a collected test file": source}
    for spelling in (tmp_path / "link.py", tmp_path / "." / "test_x.py"):
        with pytest.raises(OutputPathError, match="a collected test file"):
            check_not_read([("--junitxml", "file", str(spelling))], read)
    check_not_read([("--junitxml", "file", str(tmp_path / "other.xml"))], read)  # a file not read is fine


def test_a_folder_replaced_whole_that_holds_a_file_read_is_refused(tmp_path):
    read, target = read_kinds()["a file of the aorta package not imported"]
    with pytest.raises(OutputPathError, match="replaced as a whole"):
        check_not_read([("--basetemp", "emptied", str(target.parent))], read)
    check_not_read([("--benchmark-storage", "dir", str(target.parent))], read)  # written into, not replaced


def test_pytest_refuses_an_output_onto_a_collected_test_file_at_collection_s_end(pytestconfig, monkeypatch):
    """The plugin's check once the test files are known (pytest_collection_finish), on this very run's config."""
    item = SimpleNamespace(path=Path(__file__))
    monkeypatch.setattr(pytestconfig.option, "xmlpath", str(Path(__file__)), raising=False)
    with pytest.raises(OutputPathError, match="a collected test file"):
        aorta_plugin._check_not_read(pytestconfig, [item])  # type: ignore[list-item]
    monkeypatch.setattr(pytestconfig.option, "xmlpath", str(ROOT / "conftest.py"), raising=False)
    with pytest.raises(OutputPathError, match="conftest"):
        aorta_plugin._check_not_read(pytestconfig)


def test_an_aorta_command_never_writes_over_aorta_s_own_files(tmp_path, capsys):
    run = ROOT / "tests" / "data" / "report" / "hwq_end_only.json"
    for argv in (
        ["report", "--run", str(run), "--output", str(ROOT / "aorta" / "report")],
        ["trace", "figures", str(run), "--json", str(ROOT / "aorta" / "plugin.py")],
        ["history", "--history", str(tmp_path / "h.db"), "page", str(ROOT / "aorta" / "cli.py")],
    ):
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "a file of the aorta package" in err and err.count("\n") == 1, err


def test_a_csv_the_trace_reader_opens_beside_the_named_one_is_an_input(tmp_path, capsys):
    trace = tmp_path / "kernel_trace.csv"
    trace.write_text("Kind,Agent_Id\nKERNEL_DISPATCH,1\n")
    beside = tmp_path / "memory_copy_trace.csv"
    beside.write_text("Kind\nMEMORY_COPY\n")
    assert cli.main(["trace", "figures", str(trace), "--json", str(beside)]) == 2
    err = capsys.readouterr().err
    assert f"--json {beside}: is a trace file read with {trace}" in err
    assert beside.read_text() == "Kind\nMEMORY_COPY\n"


@pytest.mark.parametrize("option", ["--verdict-json", "--markdown"])
@pytest.mark.parametrize("record", ["A1.json", "Bcheck.log", "A2.done", "slowdown_units_B.json"])
def test_an_ab_output_named_as_a_run_record_inside_out_is_refused(tmp_path, capsys, option, record):
    out = tmp_path / "ab"
    code = cli.main(["ab", "--a", "", "--b", "", "--out", str(out), option, str(out / record), "--", "true"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{option} {out / record}: is a run record --out holds ({record})" in err
    assert not out.exists()  # refused before any work


def test_an_ab_output_inside_out_under_another_name_is_fine(tmp_path):
    from aorta.record.output_arguments import _records

    parser = cli.build_parser()
    args = parser.parse_args(
        [
            "ab",
            "--a",
            "",
            "--b",
            "",
            "--out",
            str(tmp_path),
            "--verdict-json",
            str(tmp_path / "v.json"),
            "--",
            "x",
        ]
    )
    assert _records(parser, args) == {}


@pytest.mark.slow
def test_a_real_run_refuses_junitxml_onto_a_test_file_it_collects_and_leaves_it(pytester):
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    folder = pytester.path
    before = (folder / "test_a.py").read_text()
    result = pytester.runpytest_subprocess(str(folder), "--junitxml", "test_a.py")
    assert result.ret == 4, result.stderr.str()
    assert "--junitxml test_a.py: is " in result.stderr.str()
    assert (folder / "test_a.py").read_text() == before
    assert sys.executable


# ------------------------------------------------------------------ files pytest will collect (leftover 1)
def _tree(tmp_path: Path) -> Path:
    (tmp_path / "sub").mkdir()
    for name in ("test_a.py", "b_test.py", "conftest.py", "helper.py", "sub/test_c.py", "notes.txt"):
        (tmp_path / name).write_text("x = 1\n")
    return tmp_path


@pytest.mark.parametrize("name", ["test_a.py", "b_test.py", "conftest.py", "sub/test_c.py"])
@pytest.mark.parametrize("option", sorted({o for o, k, _ in OPTION_OUTPUTS.values() if k in WRITTEN_OVER}))
def test_every_output_option_onto_a_file_pytest_will_collect_is_refused_naming_option_and_file(
    tmp_path, option, name
):
    """Collection comes after the options are checked, and --log-file is opened (emptied) at configure time:
    a file pytest *will* collect is read by the run as much as one already collected."""
    root = _tree(tmp_path)
    target = root / name
    outputs = [(option, "file", str(target))]
    with pytest.raises(OutputPathError) as refused:
        check_not_read(outputs, files_to_collect(outputs, [str(root)]))
    said = str(refused.value)
    assert said.startswith(f"{option} {target}: is a test file pytest will collect ({target.name})"), said
    assert target.read_text() == "x = 1\n"


def test_what_pytest_will_not_collect_is_no_test_file(tmp_path):
    root = _tree(tmp_path)
    for name in ("helper.py", "notes.txt", "new.xml"):
        assert files_to_collect([("--junitxml", "file", str(root / name))], [str(root)]) == {}
    outside = tmp_path.parent / f"test_{tmp_path.name}_outside.py"
    outside.write_text("x = 1\n")
    try:  # a test file outside the collected folders is not collected
        assert files_to_collect([("--junitxml", "file", str(outside))], [str(root / "sub")]) == {}
    finally:
        outside.unlink()


def test_a_file_named_for_collection_or_matching_python_files_is_collected_whatever_its_name(tmp_path):
    root = _tree(tmp_path)
    helper = str(root / "helper.py")
    named = files_to_collect([("--log-file", "file", helper)], [f"{helper}::test_x"])
    assert list(named) == ["a test file pytest will collect (helper.py, named on the command line)"]
    assert files_to_collect([("--log-file", "file", helper)], [str(root)], ["help*.py"])
    assert files_to_collect(
        [("--log-file", "file", str(root / "sub" / "test_c.py"))], [str(root)], ["sub/*.py"]
    )


def test_the_plugin_checks_the_files_pytest_will_collect_at_configure_time(
    pytestconfig, monkeypatch, tmp_path
):
    root = _tree(tmp_path)
    monkeypatch.setattr(pytestconfig, "args", [str(root)])
    monkeypatch.setattr(pytestconfig.option, "log_file", str(root / "sub" / "test_c.py"), raising=False)
    with pytest.raises(OutputPathError, match=r"^--log-file .*test_c.py: is a test file pytest will collect"):
        aorta_plugin._check_not_read(pytestconfig)


def test_an_output_an_ini_line_gives_is_checked_as_the_option_is():
    from aorta.record.output_arguments import with_ini_outputs

    ini = {"log_file": "test_a.py"}
    assert option_outputs(with_ini_outputs({"log_file": None}, ini.__getitem__), environ={}) == [
        ("--log-file", "file", "test_a.py")
    ]
    given = with_ini_outputs({"log_file": "run.log"}, ini.__getitem__)  # the command line wins, as in pytest
    assert option_outputs(given, environ={}) == [("--log-file", "file", "run.log")]


@pytest.mark.slow
@pytest.mark.parametrize(
    "how", [["--log-file", "test_a.py"], ["--junitxml", "test_a.py"], ["--debug", "test_a.py"], "ini"]
)
def test_a_real_run_refuses_an_output_onto_a_test_file_it_will_collect_before_writing_it(pytester, how):
    pytester.makeini("[pytest]\nlog_file = test_a.py\n" if how == "ini" else "[pytest]\n")
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    before = (pytester.path / "test_a.py").read_bytes()
    result = pytester.runpytest_subprocess(*([] if how == "ini" else how))
    err = result.stderr.str()
    assert result.ret == 4, err
    option = "--log-file" if how == "ini" else how[0]
    assert f"{option} test_a.py: is a test file pytest will collect (test_a.py)" in err, err
    assert "Traceback" not in err + result.stdout.str()
    assert (pytester.path / "test_a.py").read_bytes() == before
