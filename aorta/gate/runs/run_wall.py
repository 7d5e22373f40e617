"""Where a gate's wall goes: each fresh run's seconds in timed rounds, in checks and passes, and in process start
and collection, summed by run kind, and the share of the whole gate's wall each takes (issue 55).

A run writes what it can see of itself into its JSON (``WALL_KEY``, by ``aorta.gate.session.wall_record``): the
seconds its tests took (``tests_s``: setup, call and teardown of every item), the host seconds of its timed
rounds or steps (``timed_s``: warm-up apart), and the seconds of work a lean run of the same command would skip
(``lean_skips_s``: the output checks, known-answer tests, and the kernel passes a lean run does not keep). The
parent adds the run's wall (fork or exec to exit): what the tests did not take is the process's start, pytest's
collection and the writing of its JSON.

Pure: plain numbers in, plain numbers out (docs/gate.md, "Where a gate's wall goes").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

WALL_KEY = "aorta_wall"  # in a run's JSON: {"tests_s", "timed_s", "collect_s", "lean_skips_s"}
PARTS = ("timed", "checks", "start")
PART_NAMES = {
    "timed": "timed rounds",
    "checks": "checks and passes",
    "start": "process start and collection",
    "between": "between runs (judging, saving)",
}


@dataclass(frozen=True)
class RunWall:
    """One run's wall split three ways. ``known`` False: the run wrote no record of its own (an older aorta,
    a run that failed before writing its JSON): its whole wall is counted as start, not guessed at."""

    kind: str  # "check", "lean", "full", "confirm"
    wall_s: float
    tests_s: float = 0.0
    timed_s: float = 0.0
    lean_skips_s: float = 0.0
    known: bool = True

    @property
    def timed(self) -> float:
        return min(max(self.timed_s, 0.0), self.wall_s)

    @property
    def checks(self) -> float:
        return min(max(self.tests_s - self.timed_s, 0.0), self.wall_s - self.timed)

    @property
    def start(self) -> float:
        return max(self.wall_s - self.timed - self.checks, 0.0)

    def part(self, name: str) -> float:
        return {"timed": self.timed, "checks": self.checks, "start": self.start}[name]

    def lean_estimate_s(self) -> float:
        """The wall a lean run of the same command would take, from this full run: its wall less the work a
        lean run skips (where the run recorded it; else its whole wall, the cautious guess)."""
        return max(self.wall_s - self.lean_skips_s, 0.0) if self.known else self.wall_s


def run_wall(kind: str, wall_s: float, doc: Mapping | None) -> RunWall:
    """A run's ``RunWall`` from its JSON document (``doc``; None where it has none) and its wall."""
    rec = doc.get(WALL_KEY) if isinstance(doc, Mapping) else None
    if not isinstance(rec, Mapping):
        return RunWall(kind, float(wall_s), known=False)

    def num(key: str) -> float:
        v = rec.get(key)
        return float(v) if isinstance(v, (int, float)) and v == v and v >= 0 else 0.0

    return RunWall(kind, float(wall_s), num("tests_s"), num("timed_s"), num("lean_skips_s"))


@dataclass(frozen=True)
class WallReport:
    """A gate's (or ``aorta ab``'s) wall: its runs by kind, and the seconds spent outside any run."""

    runs: tuple[RunWall, ...]
    total_s: float  # the gate's whole wall, from its start to its verdict

    def seconds(self, part: str, kind: str | None = None) -> float:
        return sum(r.part(part) for r in self.runs if kind is None or r.kind == kind)

    @property
    def between_s(self) -> float:
        return max(self.total_s - sum(r.wall_s for r in self.runs), 0.0)

    def share(self, part: str) -> float:
        if self.total_s <= 0:
            return 0.0
        s = self.between_s if part == "between" else self.seconds(part)
        return s / self.total_s

    def kinds(self) -> list[str]:
        return list(dict.fromkeys(r.kind for r in self.runs))

    def as_dict(self) -> dict:
        """For the verdict JSON: seconds and shares, overall and per run kind."""
        by_kind = {}
        for kind in self.kinds():
            mine = [r for r in self.runs if r.kind == kind]
            wall = sum(r.wall_s for r in mine)
            by_kind[kind] = {
                "runs": len(mine),
                "wall_s": round(wall, 2),
                **{f"{p}_s": round(sum(r.part(p) for r in mine), 2) for p in PARTS},
                **{
                    f"{p}_share": round(sum(r.part(p) for r in mine) / wall, 4) if wall else 0.0
                    for p in PARTS
                },
                "unrecorded_runs": sum(not r.known for r in mine),
            }
        return {
            "total_s": round(self.total_s, 2),
            **{f"{p}_s": round(self.seconds(p), 2) for p in PARTS},
            "between_s": round(self.between_s, 2),
            **{f"{p}_share": round(self.share(p), 4) for p in (*PARTS, "between")},
            "by_kind": by_kind,
        }

    def lines(self, who: str) -> list[str]:
        """``who: where the N s went: ...`` and one line per run kind."""
        if self.total_s <= 0 or not self.runs:
            return []
        head = ", ".join(
            f"{PART_NAMES[p]} {self.share(p) * 100:.0f}% ({self.between_s if p == 'between' else self.seconds(p):.0f} s)"
            for p in (*PARTS, "between")
        )
        out = [f"{who}: where the {self.total_s:.0f} s went: {head}"]
        for kind in self.kinds():
            mine = [r for r in self.runs if r.kind == kind]
            wall = sum(r.wall_s for r in mine)
            walls = [r.wall_s for r in mine]
            each = f"{walls[0]:.0f} s" if len(walls) == 1 else f"{min(walls):.0f}-{max(walls):.0f} s each"
            parts = ", ".join(
                f"{PART_NAMES[p]} {sum(r.part(p) for r in mine) / wall * 100:.0f}%" for p in PARTS
            )
            unknown = sum(not r.known for r in mine)
            tail = f" ({unknown} wrote no record: counted as start)" if unknown else ""
            out.append(f"{who}:   {kind} runs: {len(mine)} x {each}: {parts}{tail}")
        return out


def report(runs: Iterable[RunWall], total_s: float) -> WallReport:
    runs = tuple(runs)
    return WallReport(runs, max(float(total_s), sum(r.wall_s for r in runs)))
