"""The benchmark command a sweep runs per cell: checked once, then completed per cell with the result
paths and the cell's config overrides (pure: no processes)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from aorta.sweep.grid import Axis, Cell, SweepUsageError

LAUNCHERS = ("launch_cuda.sh", "launch_rocm.sh")  # scripts/ launchers pass their arguments to pytest
SET_BY_SWEEP = ("--benchmark-json", "--aorta-artifacts")
OVERRIDE_FLAGS = ("--aorta-override", "--override")


def runs_pytest(cmd: Sequence[str]) -> bool:
    """``pytest ...``, ``python3 -m pytest ...``, ``torchrun ... -m pytest ...``,
    ``python3 -m torch.distributed.run ... -m pytest ...`` or one of aorta's launch scripts."""
    names = [os.path.basename(t) for t in cmd]
    if names and (names[0] in ("pytest", "py.test") or names[0] in LAUNCHERS):
        return True
    return any(a == "-m" and b == "pytest" for a, b in zip(cmd, cmd[1:]))


def _flag_values(cmd: Sequence[str], flags: Sequence[str]) -> list[str]:
    out = []
    for i, tok in enumerate(cmd):
        for flag in flags:
            if tok == flag and i + 1 < len(cmd):
                out.append(cmd[i + 1])
            elif tok.startswith(flag + "="):
                out.append(tok[len(flag) + 1 :])
    return out


def check_command(cmd: Sequence[str], axes: Sequence[Axis]) -> None:
    """The command runs pytest and leaves to the sweep what the sweep sets."""
    if not cmd:
        raise SweepUsageError(
            "no command: put the benchmark command after '--', e.g. -- pytest benchmarks/hw_queue"
        )
    if not runs_pytest(cmd):
        raise SweepUsageError(
            f"command {' '.join(cmd)!r}: a sweep runs pytest: give 'pytest ...', 'python3 -m pytest ...', "
            "'torchrun ... -m pytest ...' or 'python3 -m torch.distributed.run ... -m pytest ...'"
        )
    for flag in SET_BY_SWEEP:
        if any(t == flag or t.startswith(flag + "=") for t in cmd):
            raise SweepUsageError(
                f"command sets {flag}: the sweep sets it per cell (under --output); leave it out"
            )
    swept = {a.name for a in axes if a.kind == "override"}
    for text in _flag_values(cmd, OVERRIDE_FLAGS):
        key = text.partition("=")[0].strip()
        if key in swept:
            raise SweepUsageError(
                f"command sets --aorta-override {text}, and --override {key} sweeps it; keep one of the two"
            )


def config_file(cmd: Sequence[str]) -> str | None:
    """The ``--aorta-config FILE`` the command gives, if any (the overrides are checked against it)."""
    found = _flag_values(cmd, ("--aorta-config",))
    return found[-1] if found else None


def check_overrides(axes: Sequence[Axis], cmd: Sequence[str]) -> None:
    """The command's own ``--aorta-override`` values, then each ``--override`` value on top of them, build a
    valid FSDP configuration (the command's ``--aorta-config`` or the default), checked the way the FSDP plugin
    will check them in every cell."""
    from aorta.fsdp.config import ConfigError, load_config

    own = _flag_values(cmd, OVERRIDE_FLAGS)
    try:
        load_config(config_file(cmd), own)
    except ConfigError as exc:
        raise SweepUsageError(f"command: {exc}") from None
    for axis in axes:
        if axis.kind != "override":
            continue
        for value in axis.values:
            try:
                load_config(config_file(cmd), [*own, f"{axis.name}={value}"])
            except ConfigError as exc:
                raise SweepUsageError(f"--override {axis.name}={value}: {exc}") from None


def _pytest_args(cmd: Sequence[str]) -> list[str] | None:
    """The arguments pytest gets (after ``pytest`` or ``-m pytest``); None for aorta's launch scripts,
    which add ``benchmarks/fsdp`` themselves."""
    names = [os.path.basename(t) for t in cmd]
    if names and names[0] in LAUNCHERS:
        return None
    if names and names[0] in ("pytest", "py.test"):
        return list(cmd[1:])
    for i, (a, b) in enumerate(zip(cmd, cmd[1:])):
        if a == "-m" and b == "pytest":
            return list(cmd[i + 2 :])
    return []


def _reads_fsdp_config(path: Path) -> bool:
    """A test path from which FSDP benchmarks (the readers of ``--aorta-override``) are collected."""
    if "fsdp" in path.resolve().parts:
        return True
    return path.is_dir() and any(d.is_dir() for pattern in ("fsdp", "*/fsdp") for d in path.glob(pattern))


def check_override_readers(axes: Sequence[Axis], cmd: Sequence[str]) -> None:
    """An ``--override`` axis on a command whose test paths hold no FSDP benchmark (a hardware-queue run)
    would change nothing: every cell the same run. Refused, naming the key and the paths. A command that
    names no test path (pytest's ``testpaths``) is taken as it is."""
    keys = [a.name for a in axes if a.kind == "override"]
    args = _pytest_args(cmd)
    if not keys or args is None:
        return
    paths = [
        t
        for t in args
        if not t.startswith("-")
        and (Path(t.split("::")[0]).is_dir() or t.split("::")[0].endswith(".py"))
        and Path(t.split("::")[0]).exists()
    ]
    if paths and not any(_reads_fsdp_config(Path(t.split("::")[0])) for t in paths):
        raise SweepUsageError(
            f"--override {keys[0]}: the command runs {' '.join(paths)}, which reads no FSDP configuration "
            "(only benchmarks/fsdp does), so every cell would be the same run; sweep an environment variable "
            "with --grid, or run benchmarks/fsdp"
        )


def cell_command(cmd: Sequence[str], cell: Cell, json_path: Path, artifacts: Path) -> list[str]:
    """The command with the cell's result paths and overrides appended (pytest reads them after the rest)."""
    out = [*cmd, f"--benchmark-json={json_path}", f"--aorta-artifacts={artifacts}"]
    for key, value in cell.overrides.items():
        out.append(f"--aorta-override={key}={value}")
    return out
