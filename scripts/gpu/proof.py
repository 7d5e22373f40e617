"""A proof, declared as data: what it runs on a GPU machine, on how many GPUs, which table of
docs/measurements.md it fills, and how its table is read back from what the runs left.

The driver (``scripts/gpu/prove.py``) owns everything proofs share: the time budget, fresh-process pools,
the GPU line, one archive for the return trip, and the table printed last. A proof only says what to run::

    Proof(
        name="gate_power",
        what="A/A and calibrated slowdowns of the P0 set, the baseline saved by an earlier call",
        gpus=1,
        fills="The run-level gate on H100",
        knobs={"base_runs": "6", "slowdowns": "0.02,0.05"},
        runs=lambda k, work: [
            Run("baseline", (*P0, f"--aorta-baseline-dir={work}/baselines", "--aorta-save-baseline=x",
                             f"--aorta-runs={k.int('base_runs')}")),
            *(Run(f"slow_{s}", (*P0, ..., f"--aorta-test-slowdown={s}",
                                f"--aorta-verdict-json={work}/slow_{s}.verdict.json"))
              for s in k.list("slowdowns")),
        ],
        table=gate_tables.gate_compares,
    )
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: python3 -m pytest as the proofs run it: no cache folder, quiet (the table is the proof's own).
PYTEST = ("python3", "-m", "pytest", "-p", "no:cacheprovider", "-q")
#: torchrun through aorta (its exit code is rank 0's pytest code); then NPROC, then ``-m pytest ...``.
TORCHRUN = ("python3", "-m", "aorta", "torchrun", "--standalone", "--nproc_per_node")


@dataclass(frozen=True)
class Run:
    """One command, run from the repository root; its output goes to ``<work>/<name>.log``.

    ``repeat`` > 1 makes it a pool of fresh processes: ``{k}`` in the arguments is the run's number
    (``first``, ``first`` + 1, ...: an order seed too), each run its own process, as many as the budget allows (the driver starts none that the slowest so
    far would carry past it); with ``stop_on_failure`` a failed run ends the pool. ``env`` values of ``None``
    unset the variable. ``limit_s`` caps each process (and is cut to what is left of the budget).
    ``expect``: the exit codes that mean the proof holds (a compare against a calibrated slowdown: 10)."""

    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str | None] = field(default_factory=dict)
    limit_s: int = 600
    repeat: int = 1
    stop_on_failure: bool = True
    expect: tuple[int, ...] = (0,)
    first: int = 1

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ValueError(f"Run name {self.name!r}: give a plain file name (it names the log)")
        if self.repeat < 1 or self.limit_s < 1:
            raise ValueError(f"Run {self.name}: repeat and limit_s must be at least 1")

    def instances(self) -> list[tuple[str, tuple[str, ...]]]:
        """(log name, argv) of each process: ``name`` once, or ``name-1``, ``name-2``, ... in a pool."""
        numbers = range(self.first, self.first + self.repeat)
        return [
            (
                self.name if self.repeat == 1 else f"{self.name}-{k}",
                tuple(a.replace("{k}", str(k)) for a in self.argv),
            )
            for k in numbers
        ]


class Knobs(Mapping[str, str]):
    """A proof's settings: its declared defaults, overridden by ``--set key=value``; plus the input paths
    (earlier calls' archives or folders, unpacked by the driver) for proofs that read what others left."""

    def __init__(
        self, defaults: Mapping[str, str], overrides: Mapping[str, str], inputs: Iterable[Path] = ()
    ):
        unknown = sorted(set(overrides) - set(defaults))
        if unknown:
            allowed = ", ".join(sorted(defaults)) or "none"
            raise ValueError(f"--set {unknown[0]}: this proof has no such knob (its knobs: {allowed})")
        self._values = {**defaults, **overrides}
        self.inputs = tuple(inputs)

    def __getitem__(self, key: str) -> str:
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def int(self, key: str) -> int:
        try:
            return int(self._values[key])
        except ValueError:
            raise ValueError(f"--set {key}={self._values[key]}: a whole number is needed") from None

    def list(self, key: str) -> list[str]:
        """A comma-separated knob as its items (an empty knob is an empty list)."""
        return [x for x in self._values[key].split(",") if x]

    def words(self, key: str) -> list[str]:
        """A knob holding command-line words, such as a pytest selection ``-m p0``."""
        return self._values[key].split()


Table = Callable[[Path, Knobs], list[str]]


@dataclass(frozen=True, kw_only=True)
class Proof:
    """What one proof runs and what it shows. ``gpus`` 0 is an offline proof: it reads earlier calls'
    archives (its inputs) and runs no GPU work. ``fills`` is the heading (its start) of the section of
    docs/measurements.md whose table it regenerates, or ``page.md#heading`` for another page of docs/. ``files`` are written into the work folder before the
    runs (notes the table reads back); ``collect`` names folders the runs leave under the repository root
    (``.aorta/runs``), moved into the archive after them."""

    name: str
    what: str
    gpus: int
    fills: str
    runs: Callable[[Knobs, Path], Iterable[Run]]
    table: Table
    knobs: Mapping[str, str] = field(default_factory=dict)
    budget_s: int = 570
    files: Callable[[Knobs], Mapping[str, str]] = lambda k: {}
    collect: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.gpus < 0:
            raise ValueError(f"proof {self.name}: gpus must be 0 (offline) or more")
        if not self.fills:
            raise ValueError(f"proof {self.name}: say which table of docs/measurements.md it fills")

    def archive_name(self, knobs: Mapping[str, str]) -> str:
        """``<name>.tgz``, or ``<name>_<tag>.tgz`` where the proof has a ``tag`` knob (pools of several calls)."""
        tag = knobs.get("tag")
        return f"{self.name}_{tag}.tgz" if tag else f"{self.name}.tgz"
