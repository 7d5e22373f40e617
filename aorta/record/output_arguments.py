"""Outputs declared where their option is declared, and checked in one place before any work (issue 46, class 1).

Every option or positional argument that names a place a command writes is declared through
``output_argument`` (``aorta`` subcommands, argparse) or ``output_option`` (pytest options); undeclared options
that look like a place are caught by tests/record/test_every_output_checked.py, which walks the parsers. Before
any work, ``check_parsed_outputs`` (every ``aorta`` command, from aorta/cli.py) and ``check_option_outputs``
(every pytest run, from aorta/plugin.py) pass each declared output through ``check_output``: not a folder where a
file is meant, writable, and none of the command's inputs (any other argument naming an existing file, the
history database, the baseline), each refusal one sentence naming the option.
"""

from __future__ import annotations

import argparse
import os
import re
import stat
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from aorta.record.output_paths import OutputPathError, check_not_another_output, check_output

ROLE = "aorta_output"  # set on an argparse action: the kind of place it names ("file", "dir", "renamed")
READS_FOLDER = "aorta_reads_folder"  # set on an argparse action whose value may be a folder the command reads
RECORDS = (
    "aorta_records"  # set on a folder output: a pattern of the names the command writes there and reads back
)
STEP_SUMMARY = "$GITHUB_STEP_SUMMARY"
APPENDS_STEP_SUMMARY = "aorta_appends_step_summary"  # set on a parser whose command appends to it
Inputs = Mapping[str, "str | os.PathLike"]

# pytest options that name an output: dest -> (option, kind, default). Filled by ``output_option``; the options
# of pytest itself and of other plugins that write are named here (issue 56: --junitxml onto the history turned
# it into 480 bytes of XML). tests/record/test_every_output_checked.py walks every pytest option and fails on
# one that names a place and is neither here nor listed there as read only.
OPTION_OUTPUTS: dict[str, tuple[str, str, Any]] = {
    "benchmark_json": ("--benchmark-json", "file-in-folder", None),
    "xmlpath": ("--junitxml", "file", None),
    "log_file": ("--log-file", "file", None),
    "debug": ("--debug", "file", None),
    "basetemp": ("--basetemp", "emptied", None),  # pytest deletes what it holds
    "benchmark_storage": ("--benchmark-storage", "dir", "file://./.benchmarks"),
    "benchmark_histogram": ("--benchmark-histogram", "prefix", None),
    "benchmark_cprofile_dump": ("--benchmark-cprofile-dump", "prefix", None),
    "reportlog": ("--report-log", "file", None),  # pytest-reportlog, where installed
    "htmlpath": ("--html", "file", None),  # pytest-html, where installed
    "resultlog": ("--resultlog", "file", None),  # pytest < 6
}
# pytest options an ini line may give instead (``log_file = run.log`` in pytest.ini, ``-o log_file=run.log``):
# pytest's writer takes the ini's value where the option is not given, so that place is the same output.
INI_OUTPUTS = ("log_file",)


def with_ini_outputs(options: Mapping[str, Any], getini: Any) -> dict[str, Any]:
    """``options`` (``vars(config.option)``) with each of ``INI_OUTPUTS`` not given taken from the ini
    (``getini``: ``config.getini``), so an output given either way is checked through the same map."""
    out = dict(options)
    for dest in INI_OUTPUTS:
        if not out.get(dest):
            try:
                value = getini(dest)
            except (ValueError, KeyError):
                continue
            if value:
                out[dest] = value
    return out


# Options that make another option's place written: --benchmark-save NAME and --benchmark-autosave write into
# --benchmark-storage, its default included.
WRITES_INTO = {"benchmark_save": "benchmark_storage", "benchmark_autosave": "benchmark_storage"}

# Options whose value names no file read by the run (a name, a pattern, a folder that bounds a search).
NOT_INPUTS = {"rootdir", "confcutdir", "ignore", "ignore_glob", "deselect", "benchmark_save", "rsyncdir"}

# A folder only some tests write (--aorta-artifacts): its plugin checks it once such a test is collected.
WHEN_USED = "dir-when-used"

# What the inputs of a pytest run are called in a refusal, where a name says more than the option's.
INPUT_NAMES = {
    "file_or_dir": "a test file",
    "aorta_compare": "the baseline compared with (--aorta-compare)",
    "aorta_history": "the history database (--aorta-history)",
}


def output_argument(
    parser: argparse.ArgumentParser, *names: str, kind: str = "file", **kw: Any
) -> argparse.Action:
    """``parser.add_argument`` for an argument that names a place the command writes (``kind``: "file", "dir",
    "renamed": a file or folder built beside itself and renamed into place)."""
    action = parser.add_argument(*names, **kw)
    setattr(action, ROLE, kind)
    return action


def output_option(group: Any, name: str, *names: str, kind: str = "file", **kw: Any) -> None:
    """``group.addoption`` (pytest) for an option that names a place the run writes."""
    group.addoption(name, *names, **kw)
    dest = kw.get("dest") or name.lstrip("-").replace("-", "_")
    OPTION_OUTPUTS[dest] = (name, kind, kw.get("default"))


def reads_folder(action: argparse.Action) -> argparse.Action:
    """Mark an argument whose value may be a folder the command reads (a run folder, a sweep, a rocprofv3
    folder): every file inside it is an input, so no output may be written there (issue 56)."""
    setattr(action, READS_FOLDER, True)
    return action


def holds_records(action: argparse.Action, names: str) -> argparse.Action:
    """Mark a folder output whose files named as ``names`` (a regular expression of whole names) the command
    writes and reads back (``aorta ab --out``: each side's runs): another output named so there would replace
    a run the verdict is drawn from (issue 65: ``--verdict-json OUT/A1.json`` overwrote side A's run)."""
    setattr(action, RECORDS, re.compile(names))
    return action


def _records(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Inputs:
    """The records a folder output marked ``holds_records`` will hold, as inputs named for what they are: each
    other output given inside such a folder whose name is a record's."""
    out: dict[str, str | os.PathLike] = {}
    outputs = parsed_outputs(parser, args)
    for p in chosen_parsers(parser, args):
        for a in p._actions:
            pattern: re.Pattern | None = getattr(a, RECORDS, None)
            if pattern is None:
                continue
            for folder in _paths(getattr(args, a.dest, None)):
                for _, _, path in outputs:
                    q = Path(path)
                    if pattern.fullmatch(q.name) and _same_dir(q.parent, Path(folder)):
                        out[f"a run record {option_name(a)} holds ({q.name})"] = os.path.join(folder, q.name)
    return out


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False


def appends_step_summary(parser: argparse.ArgumentParser) -> None:
    """Mark a command that appends its markdown to ``$GITHUB_STEP_SUMMARY`` when set: then that file is one of
    its outputs, checked as the others are."""
    setattr(parser, APPENDS_STEP_SUMMARY, True)


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[argparse._SubParsersAction]:
    return (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def mark_subcommands(parser: argparse.ArgumentParser, depth: int = 1) -> None:
    """Each subcommand parser (at every depth) records itself in the namespace it parses, so the parsers a
    command line chose are known even where a positional argument reuses the subcommand's ``dest``."""
    for action in _subparsers(parser):
        for sub in action.choices.values():
            sub.set_defaults(**{f"_parser_{depth}": sub})
            mark_subcommands(sub, depth + 1)


def chosen_parsers(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> Iterator[argparse.ArgumentParser]:
    """``parser`` and every subcommand parser ``args`` chose (``mark_subcommands``), outermost first."""
    yield parser
    depth = 1
    while f"_parser_{depth}" in vars(args):
        yield vars(args)[f"_parser_{depth}"]
        depth += 1


def option_name(action: argparse.Action) -> str:
    if action.option_strings:
        return max(action.option_strings, key=len)
    return str(action.metavar or action.dest)


def _paths(value: Any) -> list[str]:
    values = value if isinstance(value, (list, tuple)) else [value]
    return [os.fspath(v) for v in values if isinstance(v, (str, os.PathLike)) and os.fspath(v)]


def _existing_files(named: Mapping[str, Any], folders: Collection[str] = ()) -> Inputs:
    """Every existing file ``named`` names (``{what: value}``), and every existing folder of the ``folders``
    among them (the values that may be folders read whole)."""
    out: dict[str, str | os.PathLike] = {}
    for what, value in named.items():
        for path in _paths(value):
            if os.path.isfile(path) or (what in folders and os.path.isdir(path)):
                out.setdefault(what if len(_paths(value)) == 1 else f"{what} ({path})", path)
    return out


def parsed_outputs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[tuple[str, str, str]]:
    """(option, kind, path) of every declared output ``args`` names."""
    return [
        (option_name(a), getattr(a, ROLE), path)
        for p in chosen_parsers(parser, args)
        for a in p._actions
        if getattr(a, ROLE, None)
        for path in _paths(getattr(args, a.dest, None))
    ]


def parsed_inputs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Inputs:
    """Every existing file another argument names: what the command reads (traces, runs, the command line),
    and every folder an argument marked ``reads_folder`` names."""
    actions = [a for p in chosen_parsers(parser, args) for a in p._actions if not getattr(a, ROLE, None)]
    return _existing_files(
        {_input_name(a): getattr(args, a.dest, None) for a in actions},
        folders={_input_name(a) for a in actions if getattr(a, READS_FOLDER, False)},
    )


def _input_name(action: argparse.Action) -> str:
    return f"{'what' if getattr(action, READS_FOLDER, False) else 'the file'} {option_name(action)} names"


def _step_summary(environ: Mapping[str, str]) -> list[tuple[str, str, str]]:
    path = environ.get("GITHUB_STEP_SUMMARY")
    return [(STEP_SUMMARY, "appended", path)] if path else []


def check_outputs(outputs: list[tuple[str, str, str]], inputs: Inputs) -> None:
    """Each of ``outputs`` ((option, kind, path)) through ``check_output`` against ``inputs``, and none the
    same file as another: the one map of places, checked before any work."""
    seen: dict[str, str] = {}
    for option, kind, path in outputs:
        check_output(option, path, kind=kind, inputs=inputs)
        if kind != "dir":
            check_not_another_output(option, path, seen)
            seen[option if option not in seen else f"{option} {path}"] = path


def _process_pipe(path: object) -> bool:
    """A pipe the shell hands over as ``/dev/fd/N`` (``<(cat trace.csv)``): its writer is the substituted
    process, so reading it ends; a named pipe in a folder may have no writer, and reading it waits forever.
    ``/dev/stdin`` is read where it is a pipe (``zcat trace.json.gz | aorta trace figures /dev/stdin``), not
    where it is a terminal (nobody writes a trace there)."""
    text = str(os.fspath(path) if isinstance(path, (str, os.PathLike)) else "")
    if text in ("/dev/stdin", "/proc/self/fd/0"):
        try:
            return stat.S_ISFIFO(os.stat(text).st_mode)
        except OSError:
            return False
    return text.startswith(("/dev/fd/", "/proc/self/fd/"))


def special_file(path: object) -> str | None:
    """What ``path`` is where it is neither a regular file nor a folder ("a named pipe", "a special file": a
    device, a socket), or None (a file, a folder, nothing there, a pipe of process substitution). Reading a
    named pipe waits for a writer forever (issue 65: ``--aorta-history FIFO`` hung pytest with no output)."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else ""
    if not text or _process_pipe(
        text
    ):  # <(cat trace.csv): read once as a stream (issue 49), its writer is live
        return None
    try:
        mode = os.stat(text).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return "a named pipe" if stat.S_ISFIFO(mode) else "a special file"  # a device, a socket


def check_regular(option: str, path: object) -> None:
    """``OutputPathError`` where ``path`` (read or written by ``option``) is a named pipe, a device or a socket."""
    kind = special_file(path)
    if kind:
        raise OutputPathError(
            f"{option} {path}: is {kind}, not a file; aorta reads and writes regular files only: give the "
            "file itself"
        )


def check_parsed_inputs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``OutputPathError`` for an argument that names a named pipe, a device or a socket: reading one waits
    for a writer forever or never ends (``aorta trace figures FIFO`` hung silently, issue 46). A pipe of
    process substitution (``/dev/fd/N``) is read, once."""
    for p in chosen_parsers(parser, args):
        for a in p._actions:
            for path in _paths(getattr(args, a.dest, None)) if a.dest != "help" else ():
                check_regular(option_name(a), path)


def check_parsed_outputs(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    inputs: Inputs,
    environ: Mapping[str, str] = os.environ,
) -> None:
    """``OutputPathError`` for the first declared output of ``args`` that cannot be written, or that is one of
    the command's inputs (its arguments' files, the folders it reads and ``inputs``: the history, a baseline),
    or another output; ``$GITHUB_STEP_SUMMARY`` counts for a command that appends to it."""
    check_parsed_inputs(parser, args)
    every = {**inputs, **parsed_inputs(parser, args), **_records(parser, args)}
    appends = any(getattr(p, APPENDS_STEP_SUMMARY, False) for p in chosen_parsers(parser, args))
    check_outputs([*parsed_outputs(parser, args), *(_step_summary(environ) if appends else [])], every)


def _storage_folder(value: Any) -> str | None:
    """pytest-benchmark's ``--benchmark-storage`` URI as a folder (``file://./.benchmarks``), or None for a
    storage elsewhere (elasticsearch)."""
    text = os.fspath(value) if isinstance(value, (str, os.PathLike)) else ""
    if "://" not in text:
        return text or None
    return text.split("://", 1)[1] if text.startswith("file://") else None


def option_outputs(
    options: Mapping[str, Any], environ: Mapping[str, str] = os.environ
) -> list[tuple[str, str, str]]:
    """(option, kind, path) of every place a pytest run with ``options`` writes."""
    out = []
    for dest, (option, kind, default) in OPTION_OUTPUTS.items():
        given = options.get(dest)
        if dest == "benchmark_storage":
            used = given != default or any(options.get(d) for d, into in WRITES_INTO.items() if into == dest)
            given = _storage_folder(given) if used else None
        elif kind == WHEN_USED or (kind == "dir" and given == default):
            continue  # checked by its plugin once a collected test will write there / when it is used
        out += [(option, kind, path) for path in _paths(given)]
    return out + (_step_summary(environ) if options.get("aorta_compare") else [])


def check_option_outputs(
    options: Mapping[str, Any], inputs: Inputs, environ: Mapping[str, str] = os.environ
) -> None:
    """The same for a pytest run: ``options`` is ``vars(config.option)``; every declared output given is
    checked against every other option's existing file (the history, a baseline path, the configuration, the
    test files) and ``inputs``."""
    for dest, value in options.items():  # every file a run reads is a regular one (issue 65)
        if dest not in OPTION_OUTPUTS and dest not in NOT_INPUTS:
            for path in _paths(value):
                check_regular(f"--{dest.replace('_', '-')}" if dest != "file_or_dir" else "a test path", path)
    history = options.get("aorta_history")
    if isinstance(history, str) and history and "://" not in history and "=" not in history:
        inputs = {**inputs, INPUT_NAMES["aorta_history"]: history}  # an input even before it is created
    every = {
        **inputs,
        **_existing_files(
            {
                INPUT_NAMES.get(k, f"the file --{k.replace('_', '-')} names"): v
                for k, v in options.items()
                if k not in OPTION_OUTPUTS and k not in NOT_INPUTS
            }
        ),
    }
    check_outputs(option_outputs(options, environ), every)
