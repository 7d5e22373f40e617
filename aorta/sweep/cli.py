"""``aorta sweep``: argument set-up and entry point.

Exit codes: 0 every cell ran and passed; 1 at least one cell failed or timed out (each is recorded in the
manifest and the sweep went on); 2 bad input (a grid value, an override, the command or --output), refused
before the first cell (another sweep running into the same folder included); 3 a file of the sweep could not be written (disk full: the manifest on disk is the last
one written whole; a rerun resumes); 130 interrupted (Ctrl-C, SIGTERM or SIGHUP: the running cell and its
process group are stopped and recorded as interrupted).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from aorta.exit_codes import EXIT_SIGNAL_BASE, EXIT_USAGE, EXIT_WRITE_FAILED
from aorta.record.output_arguments import output_argument
from aorta.record.output_paths import OutputPathError, check_output_dir
from aorta.sweep import manifest as mf
from aorta.sweep.command import check_command, check_override_readers, check_overrides
from aorta.sweep.grid import Cell, SweepUsageError, expand, parse_axes
from aorta.sweep.variables import check_env_axes

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # `timeout`, a batch system, a closed terminal: stop the cell


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = (
        "aorta sweep --grid NAME=v1,v2 [--grid ...] [--override key=v1,v2] --output DIR [--label STACK] "
        "[--cell-timeout S] [--force] -- CMD..."
    )
    parser.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="NAME=v1,v2",
        help="an environment variable and its values (repeat for more dimensions; the sweep runs the product)",
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="key=v1,v2",
        help="an FSDP config key (as --aorta-override) and its values: one more dimension of the grid",
    )
    output_argument(
        parser,
        "--output",
        kind="dir",
        required=True,
        metavar="DIR",
        help="sweep folder: manifest and one folder per cell",
    )
    parser.add_argument(
        "--label", metavar="STACK", help="the stack this sweep ran on (default: the folder's name)"
    )
    parser.add_argument(
        "--cell-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop a cell that runs longer (recorded as timed out; the sweep goes on)",
    )
    parser.add_argument("--force", action="store_true", help="re-run cells already done")
    parser.add_argument(
        "cmd", nargs=argparse.REMAINDER, metavar="-- CMD", help="the benchmark command (pytest or torchrun)"
    )


def base_environment(environ, axes) -> dict[str, str]:
    """The scheduling variables in force outside the grid (part of the sweep's identity); logging and GPU
    visibility are left out, so a resume with NCCL_DEBUG=INFO or on other GPUs is the same sweep."""
    from aorta.device import Device  # its env pattern; torch is imported only here
    from aorta.environment.fingerprint import NOT_SETTINGS

    left_out = {a.name for a in axes if a.kind == "env"} | set(NOT_SETTINGS)
    return {k: v for k, v in Device.scheduling_env(dict(environ)).items() if k not in left_out}


def prepare(args: argparse.Namespace, environ) -> tuple[Path, dict, list[Cell], list[str], list[str]]:
    """Everything that can be refused, refused before the first cell: (folder, manifest, cells, command, notes)."""
    cmd = list(args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd)
    axes = parse_axes(args.grid, args.override)
    notes = check_env_axes(axes)
    check_command(cmd, axes)
    if shutil.which(cmd[0]) is None:
        raise SweepUsageError(f"command {cmd[0]!r}: not found on PATH")
    check_overrides(axes, cmd)
    check_override_readers(axes, cmd)
    if args.cell_timeout is not None and not args.cell_timeout > 0:
        raise SweepUsageError(f"--cell-timeout {args.cell_timeout:g}: give a number of seconds > 0")
    folder = Path(args.output)
    try:
        check_output_dir("--output", folder)
    except OutputPathError as exc:
        raise SweepUsageError(str(exc)) from None
    cells = expand(axes)
    label = args.label or folder.resolve().name
    doc = mf.new_manifest(label, axes, cmd, base_environment(environ, axes), cells)
    old = mf.read_manifest(folder)
    if old is not None:
        mf.check_same_sweep(old, doc, folder)
        doc = mf.merge_cells(old, doc)
    elif folder.is_dir() and any(folder.iterdir()):
        raise SweepUsageError(
            f"--output {folder}: folder is not empty and holds no sweep; choose a new or empty folder"
        )
    return folder, doc, cells, cmd, notes


def run_sweep_command(args: argparse.Namespace) -> int:
    import os

    try:
        folder, doc, cells, cmd, notes = prepare(args, os.environ)
        with contextlib.ExitStack() as held:
            held.enter_context(_folder_lock(folder))
            folder, doc, cells, cmd, notes = prepare(args, os.environ)  # read again, now that it is ours
            return _run_locked(args, folder, doc, cells, cmd, notes)
    except SweepUsageError as exc:
        print(f"aorta sweep: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """One sweep at a time per folder (issue 38, case 4: two at once ran every cell twice and deleted each
    other's cell folders): the second is refused at once, naming the first."""
    from aorta.processes.lock import LockBusy, locked

    folder = folder.resolve()
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        with locked(folder, wait_s=0, what=f"sweep folder {folder}"):
            yield
    except LockBusy as exc:
        raise SweepUsageError(f"--output {folder}: {exc}; or choose another folder") from None


def _run_locked(args, folder: Path, doc: dict, cells: list[Cell], cmd: list[str], notes: list[str]) -> int:
    from aorta.sweep.knob_check import check_knobs
    from aorta.sweep.runner import run_sweep

    for note in notes:
        print(f"aorta sweep: note: {note}")
    previous = {sig: signal.signal(sig, _interrupt) for sig in STOP_SIGNALS}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        mf.write_manifest(folder, doc)
        code = run_sweep(folder, doc, cells, cmd, force=args.force, timeout_s=args.cell_timeout)
        check_knobs(folder, doc)  # per cell: evidence from its run that each setting took effect
        return code
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        print(
            f"aorta sweep: interrupted by {signal.Signals(signum).name}; the manifest records every cell so far: {folder / mf.MANIFEST}",
            file=sys.stderr,
        )
        return EXIT_SIGNAL_BASE + signum  # 128 + N, as every command (issue 65)
    except OSError as exc:  # disk full, a folder removed under the sweep: no traceback, no half manifest
        print(
            f"aorta sweep: error: stopped: cannot write under --output {folder}: {exc.strerror or exc} "
            f"({getattr(exc, 'filename', None) or folder}); {mf.MANIFEST} is the last one written whole; "
            "free the space and run the same command again to resume",
            file=sys.stderr,
        )
        return EXIT_WRITE_FAILED
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _Interrupted(KeyboardInterrupt):
    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


def _interrupt(signum, frame) -> None:
    raise _Interrupted(signum)
