"""What a run reads, not only what its options name (issue 65, class 1; pure: stdlib only).

An output was checked against the files its options named, so ``--benchmark-json`` onto a collected test file,
onto ``aorta/plugin.py`` itself or ``--junitxml conftest.py`` replaced it, exit 0. Here are the files a process
reads whatever its options say: every module it imported (the aorta package, its plugins, pytest's, the conftest
files pytest loaded, the collected test files), each plugin's file, and the files pytest collected. Every output
is checked against them in one pass (``check_not_read``), before any work: resolved once, compared as resolved
paths and as (device, inode), so a hard link or another spelling is the same file.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType

from aorta.record.output_paths import OutputPathError

Outputs = Iterable[tuple[str, str, str]]  # (option, kind, path), as output_arguments gives them
REPLACED_WHOLE = ("renamed", "emptied")  # an output folder replaced or emptied: nothing read may lie inside


def _module_file(module: object) -> str | None:
    path = getattr(module, "__file__", None)
    return path if isinstance(path, str) and os.path.isfile(path) else None


def module_files(modules: Mapping[str, object] | None = None) -> dict[str, str]:
    """``{what: file}`` of every module imported (``sys.modules``): the code this process reads, aorta's and
    its plugins' among it."""
    out: dict[str, str] = {}
    for name, module in list((sys.modules if modules is None else modules).items()):
        path = _module_file(module) if isinstance(module, ModuleType) else None
        if path:
            out.setdefault(f"the module {name}, imported by this run", path)
    return out


def package_files(package: ModuleType) -> dict[str, str]:
    """``{what: file}`` of every source file of ``package`` (aorta's: a module not imported yet is imported
    later, by a child run or a command), named by its place in the package."""
    root = os.path.dirname(package.__file__ or "")
    out: dict[str, str] = {}
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [d for d in subfolders if d != "__pycache__"]
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                out[
                    f"{os.path.relpath(path, os.path.dirname(root))}, a file of the {package.__name__} package"
                ] = path
    return out


def plugin_files(plugins: Iterable[object]) -> dict[str, str]:
    """``{what: file}`` of each pytest plugin that is a module (a conftest file among them: several are all
    called ``conftest`` in ``sys.modules``, so each is named by its plugin object)."""
    out: dict[str, str] = {}
    for plugin in plugins:
        path = _module_file(plugin)
        if path:
            kind = "a conftest file" if os.path.basename(path) == "conftest.py" else "a plugin"
            out.setdefault(f"{kind} this run loaded ({getattr(plugin, '__name__', path)})", path)
    return out


PYTEST_FILES = ("test_*.py", "*_test.py")  # pytest's default python_files
CONFTEST = "conftest.py"


def _collected_name(path: str, patterns: Sequence[str]) -> bool:
    """``path`` is a conftest file or matches one of pytest's ``python_files`` patterns as pytest matches them
    (``fnmatch_ex``: a pattern without a separator against the name, one with a separator against the path)."""
    if os.path.basename(path) == CONFTEST:
        return True
    for pattern in patterns:
        if "/" not in pattern and os.sep not in pattern:
            hit = fnmatch.fnmatch(os.path.basename(path), pattern)
        else:
            hit = fnmatch.fnmatch(path, pattern if os.path.isabs(pattern) else f"*{os.sep}{pattern}")
        if hit:
            return True
    return False


def _root_path(arg: str) -> str:
    """A collection argument as a path: ``tests/test_x.py::test_a[p]`` is ``tests/test_x.py``."""
    return os.path.realpath(str(arg).split("::", 1)[0])


def files_to_collect(
    outputs: Outputs, roots: Iterable[str | os.PathLike], patterns: Sequence[str] = PYTEST_FILES
) -> dict[str, str]:
    """``{what: file}`` of each output that is a file pytest will collect later (issue 65, leftover 1): a
    collection argument itself, or a file under one whose name pytest collects (``python_files``, conftest
    files). Collection runs after the options are checked and pytest's own writers open their files at
    configure time (``--log-file`` truncates its file there), so these are refused with the files read, before
    any work, without walking the folders: only the outputs given are looked at."""
    folders, named = [], set()
    for root in roots:
        path = _root_path(os.fspath(root))
        if os.path.isdir(path):
            folders.append(path.rstrip(os.sep) + os.sep)
        elif os.path.isfile(path):
            named.add(path)
    out: dict[str, str] = {}
    for _, kind, given in outputs:
        if kind == "dir":
            continue
        path = os.path.realpath(given)
        if not os.path.isfile(path):
            continue
        if path in named:
            out[f"a test file pytest will collect ({os.path.basename(path)}, named on the command line)"] = (
                path
            )
        elif any(path.startswith(f) for f in folders) and _collected_name(path, patterns):
            out[f"a test file pytest will collect ({os.path.basename(path)})"] = path
    return out


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _folder_spellings(path: str) -> set[str]:
    try:
        return {os.path.abspath(path), os.path.realpath(path)}
    except (OSError, ValueError):
        return {os.path.abspath(path)}


def check_not_read(outputs: Outputs, read: Mapping[str, str | os.PathLike]) -> None:
    """``OutputPathError`` for the first output that is a file ``read`` holds (``{what: path}``; the same file by
    its device and inode, so a link or another spelling is that file), or, for a folder replaced or emptied
    whole, one that holds such a file. A file read exists: only outputs that exist are looked up, each with one
    ``stat`` (a pytest run pays a few milliseconds, not a resolution of every module's path)."""
    outputs = list(outputs)
    existing = [(o, k, p, _identity(p)) for o, k, p in outputs if k != "dir"]
    existing = [e for e in existing if e[3] is not None]
    if existing:
        by_inode: dict[tuple[int, int], tuple[str, str]] = {}
        for what, given in read.items():
            ident = _identity(os.fspath(given))
            if ident:
                by_inode.setdefault(ident, (what, os.fspath(given)))
        for option, _, path, ident in existing:
            hit = by_inode.get(ident) if ident else None
            if hit:
                raise OutputPathError(
                    f"{option} {path}: is {hit[0]} ({hit[1]}), a file this run reads; writing there would "
                    "replace it: give another path"
                )
    for option, kind, path in outputs:
        if kind not in REPLACED_WHOLE or not os.path.isdir(path):
            continue
        folders = [f.rstrip(os.sep) + os.sep for f in _folder_spellings(path)]
        for what, given in read.items():
            spellings = (
                _folder_spellings(os.fspath(given))
                if os.path.islink(os.fspath(given))
                else {os.path.abspath(os.fspath(given))}
            )
            if any(s.startswith(f) for s in spellings for f in folders):
                raise OutputPathError(
                    f"{option} {path}: holds {what} ({os.fspath(given)}), a file this run reads; this folder is "
                    "replaced as a whole, which would delete it: give another folder"
                )
