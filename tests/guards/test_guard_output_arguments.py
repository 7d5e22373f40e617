"""The map of outputs and inputs a command line names, and the checks run on it before any work, called in this
process (aorta/record/output_arguments.py, issue 58): which parsers a command line chose, which arguments are
outputs and of which kind, which files and folders are its inputs and how a refusal names them, which pytest
options write where, and the pipes and special files refused before they are read."""

from __future__ import annotations

import argparse
import os
import sqlite3
from pathlib import Path

import pytest

from aorta.record import output_arguments
from aorta.record.output_arguments import (
    INPUT_NAMES,
    OPTION_OUTPUTS,
    STEP_SUMMARY,
    WHEN_USED,
    appends_step_summary,
    check_option_outputs,
    check_outputs,
    check_parsed_inputs,
    check_parsed_outputs,
    chosen_parsers,
    mark_subcommands,
    option_name,
    option_outputs,
    output_argument,
    output_option,
    parsed_inputs,
    parsed_outputs,
    reads_folder,
)
from aorta.record.output_paths import OutputPathError


def _refusal(check, *args, **kw) -> str:
    with pytest.raises(OutputPathError) as exc:
        check(*args, **kw)
    return str(exc.value)


def _tool() -> argparse.ArgumentParser:
    """A command with two levels of subcommands, as aorta's: ``tool report`` and ``tool trace merge``."""
    parser = argparse.ArgumentParser(prog="tool")
    parser.add_argument("--version", action="version", version="1")  # its dest is never in the namespace
    output_argument(parser, "--log", kind="file")
    sub = parser.add_subparsers(dest="command")
    report = sub.add_parser("report")
    output_argument(report, "-o", "--output", kind="renamed")
    report.add_argument("--run", action="append")
    reads_folder(report.add_argument("--sweep"))
    output_argument(report, "--json", "--js", kind="file", action="append")
    trace = sub.add_parser("trace").add_subparsers(dest="what")
    merge = trace.add_parser("merge")
    merge.add_argument("trace", nargs="?", metavar="RANK_TRACE")
    output_argument(merge, "out", metavar="OUT.json", nargs="?")
    appends_step_summary(merge)
    mark_subcommands(parser)
    return parser


# -- which parsers and arguments a command line chose -------------------------------------------------------------


def test_the_parsers_a_command_line_chose_are_known_outermost_first():
    parser = _tool()
    args = parser.parse_args(["trace", "merge", "a.json"])
    assert [p.prog for p in chosen_parsers(parser, args)] == ["tool", "tool trace", "tool trace merge"]
    assert [p.prog for p in chosen_parsers(parser, parser.parse_args(["report"]))] == ["tool", "tool report"]
    assert [p.prog for p in chosen_parsers(parser, parser.parse_args([]))] == ["tool"]


def test_an_option_is_named_by_its_longest_spelling_a_positional_by_its_metavar_or_dest():
    parser = argparse.ArgumentParser()
    long_last = parser.add_argument("-o", "--output")
    long_first = parser.add_argument("--markdown", "-m")
    plain = parser.add_argument("run")
    shown = parser.add_argument("trace", metavar="TRACE")
    assert [option_name(a) for a in (long_last, long_first, plain, shown)] == [
        "--output",
        "--markdown",
        "run",
        "TRACE",
    ]


def test_every_declared_output_of_the_chosen_parsers_with_its_kind_and_each_path():
    parser = _tool()
    args = parser.parse_args(["--log", "l.txt", "report", "-o", "R", "--json", "a.json", "--js", "b.json"])
    assert parsed_outputs(parser, args) == [
        ("--log", "file", "l.txt"),
        ("--output", "renamed", "R"),
        ("--json", "file", "a.json"),
        ("--json", "file", "b.json"),
    ]
    args = parser.parse_args(["trace", "merge", "x.json", "y.json"])
    assert parsed_outputs(parser, args) == [("OUT.json", "file", "y.json")]
    assert parsed_outputs(parser, parser.parse_args(["trace", "merge", "x.json"])) == []  # not given: none


def test_an_output_argument_returns_its_action_marked_with_its_kind():
    parser = argparse.ArgumentParser()
    action = output_argument(parser, "--out", kind="dir", default="d")
    assert action.dest == "out" and action.default == "d"
    assert getattr(action, output_arguments.ROLE) == "dir"
    assert output_argument(parser, "--file").aorta_output == "file"  # the default kind


# -- inputs: the files and folders the other arguments name ------------------------------------------------------


def test_the_inputs_are_the_existing_files_other_arguments_name_each_named_once(tmp_path):
    a, b, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "out.json"
    for f in (a, b, out):
        f.write_text("{}")
    parser = _tool()
    args = parser.parse_args(
        ["report", "--run", str(a), "--run", str(b), "--run", str(tmp_path / "missing.json")]
    )
    assert parsed_inputs(parser, args) == {
        f"the file --run names ({a})": str(a),
        f"the file --run names ({b})": str(b),
    }
    args = parser.parse_args(["report", "--run", str(a), "--json", str(out), "--sweep", str(a)])
    assert parsed_inputs(parser, args) == {"the file --run names": str(a), "what --sweep names": str(a)}


def test_a_folder_is_an_input_only_where_its_argument_reads_folders(tmp_path):
    parser = _tool()
    args = parser.parse_args(["report", "--run", str(tmp_path), "--sweep", str(tmp_path)])
    assert parsed_inputs(parser, args) == {"what --sweep names": str(tmp_path)}


def test_one_path_given_twice_is_one_input_named_by_its_first_place(tmp_path):
    a = tmp_path / "a.json"
    a.write_text("{}")
    parser = _tool()
    args = parser.parse_args(["report", "--run", str(a), "--run", str(a)])
    assert parsed_inputs(parser, args) == {f"the file --run names ({a})": str(a)}


# -- the checks on a parsed command line --------------------------------------------------------------------------


def test_an_output_on_an_argument_s_file_is_refused_naming_the_argument(tmp_path):
    trace = tmp_path / "t.json"
    trace.write_text("{}")
    parser = _tool()
    args = parser.parse_args(["trace", "merge", str(trace), str(trace)])
    assert args.out == str(trace)
    assert _refusal(check_parsed_outputs, parser, args, {}, {}) == (
        f"OUT.json {trace}: is the file RANK_TRACE names ({trace}), an input of this run; writing there would "
        "replace what is stored in it: give another path"
    )


def test_the_inputs_given_are_checked_as_well_as_the_arguments(tmp_path):
    history = tmp_path / "history.db"
    parser = _tool()
    args = parser.parse_args(["--log", str(history)])
    assert ": is the history (" in _refusal(check_parsed_outputs, parser, args, {"the history": history}, {})
    check_parsed_outputs(parser, args, {}, {})


def test_the_step_summary_is_an_output_only_of_a_command_that_appends_to_it(tmp_path):
    base = tmp_path / "base.json"
    base.write_text('{"aorta_baseline": {}}')
    env = {"GITHUB_STEP_SUMMARY": str(base)}
    parser = _tool()
    assert _refusal(check_parsed_outputs, parser, parser.parse_args(["trace", "merge"]), {}, env) == (
        f"{STEP_SUMMARY} {base}: holds a baseline; writing there would replace the runs stored in it: give another "
        "path"
    )
    check_parsed_outputs(parser, parser.parse_args(["report"]), {}, env)
    check_parsed_outputs(parser, parser.parse_args(["trace", "merge"]), {}, {"GITHUB_STEP_SUMMARY": ""})


def test_two_outputs_on_one_file_are_refused_naming_the_first(tmp_path):
    out = tmp_path / "x.json"
    outputs = [("--verdict-json", "file", str(out)), ("--markdown", "file", str(out))]
    assert _refusal(check_outputs, outputs, {}) == (
        f"--markdown {out}: is also --verdict-json ({out}); two outputs cannot share one file, the second would "
        "replace the first: give each its own"
    )


def test_folders_written_into_may_be_shared_and_an_option_given_twice_is_told_by_its_path(tmp_path):
    check_outputs([("--runs-dir", "dir", str(tmp_path)), ("--baseline-dir", "dir", str(tmp_path))], {})
    a, b = str(tmp_path / "a.json"), str(tmp_path / "b.json")
    outputs = [("--json", "file", a), ("--json", "file", b), ("--markdown", "file", b)]
    assert _refusal(check_outputs, outputs, {}).startswith(f"--markdown {b}: is also --json {b} ({b}); ")
    outputs = [("--json", "file", a), ("--json", "file", b), ("--markdown", "file", a)]
    assert _refusal(check_outputs, outputs, {}).startswith(f"--markdown {a}: is also --json ({a}); ")


def test_each_output_is_checked_as_its_kind(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    assert _refusal(check_outputs, [("--out", "file-in-folder", str(tmp_path / "no" / "x"))], {}).startswith(
        f"--out {tmp_path / 'no' / 'x'}: its folder {tmp_path / 'no'} does not exist"
    )
    assert (
        _refusal(check_outputs, [("--dir", "dir", str(f))], {}) == f"--dir {f}: {f} is a file, not a folder"
    )


# -- pipes, devices and sockets are refused before they are read ---------------------------------------------------


def test_a_named_pipe_or_a_device_is_refused_naming_the_argument(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    parser = _tool()
    assert _refusal(check_parsed_inputs, parser, parser.parse_args(["trace", "merge", str(fifo)])) == (
        f"RANK_TRACE {fifo}: is a named pipe, not a file; aorta reads and writes regular files only: give the file "
        "itself"
    )
    assert _refusal(check_parsed_inputs, parser, parser.parse_args(["report", "--run", "/dev/null"])) == (
        "--run /dev/null: is a special file, not a file; aorta reads and writes regular files only: give the file "
        "itself"
    )
    assert _refusal(check_parsed_outputs, parser, parser.parse_args(["report", "--run", str(fifo)]), {}, {})
    check_parsed_inputs(parser, parser.parse_args(["report", "--run", str(tmp_path), "--sweep", "missing"]))
    r, w = os.pipe()
    try:  # a pipe of process substitution first does not let the next path of the same option through
        args = parser.parse_args(["report", "--run", f"/dev/fd/{r}", "--run", str(fifo)])
        assert _refusal(check_parsed_inputs, parser, args).startswith(f"--run {fifo}: is a named pipe")
    finally:
        os.close(r)
        os.close(w)


def test_a_pipe_of_process_substitution_is_read_once_not_refused():
    r, w = os.pipe()
    try:
        parser = _tool()
        for path in (f"/dev/fd/{r}", f"/proc/self/fd/{r}"):
            check_parsed_inputs(parser, parser.parse_args(["trace", "merge", path]))
    finally:
        os.close(r)
        os.close(w)


@pytest.fixture
def stdin_as():
    """Put a descriptor on this process's fd 0 for the test (what ``/dev/stdin`` then is), then restore it."""
    saved = os.dup(0)
    yield lambda fd: os.dup2(fd, 0) if fd is not None else os.close(0)
    os.dup2(saved, 0)
    os.close(saved)


def test_stdin_is_read_where_it_is_a_pipe_and_refused_where_it_is_a_device(stdin_as, tmp_path):
    parser = _tool()
    r, w = os.pipe()
    try:
        stdin_as(r)
        for path in ("/dev/stdin", "/proc/self/fd/0"):
            check_parsed_inputs(parser, parser.parse_args(["trace", "merge", path]))
            assert output_arguments._process_pipe(path) is True
    finally:
        os.close(r)
        os.close(w)
    null = os.open("/dev/null", os.O_RDONLY)
    try:
        stdin_as(null)
        for path in ("/dev/stdin", "/proc/self/fd/0"):
            assert output_arguments._process_pipe(path) is False
            assert _refusal(
                check_parsed_inputs, parser, parser.parse_args(["trace", "merge", path])
            ).startswith(f"RANK_TRACE {path}: is a special file, not a file;")
    finally:
        os.close(null)
    stdin_as(None)  # no stdin at all
    assert output_arguments._process_pipe("/dev/stdin") is False
    assert output_arguments._process_pipe(tmp_path / "x") is False
    assert output_arguments._process_pipe(3) is False


# -- pytest options ---------------------------------------------------------------------------------------------


class _Group:
    def __init__(self):
        self.added = []

    def addoption(self, *names, **kw):
        self.added.append((names, kw))


def test_a_pytest_output_option_is_added_and_declared_under_its_dest(monkeypatch):
    monkeypatch.setattr(output_arguments, "OPTION_OUTPUTS", {})
    group = _Group()
    output_option(group, "--aorta-x-json", "--ax", kind="file-in-folder", default="x.json", help="h")
    output_option(group, "--aorta-y", dest="why", kind="dir")
    output_option(group, "--aorta-z")
    assert group.added == [
        (("--aorta-x-json", "--ax"), {"default": "x.json", "help": "h"}),
        (("--aorta-y",), {"dest": "why"}),
        (("--aorta-z",), {}),
    ]
    assert output_arguments.OPTION_OUTPUTS == {
        "aorta_x_json": ("--aorta-x-json", "file-in-folder", "x.json"),
        "why": ("--aorta-y", "dir", None),
        "aorta_z": ("--aorta-z", "file", None),
    }


def test_pytest_s_outputs_are_the_options_given_with_their_kinds():
    options = {"xmlpath": "r.xml", "benchmark_json": "b.json", "basetemp": "", "log_file": None}
    assert option_outputs(options, {}) == [
        ("--benchmark-json", "file-in-folder", "b.json"),
        ("--junitxml", "file", "r.xml"),
    ]


def test_the_benchmark_storage_is_an_output_where_a_run_is_saved_into_it_or_it_is_given():
    default = OPTION_OUTPUTS["benchmark_storage"][2]
    assert default == "file://./.benchmarks"
    storage = ("--benchmark-storage", "dir")
    assert option_outputs({"benchmark_storage": default}, {}) == []
    assert option_outputs({"benchmark_storage": default, "benchmark_save": "x"}, {}) == [
        (*storage, "./.benchmarks")
    ]
    assert option_outputs({"benchmark_storage": default, "benchmark_autosave": True}, {}) == [
        (*storage, "./.benchmarks")
    ]
    assert option_outputs({"benchmark_storage": "file:///s/b"}, {}) == [(*storage, "/s/b")]
    assert option_outputs({"benchmark_storage": "plain/folder"}, {}) == [(*storage, "plain/folder")]
    assert option_outputs({"benchmark_storage": "elasticsearch+http://host:9200/i/d"}, {}) == []
    assert option_outputs({"benchmark_storage": ""}, {}) == []


def test_a_folder_at_its_default_or_used_only_by_some_tests_is_checked_later(monkeypatch):
    monkeypatch.setattr(
        output_arguments,
        "OPTION_OUTPUTS",
        {
            "runs": ("--runs", "dir", "runs"),
            "art": ("--art", WHEN_USED, None),
            "out": ("--out", "file", "o.json"),
        },
    )
    assert option_outputs({"runs": "runs", "art": "a", "out": "o.json"}, {}) == [("--out", "file", "o.json")]
    assert option_outputs({"runs": "other", "art": "a", "out": None}, {}) == [("--runs", "dir", "other")]


def test_pytest_appends_the_step_summary_only_when_it_compares():
    env = {"GITHUB_STEP_SUMMARY": "/s/summary.md"}
    assert option_outputs({"aorta_compare": "base.json"}, env) == [
        (STEP_SUMMARY, "appended", "/s/summary.md")
    ]
    assert option_outputs({"aorta_compare": None}, env) == []
    assert option_outputs({"aorta_compare": "base.json"}, {}) == []


def test_pytest_s_history_is_an_input_even_before_it_is_created(tmp_path):
    history = tmp_path / "history.db"
    options = {"aorta_history": str(history), "xmlpath": str(history)}
    assert _refusal(check_option_outputs, options, {}, {}) == (
        f"--junitxml {history}: is {INPUT_NAMES['aorta_history']} ({history}), an input of this run; writing there "
        "would replace what is stored in it: give another path"
    )
    assert not history.exists()


@pytest.mark.parametrize("url", ["postgresql://h/db", "host=h dbname=db"])
def test_a_history_on_a_server_is_no_file_input(tmp_path, monkeypatch, url):
    monkeypatch.chdir(tmp_path)
    check_option_outputs({"aorta_history": url, "xmlpath": url}, {}, {})


def test_pytest_s_other_options_name_its_inputs_and_a_name_or_pattern_is_none(tmp_path):
    base, conf, test = tmp_path / "base.json", tmp_path / "aorta.toml", tmp_path / "test_x.py"
    for f in (base, conf, test):
        f.write_text("")
    cases = {
        "aorta_compare": (base, INPUT_NAMES["aorta_compare"]),
        "aorta_config": (conf, "the file --aorta-config names"),
        "file_or_dir": ([str(test)], INPUT_NAMES["file_or_dir"]),
    }
    for dest, (value, name) in cases.items():
        shown = value[0] if isinstance(value, list) else value
        options = {dest: value if isinstance(value, list) else str(value), "log_file": str(shown)}
        assert _refusal(check_option_outputs, options, {}, {}).startswith(
            f"--log-file {shown}: is {name} ({shown}),"
        )
    for dest in ("rootdir", "confcutdir", "ignore", "deselect", "benchmark_save"):
        check_option_outputs({dest: str(conf), "log_file": str(conf)}, {}, {})
    check_option_outputs({"benchmark_json": str(base)}, {}, {})  # an output already there is not an input


def test_pytest_s_inputs_given_are_checked_and_its_outputs_are_not_inputs_of_each_other(tmp_path):
    out = tmp_path / "r.xml"
    out.write_text("")
    assert ": is the baseline (" in _refusal(
        check_option_outputs, {"xmlpath": str(out)}, {"the baseline": out}, {}
    )
    check_option_outputs({"xmlpath": str(out), "debug": str(tmp_path / "debug.log")}, {}, {})
    assert ": is also --junitxml (" in _refusal(
        check_option_outputs, {"xmlpath": str(out), "log_file": str(out)}, {}, {}
    )


def test_a_history_database_is_never_a_pytest_output_even_unnamed(tmp_path):
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    assert _refusal(check_option_outputs, {"xmlpath": str(other)}, {}, {}).startswith(
        f"--junitxml {other}: holds a run history"
    )
    assert Path(other).read_bytes().startswith(b"SQLite format 3\0")


def test_a_command_without_subcommands_that_appends_the_summary_checks_it(tmp_path):
    base = tmp_path / "base.json"
    base.write_text('{"aorta_baseline": {}}')
    plain = argparse.ArgumentParser(prog="plain")
    appends_step_summary(plain)
    mark_subcommands(plain)
    message = _refusal(
        check_parsed_outputs, plain, plain.parse_args([]), {}, {"GITHUB_STEP_SUMMARY": str(base)}
    )
    assert message.startswith(f"{STEP_SUMMARY} {base}: holds a baseline")


def test_pytest_s_step_summary_is_read_from_the_environment_given(tmp_path):
    base = tmp_path / "base.json"
    base.write_text('{"aorta_baseline": {}}')
    options = {"aorta_compare": str(tmp_path / "other.json")}
    message = _refusal(check_option_outputs, options, {}, {"GITHUB_STEP_SUMMARY": str(base)})
    assert message.startswith(f"{STEP_SUMMARY} {base}: holds a baseline")


def test_a_storage_folder_whose_name_holds_the_scheme_separator_is_taken_whole():
    assert option_outputs({"benchmark_storage": "file://./runs/odd://name"}, {}) == [
        ("--benchmark-storage", "dir", "./runs/odd://name")
    ]
