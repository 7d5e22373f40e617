"""``aorta ab``: two stacks on one machine, in alternating fresh processes, B judged against A (pure parts).

A **launcher** says how a side runs Python: leading ``NAME=VALUE`` words are environment settings, the rest
is the Python command (``/opt/rocm-7.1/venv/bin/python``, ``docker run --rm -v $PWD:$PWD -w $PWD
rocm/pytorch:tag python``); with no command the side runs this Python. The **command** after ``--`` is what
both sides run: pytest arguments (``benchmarks/hw_queue -m p0``), ``pytest ...``, ``python -m pytest ...`` or
``torchrun ... -m pytest benchmarks/fsdp`` (run as ``<python> -m torch.distributed.run ...``, so a torchrun
of the side's own environment launches the ranks). Runs go in pairs whose order alternates, A B, B A, A B...,
so drift over the session falls on both sides alike; both sides are runs of this machine, so the comparison
carries no machine-to-machine noise.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from aorta.hw_queue.kernel_pass import GATE_KERNEL_PASS_ROUNDS

SETTING = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
NOT_A_NAME = re.compile(r"^[^/=\s]*=")  # a word with = before any /: meant as a setting, named wrongly
# Options the ab command sets per run, or that would make a run start a gate of its own.
OWNED_OPTIONS = (
    "--aorta-compare",
    "--aorta-save-baseline",
    "--aorta-runs",
    "--aorta-confirm",
    "--aorta-budget",
    "--aorta-lean-run",
    "--aorta-order-seed",
    "--benchmark-json",
    "--aorta-only-file",
)


class AbError(ValueError):
    """Bad input to ``aorta ab``: the option, the value and what is allowed."""


@dataclass(frozen=True)
class Launcher:
    label: str
    env: dict[str, str] = field(default_factory=dict)
    python: tuple[str, ...] = ()  # empty: this Python

    def python_cmd(self) -> list[str]:
        return list(self.python) or [sys.executable]


def parse_launcher(option: str, text: str, label: str) -> Launcher:
    """``--a`` / ``--b``: settings (``NAME=VALUE``) then an optional Python command; empty means this Python."""
    try:
        words = shlex.split(text or "")
    except ValueError as exc:
        raise AbError(f"{option}={text!r}: cannot be split into words ({exc})") from None
    env: dict[str, str] = {}
    i = 0
    while i < len(words) and SETTING.match(words[i]):
        name, _, value = words[i].partition("=")
        env[name] = value
        i += 1
    if i < len(words) and NOT_A_NAME.match(words[i]):  # 1BAD=x: neither a setting nor a program
        name = words[i].split("=", 1)[0]
        raise AbError(
            f"{option}={text!r}: {name!r} is not an environment variable name (letters, digits and _, not "
            "starting with a digit); settings come first as NAME=VALUE, then the Python command"
        )
    return Launcher(label=label, env=env, python=tuple(words[i:]))


def check_command(cmd: Sequence[str]) -> None:
    """The command after ``--``: present, and leaving the per-run options to ``aorta ab``."""
    if not cmd:
        raise AbError(
            "no command after '--': give what both sides run, e.g. '-- benchmarks/hw_queue -m p0' or "
            "'-- torchrun --standalone --nproc_per_node 2 -m pytest benchmarks/fsdp'"
        )
    for word in cmd:
        name = word.split("=", 1)[0]
        if name in OWNED_OPTIONS:
            raise AbError(
                f"the command holds {name}: aorta ab sets each run's {', '.join(OWNED_OPTIONS[-4:])} itself and "
                "judges the runs; leave out --aorta-compare, --aorta-save-baseline, --aorta-runs, --aorta-confirm "
                "and --aorta-budget"
            )


KERNEL_PASS_OPTION = "--aorta-kernel-pass-rounds"


def run_command(
    launcher: Launcher,
    cmd: Sequence[str],
    *,
    json_path: str,
    seed: int,
    lean: bool,
    only_file: str | None = None,
) -> list[str]:
    """One run's command line: the side's Python running the command (pytest, or torchrun's module), with this
    run's JSON, order seed and, for a repeat run, ``--aorta-lean-run``."""
    py = launcher.python_cmd()
    head, rest = cmd[0], list(cmd[1:])
    if head in ("torchrun",):
        line = [*py, "-m", "torch.distributed.run", *rest]
    elif head in ("pytest", "py.test"):
        line = [*py, "-m", "pytest", *rest]
    elif re.fullmatch(r"python[0-9.]*", head.rsplit("/", 1)[-1]) and rest[:1] == ["-m"]:
        line = [*py, *rest]
    else:
        line = [*py, "-m", "pytest", *cmd]
    line += [f"--benchmark-json={json_path}", f"--aorta-order-seed={seed}"]
    line += gate_pass_rounds(cmd)  # the whole command: pytest arguments may start with the option
    if lean:
        line.append("--aorta-lean-run")
    if only_file:
        line.append(f"--aorta-only-file={only_file}")
    return line


def gate_pass_rounds(args: Sequence[str]) -> list[str]:
    """``--aorta-kernel-pass-rounds`` at the gate's count (aorta/hw_queue/kernel_pass.py)
    unless the command gives its own."""
    if any(a == KERNEL_PASS_OPTION or a.startswith(KERNEL_PASS_OPTION + "=") for a in args):
        return []
    return [f"{KERNEL_PASS_OPTION}={GATE_KERNEL_PASS_ROUNDS}"]


def pair_order(pair: int) -> tuple[str, str]:
    """Which side runs first in pair ``pair`` (1-based): A B, B A, A B, ..."""
    return ("A", "B") if pair % 2 else ("B", "A")
