"""``aorta torchrun [torchrun options] -m pytest ARGS``: torchrun, returning rank 0's pytest exit code.

torchrun ends with 1 whenever a rank's exit status is not 0, whatever the code: under it the gate's codes
(10 regression, 13 not saved, 14 settings differ, 4 usage error) all read 1, and CI cannot tell a
regression from a crash. This launcher runs the same torchrun command with each rank's pytest wrapped
(``aorta.processes.rank_exit``) so that its code is left in a file, and exits with rank 0's code; where rank 0
passed but another rank failed, or rank 0 left no code (killed, crashed), torchrun's own code stands. A
SIGINT, SIGTERM or SIGHUP to the launcher is passed on to torchrun and the launcher exits 128 + N (130, 143,
129: ``EXIT_SIGNAL_BASE``, issue 65) once torchrun has stopped; torchrun dies with the launcher (``PR_SET_PDEATHSIG``).

With ``$AORTA_RANK_START=fork`` the ranks start warm: the launcher starts a rank server on its node
(``aorta.processes.rank_server``: torch imported once, before CUDA) and torchrun starts stubs
(``aorta.processes.warm_rank``) that have it fork each rank; every rank is still a process of its own, with its own
CUDA context and process group. A server that cannot start leaves the ranks to start from nothing, said in one line.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from aorta.exit_codes import EXIT_SIGNAL_BASE, EXIT_USAGE
from aorta.launch import rendezvous
from aorta.launch.scratch_folder import codes_folder
from aorta.processes import warm_rank
from aorta.processes.child_process import exit_status, signal_name, start_child
from aorta.processes.rank_server import RankServer, RankServerError

PYTEST = ("-m", "pytest")
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # to torchrun, which stops its ranks


def add_torchrun_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "aorta torchrun [torchrun options] -m pytest [pytest arguments]"
    parser.add_argument(
        "args", nargs=argparse.REMAINDER, metavar="...", help="torchrun's arguments, as given to it"
    )


RANK_EXIT, WARM_RANK = "aorta.processes.rank_exit", "aorta.processes.warm_rank"


def rank_command(
    args: Sequence[str], folder: str, python: str = sys.executable, *, module: str = RANK_EXIT
) -> list[str]:
    """The torchrun command with ``-m pytest ARGS`` replaced by the rank wrapper ``module`` (``rank_exit``, or the
    warm stub ``warm_rank`` that takes the same arguments); ``ValueError`` without ``-m pytest``."""
    args = list(args[1:] if args[:1] == ["--"] else args)
    for i in range(len(args) - 1):
        if (args[i], args[i + 1]) == PYTEST:
            return [
                python,
                "-m",
                "torch.distributed.run",
                *args[:i],
                "-m",
                module,
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


def first_failure(folder: Path) -> str | None:
    """The rank that failed first and why, from the ``rank<R>.error`` files its ranks left
    (``aorta.processes.rank_exit.FirstError``); None where none failed."""
    found = []
    for p in folder.glob("rank*.error"):
        try:
            stamp, what = p.read_text(encoding="utf-8").strip().split(" ", 1)
            found.append((float(stamp), int(p.stem[4:]), what))
        except (OSError, ValueError):
            continue
    if not found:
        return None
    _, rank, what = min(found)
    others = sorted(r for _, r, _ in found if r != rank)
    also = (
        f" (later also rank{'s' if len(others) > 1 else ''} {', '.join(map(str, others))})" if others else ""
    )
    return f"rank {rank} failed first: {what}{also}"


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


def _bounded_rendezvous(args: list[str]) -> tuple[list[str], float | None]:
    """``--aorta-rdzv-timeout`` taken out of torchrun's options and passed on as its ``join_timeout``."""
    args = args[1:] if args[:1] == ["--"] else args
    at = next((i for i in range(len(args) - 1) if (args[i], args[i + 1]) == PYTEST), len(args))
    head, given = rendezvous.take_option(args[:at])
    head, timeout = rendezvous.bounded(head, rendezvous.DEFAULT_TIMEOUT_S if given is None else given)
    return head + args[at:], timeout


def _warm_server(folder: str, env: dict[str, str]) -> RankServer | None:
    """The node's rank server where ``$AORTA_RANK_START`` is ``fork`` (its socket named in ``env`` for the stubs);
    None otherwise, or where it could not start (said in one line)."""
    if warm_rank.start_mode(env) != "fork":
        return None
    path = os.path.join(folder, "ranks.sock")
    try:
        server = RankServer(path, env, os.getcwd())
    except RankServerError as exc:
        print(f"aorta torchrun: {exc}: the ranks start from nothing", file=sys.stderr, flush=True)
        return None
    env[warm_rank.SERVER_ENV] = path
    return server


def run_torchrun(args: argparse.Namespace) -> int:
    with codes_folder() as folder:
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])  # the ranks import this aorta, as the launcher did
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        try:
            launch_args, rdzv_timeout = _bounded_rendezvous(list(args.args))
            cmd = rank_command(launch_args, folder)
            warm_rank.start_mode(env)
        except ValueError as exc:
            print(f"aorta torchrun: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        server = _warm_server(folder, env)
        try:
            if server is not None:
                cmd = rank_command(launch_args, folder, module=WARM_RANK)
            return _launch(cmd, env, folder, launch_args, rdzv_timeout)
        finally:
            if server is not None:
                server.close()


def _launch(
    cmd: list[str], env: dict[str, str], folder: str, launch_args: list[str], rdzv_timeout: float | None
) -> int:
    """torchrun run to its end; the exit code from its ranks' codes (``exit_code``), said in one line."""
    if rdzv_timeout is not None:
        print(rendezvous.waiting_line(launch_args, rdzv_timeout), file=sys.stderr, flush=True)
    started = time.monotonic()
    got: list[int] = []
    # torchrun in a session of its own: a terminal's Ctrl-C reaches this launcher only, which passes it on
    # once, as a CI cancel's SIGINT to this pid is (issue 38, case 8); torchrun hands it to its ranks (each
    # in a session of its own already). SIGTERM to torchrun when this launcher dies, even by SIGKILL:
    # torchrun then stops its ranks (case 7).
    proc = start_child(cmd, env=env, die_signal=signal.SIGTERM)

    def forward(sig: int, frame: object) -> None:
        got.append(sig)
        proc.send_signal(sig)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        torchrun_code = exit_status(proc.wait())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    codes = read_codes(Path(folder))
    code, why = exit_code(torchrun_code, codes)
    first = first_failure(Path(folder))
    if first:
        print(f"aorta torchrun: {first}", file=sys.stderr)
    if rdzv_timeout is not None and torchrun_code and not codes and not got:
        if time.monotonic() - started >= rdzv_timeout:  # no rank ever started: the rendezvous timed out
            print(rendezvous.missing_line(launch_args, rdzv_timeout), file=sys.stderr)
    if got:
        code, why = (
            EXIT_SIGNAL_BASE + got[0],
            f"interrupted by {signal_name(got[0])}, passed on to torchrun ({why})",
        )
    print(f"aorta torchrun: {why}", file=sys.stderr)
    return code
