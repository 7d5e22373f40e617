"""Every output of every command is checked in one place before any work (issue 46, class 1).

The outputs are read from the parsers themselves: every ``aorta`` subcommand's arguments (aorta/cli.py's
parser, walked to every depth) and every pytest option. An argument that names a place (its metavar says PATH,
DIR, FILE, OUT or a file name) is either declared as an output (``output_argument`` / ``output_option``) or
named below as an input; each declared output is then pointed at the command's input (its history database,
its trace, its run file) and must be refused before any work, with one sentence naming the option, the input
left as it was.
"""

from __future__ import annotations

import argparse
import re
import sqlite3

import pytest

from aorta.cli import build_parser, main
from aorta.exit_codes import EXIT_PYTEST_USAGE, EXIT_USAGE
from aorta.record.output_arguments import OPTION_OUTPUTS, ROLE, WHEN_USED, option_name

PLACE = re.compile(r"PATH|DIR|FILE|OUT|\.json|\.html|\.db|TRACE|RUN", re.IGNORECASE)

# Arguments that name a place the command only reads: (command, option).
ARGUMENT_INPUTS = {
    ("aorta compare", "REF.json"),
    ("aorta compare", "CAND.json"),
    ("aorta noise", "RUNS.json"),
    ("aorta report", "--run"),
    ("aorta report", "--sweep"),
    ("aorta report", "--verdicts"),
    ("aorta trace merge", "RANK_TRACE"),
    ("aorta trace figures", "TRACE"),
    ("aorta history add", "RUN.json"),
    ("aorta history add", "--verdicts"),
    ("aorta history", "--history"),
}
OPTION_INPUTS = {
    "--aorta-compare",
    "--aorta-history",
    "--aorta-only-file",
    "--aorta-config",
    "--aorta-save-baseline",
}


def _walk(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _walk(sub)
        elif not isinstance(action, argparse._HelpAction):
            yield parser.prog, action


def _names_a_place(action: argparse.Action) -> bool:
    return bool(PLACE.search(str(action.metavar or "")))


def test_every_argument_that_names_a_place_is_declared_an_output_or_an_input():
    undeclared = [
        (prog, option_name(a))
        for prog, a in _walk(build_parser())
        if _names_a_place(a) and not getattr(a, ROLE, None) and (prog, option_name(a)) not in ARGUMENT_INPUTS
    ]
    assert not undeclared, f"declare with output_argument, or list as an input here: {undeclared}"


def _outputs():
    return [
        (prog, option_name(a), getattr(a, ROLE))
        for prog, a in _walk(build_parser())
        if getattr(a, ROLE, None)
    ]


def test_the_walk_finds_the_outputs_the_issue_named():
    found = {(prog, option) for prog, option, _ in _outputs()}
    assert {
        ("aorta history page", "OUT.html"),
        ("aorta history baseline", "OUT.json"),
        ("aorta trace figures", "--json"),
        ("aorta ab", "--out"),
    } <= found


def _argv(prog: str, option: str, out: str, history: str, trace: str) -> list[str]:
    """A command line of ``prog`` whose output ``option`` is ``out``, reading ``history`` and ``trace``."""
    words = prog.split()[1:]
    place = [out] if not option.startswith("-") else [option, out]
    if words[0] == "history":
        return [
            "history",
            "--history",
            history,
            *words[1:],
            *(["STACK"] if words[1] == "baseline" else []),
            *place,
        ]
    if words[0] == "trace":
        extra = ["--output", trace + ".merged.json"] if option != "--output" and words[1] == "merge" else []
        return [*words, trace, *extra, *place]
    if words[0] == "compare":
        return ["compare", trace, trace, *place]
    if words[0] == "noise":
        return ["noise", trace, *place]
    if words[0] == "report":
        return ["report", "--run", trace, *place]
    if words[0] == "sweep":
        return ["sweep", "--grid", "A=1", *place, "--", "true", trace]
    if words[0] == "ab":
        return ["ab", "--a", "", "--b", "", *place, "--", trace]
    raise AssertionError(f"{prog} {option}: add how to run it here (a new command with an output)")


@pytest.mark.parametrize("prog,option,kind", _outputs(), ids=lambda v: str(v))
def test_every_output_is_refused_on_an_input_before_any_work(
    tmp_path, monkeypatch, capsys, prog, option, kind
):
    monkeypatch.chdir(tmp_path)
    history = tmp_path / "history.db"
    sqlite3.connect(history).close()
    trace = tmp_path / "input.json"
    trace.write_text('{"traceEvents": []}')
    target = trace if not prog.startswith("aorta history") else history
    before = {p: p.read_bytes() for p in (history, trace)}
    code = main(_argv(prog, option, str(target), str(history), str(trace)))
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert err.startswith(f"{prog}: error: {option} {target}: "), err
    assert err.count("\n") == 1  # one sentence
    assert {p: p.read_bytes() for p in (history, trace)} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.db", "input.json"]  # nothing else made


def _pytest_options(pytester):
    config = pytester.parseconfig()
    for group in [*config._parser._groups, config._parser._anonymous]:
        for opt in group.options:
            yield opt.names()[-1] if opt.names()[-1].startswith("--") else opt.names()[0], opt


def test_every_pytest_option_that_names_a_place_is_declared_an_output_or_an_input(pytester):
    declared = {name for name, _, _ in OPTION_OUTPUTS.values()}
    undeclared = [
        name
        for name, opt in _pytest_options(pytester)
        if name.startswith("--aorta")
        and PLACE.search(str(opt.attrs().get("metavar") or ""))
        and not any(n in declared | OPTION_INPUTS for n in opt.names())
    ]
    assert not undeclared, f"declare with output_option, or list as an input here: {undeclared}"


@pytest.mark.parametrize("dest", sorted(OPTION_OUTPUTS))
def test_every_pytest_output_is_refused_on_the_history_before_any_test(pytester, dest):
    option, kind, _ = OPTION_OUTPUTS[dest]
    if dest not in vars(pytester.parseconfig().option):
        pytest.skip(f"{option}: its plugin is not installed here")
    if kind == WHEN_USED:
        pytest.skip(
            f"{option}: checked once a test that writes there is collected (tests/fsdp/test_fsdp_pieces.py)"
        )
    history = pytester.path / "history.db"
    pytester.makepyfile("def test_x():\n    raise AssertionError('ran')\n")
    pytester.runpytest_inprocess("--aorta-history", str(history), "--co")  # creates the history
    before = history.read_bytes()
    r = pytester.runpytest_inprocess("--aorta-history", str(history), f"{option}={history}")
    assert r.ret == EXIT_PYTEST_USAGE
    text = r.stderr.str()
    if kind == "dir":
        assert f"{option} {history}: " in text and "not a folder" in text
    else:
        assert f"{option} {history}: is the history database (--aorta-history)" in text
    assert history.read_bytes() == before


@pytest.mark.parametrize(
    "prog,option,kind", [o for o in _outputs() if o[2] in ("file", "renamed")], ids=lambda v: str(v)
)
@pytest.mark.parametrize("stored", ["baseline", "history"])
def test_no_output_replaces_a_baseline_or_a_history_it_was_not_given(
    tmp_path, monkeypatch, capsys, prog, option, kind, stored
):
    """Not an input of this command, yet runs stored elsewhere: another baseline, another history."""
    monkeypatch.chdir(tmp_path)
    history = tmp_path / "history.db"
    sqlite3.connect(history).close()
    trace = tmp_path / "input.json"
    trace.write_text('{"traceEvents": []}')
    other = tmp_path / ("base.json" if stored == "baseline" else "other-history.db")
    if stored == "baseline":
        other.write_text('{"aorta_baseline": {"runs": []}}')
    else:
        with sqlite3.connect(other) as conn:
            conn.execute("CREATE TABLE runs (id INTEGER)")
    before = other.read_bytes()
    assert main(_argv(prog, option, str(other), str(history), str(trace))) == EXIT_USAGE
    err = capsys.readouterr().err
    assert (
        err.startswith(f"{prog}: error: {option} {other}: holds a ")
        and "replace the runs stored in it" in err
    )
    assert other.read_bytes() == before


def test_pytest_never_writes_its_json_over_a_baseline_it_does_not_compare_with(pytester):
    other = pytester.path / ".aorta" / "baselines" / "cpu" / "other.json"
    other.parent.mkdir(parents=True)
    other.write_text('{"aorta_baseline": {"runs": []}}')
    pytester.makepyfile("def test_x():\n    raise AssertionError('ran')\n")
    r = pytester.runpytest_inprocess(f"--benchmark-json={other}")
    assert r.ret == EXIT_PYTEST_USAGE
    assert (
        f"--benchmark-json {other}: holds a baseline; writing there would replace the runs" in r.stderr.str()
    )


# Every option of pytest and of the plugins installed beside it (pytest-benchmark, xdist) whose name, metavar or
# help says it names a place: either in the map of outputs (OPTION_OUTPUTS) or named here as read only / not a
# place written (issue 56: --junitxml was not checked and turned the history into XML).
WRITES = re.compile(
    r"path|file|\bdir\b|folder|json|xml|\bsave|storage|dump|histogram|basetemp|prefix|write|output|URI|URL",
    re.IGNORECASE,
)
READ_ONLY_OR_NOT_A_PLACE = {
    "aorta_check_run",  # a choice (auto|always); its record is written under --aorta-runs-dir, checked as that
    "keyword", "force_short_summary", "reportchars", "showcapture", "junitprefix", "ignore", "ignore_glob",
    "deselect", "confcutdir", "noconftest", "collect_in_virtualenv", "importmode", "doctestglob", "doctestreport",
    "inifilename", "rootdir", "plugins", "override_ini", "traceconfig", "log_file_mode", "log_file_level",
    "log_file_format", "log_file_date_format", "benchmark_save", "benchmark_autosave", "benchmark_save_data",
    "benchmark_compare", "benchmark_compare_fail", "benchmark_netrc", "benchmark_cprofile",
    "benchmark_cprofile_loops", "benchmark_cprofile_top", "rsyncdir", "looponfail", "tx", "dist",
    "aorta_compare", "aorta_history", "aorta_only_file", "aorta_config", "aorta_save_baseline", "aorta_override",
    "aorta_replace_baseline", "aorta_test_comm_ballast", "aorta_mode", "aorta_lean_run", "aorta_runs",
    "hypothesis_profile", "hypothesis_verbosity", "strict_markers", "strict_config", "strict", "runxfail",
    "pastebin", "setuponly", "setupshow", "setupplan", "help", "version", "capture", "verbose", "newfirst",
    "color", "assertmode", "benchmark_timer", "benchmark_disable_gc", "benchmark_verbose",
    "aorta_telemetry_interval_ms", "aorta_order_seed", "aorta_kernel_pass_rounds",
}  # fmt: skip


def test_every_pytest_option_that_names_a_place_is_in_the_map(pytester):
    """Walks every option pytest knows in a run with aorta's plugin, not only aorta's own."""
    unmapped = []
    for name, opt in _pytest_options(pytester):
        attrs = opt.attrs()
        text = " ".join([*opt.names(), str(attrs.get("metavar") or ""), str(attrs.get("help") or "")])
        dest = attrs.get("dest") or name.lstrip("-").replace("-", "_")
        if WRITES.search(text) and dest not in OPTION_OUTPUTS and dest not in READ_ONLY_OR_NOT_A_PLACE:
            unmapped.append((name, dest))
    assert not unmapped, (
        f"add to OPTION_OUTPUTS (aorta/record/output_arguments.py) or list as read only: {unmapped}"
    )


def test_the_map_holds_pytests_own_outputs():
    assert {"xmlpath", "log_file", "debug", "basetemp", "benchmark_json", "benchmark_storage"} <= set(
        OPTION_OUTPUTS
    )


# aorta arguments whose name, metavar or help reads like a place, yet name none (a label, a count, a choice).
ARGUMENT_NOT_PLACES = {
    ("aorta list", "NAME"),
    ("aorta ab", "--check-run"),  # a choice (auto|always); the record goes beside the default --out folders
    ("aorta noise", "--baseline-runs"),
    ("aorta noise", "--candidate-runs"),
    ("aorta report", "--reference"),
    ("aorta trace merge", "--align"),
    ("aorta stack", "--aorta-device"),
    ("aorta sweep", "--label"),
    ("aorta torchrun", "..."),
}


def test_every_aorta_argument_that_may_name_a_place_is_in_the_map():
    """Walks every subcommand's every argument, by its name, metavar and help, not its metavar alone: one that
    may name a place is a declared output, a listed input, or listed above as no place."""
    unmapped = [
        (prog, option_name(a))
        for prog, a in _walk(build_parser())
        if WRITES.search(" ".join([*a.option_strings, str(a.metavar or ""), str(a.help or ""), a.dest]))
        and not getattr(a, ROLE, None)
        and (prog, option_name(a)) not in ARGUMENT_INPUTS | ARGUMENT_NOT_PLACES
    ]
    assert not unmapped, f"declare with output_argument, or list as an input or no place here: {unmapped}"
