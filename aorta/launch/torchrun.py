"""``aorta torchrun [torchrun options] -m pytest ARGS``: torchrun, returning rank 0's pytest exit code.

torchrun ends with 1 whenever a rank's exit status is not 0, whatever the code: under it the gate's codes
(10 regression, 13 not saved, 14 settings differ, 4 usage error) all read 1, and CI cannot tell a
regression from a crash. This launcher runs the same torchrun command with each rank's pytest wrapped
(``aorta.launch.rank_exit``) so that its code is left in a file, and exits with rank 0's code; where rank 0
passed but another rank failed, or rank 0 left no code (killed, crashed), torchrun's own code stands.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from aorta.gate.exit_codes import EXIT_USAGE

PYTEST = ("-m", "pytest")


def add_torchrun_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "aorta torchrun [torchrun options] -m pytest [pytest arguments]"
    parser.add_argument(
        "args", nargs=argparse.REMAINDER, metavar="...", help="torchrun's arguments, as given to it"
    )


def rank_command(args: Sequence[str], folder: str, python: str = sys.executable) -> list[str]:
    """The torchrun command with ``-m pytest ARGS`` replaced by the rank wrapper (``ValueError`` without it)."""
    args = list(args[1:] if args[:1] == ["--"] else args)
    for i in range(len(args) - 1):
        if (args[i], args[i + 1]) == PYTEST:
            return [
                python,
                "-m",
                "torch.distributed.run",
                *args[:i],
                "-m",
                "aorta.launch.rank_exit",
                folder,
                *args[i + 2 :],
            ]
    raise ValueError(
        f"aorta torchrun {' '.join(args)}: give torchrun's options, then -m pytest and pytest's arguments, e.g. "
        "aorta torchrun --standalone --nproc_per_node 8 -m pytest benchmarks/fsdp"
    )


def read_codes(folder: Path) -> dict[int, int]:
    codes = {}
    for p in folder.glob("rank*.code"):
        try:
            codes[int(p.stem[4:])] = int(p.read_text().strip())
        except (ValueError, OSError):
            continue
    return codes


def exit_code(torchrun_code: int, codes: dict[int, int]) -> tuple[int, str]:
    """(the exit code, the sentence that says where it came from)."""
    others = ", ".join(f"rank {r}: {c}" for r, c in sorted(codes.items()) if r != 0 and c != 0)
    if 0 not in codes:
        return torchrun_code, f"rank 0 left no pytest exit code; torchrun's exit code {torchrun_code}"
    if codes[0] == 0 and torchrun_code != 0:
        return (
            torchrun_code,
            f"rank 0 passed, another rank did not ({others or 'no code left'}); exit {torchrun_code}",
        )
    extra = f" (other ranks: {others})" if others else ""
    return codes[0], f"rank 0's pytest exit code {codes[0]}{extra}"


def run_torchrun(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="aorta-torchrun-") as folder:
        try:
            cmd = rank_command(args.args, folder)
        except ValueError as exc:
            print(f"aorta torchrun: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])  # the ranks import this aorta, as the launcher did
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        proc = subprocess.Popen(cmd, env=env)
        forward = {
            sig: signal.signal(sig, lambda s, f: proc.send_signal(s))
            for sig in (signal.SIGTERM, signal.SIGHUP)
        }
        try:
            while True:
                try:
                    torchrun_code = proc.wait()
                    torchrun_code = 128 - torchrun_code if torchrun_code < 0 else torchrun_code  # a signal
                    break
                except KeyboardInterrupt:  # Ctrl-C reached torchrun too (same terminal): wait for it to stop
                    continue
        finally:
            for sig, handler in forward.items():
                signal.signal(sig, handler)
        code, why = exit_code(torchrun_code, read_codes(Path(folder)))
    print(f"aorta torchrun: {why}", file=sys.stderr)
    return code
