"""The sweep's grid: ``--grid NAME=v1,v2`` and ``--override key=v1,v2`` parsed into axes, and the axes'
product into cells (pure: no torch, no processes)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from aorta.environment.fingerprint import CELL_ENV_VAR  # set by the sweep for each cell
from aorta.record.redact import redact_env

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
OVERRIDE_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class SweepUsageError(ValueError):
    """Bad sweep input (an option, a value, a folder): the message names it and what is allowed."""


@dataclass(frozen=True)
class Axis:
    """One dimension of the grid: an environment variable (``--grid``) or a config key (``--override``)."""

    kind: str  # "env" or "override"
    name: str
    values: tuple[str, ...]

    @property
    def option(self) -> str:
        return "--grid" if self.kind == "env" else "--override"

    def as_dict(self) -> dict:
        """The axis as records keep it: a secret value (a URL's password, a secret-named variable) hidden."""
        return {"kind": self.kind, "name": self.name, "values": [shown(self.name, v) for v in self.values]}


def shown(name: str, value: str) -> str:
    """A setting's value as names, records and folders give it: a secret in it hidden (``aorta.record.redact``);
    the cells still run with the value itself."""
    return redact_env({name: value})[name]


def parse_axis(kind: str, text: str) -> Axis:
    """``NAME=v1,v2`` (``--grid``) or ``key.path=v1,v2`` (``--override``) -> an axis; values split at commas."""
    option, pattern, example = (
        ("--grid", ENV_NAME, "NCCL_NTHREADS=256,512")
        if kind == "env"
        else ("--override", OVERRIDE_KEY, "training.steps=5,10")
    )
    name, sep, rest = str(text).partition("=")
    name = name.strip()
    if not sep or not pattern.match(name):
        what = "an environment variable name" if kind == "env" else "a config key path"
        raise SweepUsageError(f"{option} {text!r}: expected {what}=v1,v2,..., e.g. {example}")
    if kind == "env" and name == CELL_ENV_VAR:
        raise SweepUsageError(
            f"{option} {text!r}: {CELL_ENV_VAR} is set by the sweep itself; sweep another name"
        )
    values = tuple(v.strip() for v in rest.split(","))
    if not rest.strip() or any(not v for v in values):
        raise SweepUsageError(
            f"{option} {text!r}: an empty value; give one or more values separated by commas"
        )
    dupes = sorted({v for v in values if values.count(v) > 1})
    if dupes:
        raise SweepUsageError(f"{option} {text!r}: {', '.join(dupes)} given twice; give each value once")
    return Axis(kind, name, values)


def parse_axes(grid: Sequence[str], overrides: Sequence[str]) -> list[Axis]:
    """Every ``--grid`` then every ``--override``; a name given twice is an error naming both options."""
    axes = [parse_axis("env", t) for t in grid] + [parse_axis("override", t) for t in overrides]
    if not axes:
        raise SweepUsageError("no --grid or --override given: a sweep needs at least one NAME=v1,v2")
    seen: dict[tuple[str, str], str] = {}
    for axis in axes:
        key = (axis.kind, axis.name)
        if key in seen:
            raise SweepUsageError(
                f"{axis.option} {axis.name} is given twice; give all its values in one {axis.option}"
            )
        seen[key] = axis.option
    return axes


@dataclass(frozen=True)
class Cell:
    """One point of the grid: its 0-based index in the product and the settings it runs with."""

    index: int
    env: Mapping[str, str] = field(default_factory=dict)
    overrides: Mapping[str, str] = field(default_factory=dict)

    @property
    def settings(self) -> dict[str, str]:
        return {**self.env, **self.overrides}

    @property
    def shown_settings(self) -> dict[str, str]:
        """The settings as records, names and folders give them: secrets hidden (``shown``)."""
        return {k: shown(k, v) for k, v in self.settings.items()}

    @property
    def id(self) -> str:
        """``NCCL_NTHREADS=256 NCCL_MAX_NCHANNELS=4``: the cell's name, the same in every sweep of this grid."""
        return " ".join(f"{k}={v}" for k, v in self.shown_settings.items())

    @property
    def dirname(self) -> str:
        safe = re.sub(r"[^A-Za-z0-9_.=-]+", "_", "_".join(f"{k}={v}" for k, v in self.shown_settings.items()))
        return f"cell{self.index + 1:02d}_{safe[:100]}"


def expand(axes: Sequence[Axis]) -> list[Cell]:
    """The product of the axes, the first axis slowest (``itertools.product`` order)."""
    cells = []
    for i, values in enumerate(itertools.product(*(a.values for a in axes))):
        env = {a.name: v for a, v in zip(axes, values) if a.kind == "env"}
        ovr = {a.name: v for a, v in zip(axes, values) if a.kind == "override"}
        cells.append(Cell(i, env, ovr))
    return cells
