"""Where a run's outputs go: checked before any benchmark runs, so a finished run is never lost to a bad path.

Pure (no torch). Each check either returns the folder that will hold the output or raises
``OutputPathError`` with a sentence naming the option, the path and what is wrong. A missing folder that
can be created is fine (the writer creates it); one whose nearest existing parent is a file or cannot be
written to is not. Writability is tried, not guessed from mode bits (root ignores them, ACLs and
read-only mounts do not): a temporary file is created and removed in the nearest existing folder.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from aorta.record.storage_faults import fault_words


class OutputPathError(ValueError):
    """An output path that cannot be written: the message names the option and the path."""


def _nearest_existing(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _try_write(option: str, path: Path, folder: Path) -> None:
    try:
        fd, tmp = tempfile.mkstemp(prefix=".aorta-write-check.", dir=folder)
    except OSError as exc:
        raise OutputPathError(f"{option} {path}: cannot write in {folder}: {fault_words(exc)}") from None
    os.close(fd)
    os.unlink(tmp)


def _check_links_and_names(option: str, shown: Path, path: Path) -> None:
    """No part of ``path`` is a symbolic link that leads nowhere (a loop, a missing target: ``exists()`` says
    False and the write fails after the run) and no name is longer than the filesystem takes (issue 38,
    case 16: both were refused only after the run, or as an INTERNALERROR)."""
    folder = Path(path.anchor or ".")
    for name in path.parts[1:] if path.anchor else path.parts:  # the deepest existing folder, by os.path
        if not os.path.isdir(folder / name):  # (which never raises; Path.exists does on a long name)
            break
        folder = folder / name
    try:
        name_max = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    for name in path.parts:
        if len(os.fsencode(name)) > name_max:
            raise OutputPathError(
                f"{option} {shown}: the name {name[:40]}... is {len(os.fsencode(name))} bytes long; this "
                f"filesystem takes at most {name_max}"
            )
    for part in [path, *path.parents]:
        if os.path.islink(part) and not os.path.exists(part):
            raise OutputPathError(
                f"{option} {shown}: {part} is a symbolic link that leads nowhere (a loop or a missing target)"
            )


def check_path_names(option: str, path: str | os.PathLike) -> None:
    """``OutputPathError`` where a name of ``path`` is longer than its filesystem takes, or a part of it is a
    symbolic link that leads nowhere (for a path that is read and written, such as the history)."""
    _check_links_and_names(option, Path(path), Path(path))


def _check_folder(option: str, shown: Path, folder: Path) -> None:
    _check_links_and_names(option, shown, folder)
    if folder.exists() and not folder.is_dir():
        raise OutputPathError(f"{option} {shown}: {folder} is a file, not a folder")
    base = _nearest_existing(folder)
    if not base.is_dir():
        raise OutputPathError(f"{option} {shown}: cannot be created: {base} is a file, not a folder")
    _try_write(option, shown, base)


def check_output_dir(option: str, path: str | os.PathLike) -> Path:
    """``path`` is (or can be created as) a writable folder."""
    p = Path(path)
    _check_folder(option, p, p)
    return p


def check_output_renamed_into_place(option: str, path: str | os.PathLike) -> Path:
    """``path`` (a file or folder) will be built beside itself and renamed into place: its parent folder
    must exist or be creatable, and be writable."""
    p = Path(path)
    _check_links_and_names(option, p, p)
    _check_folder(option, p, p.parent)
    return p


def check_output_file(option: str, path: str | os.PathLike, *, create_parent: bool = True) -> Path:
    """``path`` can be written as a file: not a folder, and its folder exists (or may be created) and
    is writable. With ``create_parent=False`` the folder must exist already (for writers that do not
    create it, such as pytest-benchmark's ``--benchmark-json``)."""
    p = Path(path)
    _check_links_and_names(option, p, p)
    if p.is_dir():
        raise OutputPathError(f"{option} {p}: is a folder; give a file name")
    if not create_parent and not p.parent.is_dir():
        what = "is a file, not a folder" if p.parent.exists() else "does not exist"
        raise OutputPathError(
            f"{option} {p}: its folder {p.parent} {what}; create it first or give another path"
        )
    _check_folder(option, p, p.parent)
    return p


def check_appendable(option: str, path: str | os.PathLike) -> Path:
    """``path`` can be appended to (as ``$GITHUB_STEP_SUMMARY`` is): an existing file is opened for
    appending and closed, nothing written; a missing one needs an existing, writable folder."""
    p = Path(path)
    if p.is_dir():
        raise OutputPathError(f"{option} {p}: is a folder; give a file name")
    if not p.exists():
        return check_output_file(option, p, create_parent=False)
    try:
        with open(p, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise OutputPathError(f"{option} {p}: cannot be appended to: {exc.strerror or exc}") from None
    return p


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _resolved(p: Path) -> str:
    """``p`` with its links and other spellings resolved; as written (made absolute) where it names no place a
    filesystem takes (a NUL byte)."""
    try:
        return os.path.realpath(p)
    except (OSError, ValueError):
        return os.path.abspath(p)


def _same_place(a: Path, b: Path) -> bool:
    """``a`` and ``b`` are one file (a hard link too), or one place where neither exists yet: the same path once
    links and other spellings are resolved (issue 58: a link in the folder of a history not yet created hid it)."""
    return _same_file(a, b) or _resolved(a) == _resolved(b)


def _inside(path: Path, folder: Path) -> bool:
    """``path`` lies inside ``folder`` (through links and other spellings: both resolved)."""
    try:
        inner, outer = os.path.realpath(path), os.path.realpath(folder)
    except (OSError, ValueError):
        return False
    return inner != outer and os.path.commonpath([inner, outer]) == outer


def check_not_an_input(
    option: str, path: str | os.PathLike, inputs: Mapping[str, str | os.PathLike], *, replaces: bool = False
) -> None:
    """``path`` is none of ``inputs`` (``{what: path}``, e.g. ``{"the baseline": ...}``): an output written
    over an input would replace the stored runs it is judged against. The same file through a link or
    another spelling counts (``os.path.samefile``); so does the same resolved path of a file not yet there.
    An input that is a folder stands for everything read from it: an output inside it is refused (issue 56:
    ``aorta trace figures DIR --json DIR/kernel_trace.csv`` turned the trace into JSON). With ``replaces``
    (a folder built beside itself and renamed into place, or emptied first) an input inside ``path`` is
    refused too: replacing the folder would delete it (``aorta report --run R/a.json --output R``)."""
    p = Path(path)
    for what, given in inputs.items():
        q = Path(given)
        if _same_place(p, q):
            raise OutputPathError(
                f"{option} {p}: is {what} ({q}), an input of this run; writing there would replace "
                "what is stored in it: give another path"
            )
        if q.is_dir() and _inside(p, q):
            raise OutputPathError(
                f"{option} {p}: is inside {q}, a folder this run reads ({what}); a file written there is "
                "read as an input: give a path outside it"
            )
        if replaces and _inside(q, p):
            raise OutputPathError(
                f"{option} {p}: holds {what} ({q}), an input of this run; this folder is replaced as a "
                "whole, which would delete it: give another folder"
            )


def check_not_another_output(
    option: str, path: str | os.PathLike, outputs: Mapping[str, str | os.PathLike]
) -> None:
    """``path`` is none of the other ``outputs`` (``{option: path}``): two outputs naming one file leave only
    the last written (issue 56: ``--benchmark-json x.json --aorta-verdict-json x.json`` kept the verdict while
    the terminal said the runs were there)."""
    p = Path(path)
    for other, given in outputs.items():
        q = Path(given)
        if other != option and _same_place(p, q):
            raise OutputPathError(
                f"{option} {p}: is also {other} ({q}); two outputs cannot share one file, the second "
                "would replace the first: give each its own"
            )


KINDS = ("file", "file-in-folder", "dir", "renamed", "emptied", "baseline", "appended", "prefix")
SNIFF_LIMIT_BYTES = 64 * 2**20  # a stored document larger than this is not read to tell what it is


def stored_kind(path: str | os.PathLike) -> str | None:
    """What an existing file holds, where an output written over it would lose runs: "a run history (a SQLite
    database)", whatever its size (its first 16 bytes say so), "a baseline" (read whole, up to
    ``SNIFF_LIMIT_BYTES``), or None. A history past the limit was once taken for no stored runs (issue 58)."""
    try:
        if not os.path.isfile(path):
            return None
        with open(path, "rb") as fh:
            head = fh.read(16)
            if head.startswith(b"SQLite format 3\0"):
                return "a run history (a SQLite database)"
            if os.path.getsize(path) > SNIFF_LIMIT_BYTES:
                return None
            if b'"aorta_baseline"' in head + fh.read():
                return "a baseline"
    except OSError:
        return None
    return None


def check_not_stored_runs(option: str, path: Path, *, baseline_ok: bool = False) -> None:
    """An output is never written over a history database or a baseline, whichever command's input it is (a
    baseline output may replace a baseline)."""
    kind = stored_kind(path)
    if kind and not (baseline_ok and kind == "a baseline"):
        raise OutputPathError(
            f"{option} {path}: holds {kind}; writing there would replace the runs stored in it: give another path"
        )


def check_output(
    option: str,
    path: str | os.PathLike,
    *,
    kind: str = "file",
    inputs: Mapping[str, str | os.PathLike] | None = None,
) -> Path:
    """The one check every written output goes through (issues 46, 56): ``path`` can be written as ``kind`` (a
    "file"; a "file-in-folder" whose folder must exist already; a "dir"; a file or folder "renamed" into place; a
    folder "emptied" before use, as pytest's ``--basetemp``; a file "appended" to, as ``$GITHUB_STEP_SUMMARY``;
    a file-name "prefix", as ``--benchmark-histogram``) and is none of ``inputs`` (the command's inputs, its
    history, a baseline, a folder it reads). ``OutputPathError``, one sentence naming the option, otherwise."""
    every = dict(inputs or {})
    if kind == "dir":
        p = check_output_dir(option, path)
        check_not_an_input(option, p, every)
        return p
    if kind in ("renamed", "emptied"):
        p = check_output_renamed_into_place(option, path)
        check_not_an_input(option, p, every, replaces=True)
        check_not_stored_runs(option, p)
        return p
    if kind == "prefix":
        p = Path(path)
        _check_folder(option, p, p.parent)
        check_not_an_input(option, p, every)
        return p
    if kind == "appended":
        p = check_appendable(option, path)
    elif kind in ("file", "file-in-folder", "baseline"):
        p = check_output_file(option, path, create_parent=kind == "file")
    else:
        raise ValueError(f"check_output: kind={kind!r}; allowed: {', '.join(KINDS)}")
    check_not_an_input(option, p, every)
    check_not_stored_runs(option, p, baseline_ok=kind == "baseline")
    return p
