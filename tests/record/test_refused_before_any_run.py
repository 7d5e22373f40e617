"""Launchers and options checked before any run, never a traceback (issue 46, class 4): ``aorta ab``'s
launchers, numbers past what a date or a budget can hold, a named pipe given as a trace, a name longer than
the filesystem takes, a stopped command says so in one
line."""

from __future__ import annotations

import os
import signal

import pytest
from test_ab import probe_answered

from aorta.cli import main
from aorta.exit_codes import EXIT_USAGE


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _nothing_ran(folder) -> bool:
    return not (folder / ".aorta").exists()


@pytest.mark.parametrize(
    "launcher,said,a",
    [
        ("1BAD=x", "'1BAD' is not an environment variable name", "this_python"),
        ("A=1 2B=3 python", "'2B' is not an environment variable name", "this_python"),
        (
            "/opt/nope/bin/python",
            "/opt/nope/bin/python cannot start: No such file or directory",
            "this_python",
        ),
        # B's check is read after A's: A's answered without torch (a second of imports), or by this Python (slow)
        ("X=1 /bin/false", "/bin/false does not start a working Python (exit 1)", "answered"),
        pytest.param(
            "X=1 /bin/false",
            "/bin/false does not start a working Python (exit 1)",
            "this_python",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_an_ab_launcher_that_cannot_run_is_refused_before_side_a_runs(in_tmp, capsys, launcher, said, a):
    a_side = str(probe_answered(in_tmp / "a_side", "exit 3")) if a == "answered" else ""
    assert main(["ab", "--a", a_side, "--b", launcher, "--", "benchmarks/hw_queue"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"aorta ab: --b={launcher!r}: ") and said in err
    assert "Traceback" not in err and _nothing_ran(in_tmp)


def test_ab_out_naming_a_file_is_refused_naming_the_option(in_tmp, capsys):
    (in_tmp / "FILE").write_text("keep me")
    assert main(["ab", "--a", "", "--b", "", "--out", "FILE", "--", "benchmarks"]) == EXIT_USAGE
    assert capsys.readouterr().err == "aorta ab: error: --out FILE: FILE is a file, not a folder\n"
    assert (in_tmp / "FILE").read_text() == "keep me"


def test_a_named_pipe_given_as_a_trace_is_refused_not_waited_on(in_tmp, capsys):
    os.mkfifo(in_tmp / "pipe")
    assert main(["trace", "figures", "pipe"]) == EXIT_USAGE
    assert capsys.readouterr().err == (
        "aorta trace figures: error: TRACE pipe: is a named pipe, not a file; aorta reads and writes regular "
        "files only: give the file itself\n"
    )


def test_a_history_name_longer_than_the_filesystem_takes_is_refused_in_one_line(in_tmp, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["history", "--history", "h" * 300 + ".db", "show"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "is 303 bytes long; this filesystem takes at most" in err and "Traceback" not in err


def test_ctrl_c_in_a_command_is_one_line_and_130_not_a_traceback(in_tmp, capsys, monkeypatch):
    from aorta.history import cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    from aorta.processes import child_process

    monkeypatch.setattr(cli, "open_store", interrupted)
    monkeypatch.setattr(child_process, "_LIVE", {})  # no child of another test counted
    assert main(["history", "--history", "h.db", "page", "out.html"]) == 128 + signal.SIGINT
    assert capsys.readouterr().err == "aorta history page: stopped by SIGINT; exit 130\n"
