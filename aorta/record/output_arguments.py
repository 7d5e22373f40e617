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
import stat
from collections.abc import Iterator, Mapping
from typing import Any

from aorta.record.output_paths import OutputPathError, check_output

ROLE = "aorta_output"  # set on an argparse action: the kind of place it names ("file", "dir", "renamed")
Inputs = Mapping[str, "str | os.PathLike"]

# pytest options that name an output: dest -> (option, kind). Filled by ``output_option``; options of other
# plugins that aorta's runs write are named here.
OPTION_OUTPUTS: dict[str, tuple[str, str, Any]] = {
    "benchmark_json": ("--benchmark-json", "file-in-folder", None)
}

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


def _existing_files(named: Mapping[str, Any]) -> Inputs:
    out: dict[str, str | os.PathLike] = {}
    for what, value in named.items():
        for path in _paths(value):
            if os.path.isfile(path):
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
    """Every existing file another argument names: what the command reads (traces, runs, the command line)."""
    return _existing_files(
        {
            f"the file {option_name(a)} names": getattr(args, a.dest, None)
            for p in chosen_parsers(parser, args)
            for a in p._actions
            if not getattr(a, ROLE, None)
        }
    )


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


def check_parsed_inputs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``OutputPathError`` for an argument that names a named pipe, a device or a socket: reading one waits
    for a writer forever or never ends (``aorta trace figures FIFO`` hung silently, issue 46). A pipe of
    process substitution (``/dev/fd/N``) is read, once."""
    for p in chosen_parsers(parser, args):
        for a in p._actions:
            for path in _paths(getattr(args, a.dest, None)) if a.dest != "help" else ():
                if _process_pipe(
                    path
                ):  # <(cat trace.csv): read once as a stream (issue 49), its writer is live
                    continue
                if os.path.exists(path) and not (os.path.isfile(path) or os.path.isdir(path)):
                    kind = "a named pipe" if stat.S_ISFIFO(os.stat(path).st_mode) else "a special file"
                    raise OutputPathError(
                        f"{option_name(a)} {path}: is {kind}, not a file; aorta reads and writes regular files "
                        "only: give the file itself"
                    )


def check_parsed_outputs(parser: argparse.ArgumentParser, args: argparse.Namespace, inputs: Inputs) -> None:
    """``OutputPathError`` for the first declared output of ``args`` that cannot be written, or that is one of
    the command's inputs (its arguments' files and ``inputs``: the history, a baseline)."""
    check_parsed_inputs(parser, args)
    every = {**inputs, **parsed_inputs(parser, args)}
    for option, kind, path in parsed_outputs(parser, args):
        check_output(option, path, kind=kind, inputs=every)


def check_option_outputs(options: Mapping[str, Any], inputs: Inputs) -> None:
    """The same for a pytest run: ``options`` is ``vars(config.option)``; every declared output given is
    checked against every other option's existing file (the history, a baseline path, the configuration, the
    test files) and ``inputs``."""
    every = {
        **inputs,
        **_existing_files(
            {
                INPUT_NAMES.get(k, f"the file --{k.replace('_', '-')} names"): v
                for k, v in options.items()
                if k not in OPTION_OUTPUTS
            }
        ),
    }
    for dest, (option, kind, default) in OPTION_OUTPUTS.items():
        given = options.get(dest)
        if kind == WHEN_USED or (kind == "dir" and given == default):
            continue  # checked by its plugin once a collected test will write there / when it is used
        for path in _paths(given):
            check_output(option, path, kind=kind, inputs=every)
