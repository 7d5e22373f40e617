"""``--aorta-runs auto``: fresh-process runs added until every figure is decided or the budget ends.

The loop (``run_auto``) knows nothing of pytest: it is given a way to start one run (``start``) and, when
comparing, a way to judge the runs so far (``judge``). At each look of ``aorta.gate.sequential.LOOKS`` the
runs are judged with each test at ``alpha / len(LOOKS)``; the benchmarks with a figure still undecided
(``undecided``) get the next runs, restricted to them; the rest stop. The first ``full_runs`` runs are full
(output check, kernel and labelled passes); later runs time the rounds only (lean). Saving a baseline has no
verdicts to wait for: its runs continue until the budget or the run cap.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from aorta.gate.compare import Comparison
from aorta.gate.fresh_runs import ChildRun
from aorta.gate.sequential import LOOKS, Budget, next_look, runs_to_gateable
from aorta.gate.verdict import NOT_GATEABLE, UNSURE

# start(k, only, lean) runs fresh process k (1-based) of the benchmarks ``only`` (None: all)
StartRun = Callable[[int, Sequence[str] | None, bool], ChildRun]
# judge(full_runs, restricted_runs) -> the comparison of every run so far
Judge = Callable[[list[ChildRun], list[ChildRun]], Comparison]


def undecided(comp: Comparison, runs_left: int, *, both_sides: bool = False) -> list[str]:
    """Benchmarks with a figure that more candidate runs (at most ``runs_left``) could still decide: an
    UNSURE with a test behind it, or a NOT_GATEABLE whose noise is known and whose MDE more runs would bring
    within the bound, or whose noise is unknown for want of runs. Figures decided for good (SLOWER, FASTER,
    SAME; values not positive; a figure missing on a side) stop."""
    s = comp.settings
    out: list[str] = []
    if runs_left <= 0:
        return out
    for v in comp.verdicts:
        if v.outcome == UNSURE and v.p_value is not None:
            out.append(v.benchmark)
        elif v.outcome == NOT_GATEABLE and v.change_ratio is not None:
            if v.noise_sigma is None:  # one run a side: more runs measure the noise
                out.append(v.benchmark)
                continue
            more = runs_to_gateable(
                v.noise_sigma,
                v.ref_runs,
                v.cand_runs,
                alpha=s.look_alpha,
                power=s.power,
                max_mde=s.max_mde,
                both_sides=both_sides,
                limit=runs_left,
            )
            if more is not None:
                out.append(v.benchmark)
    return list(dict.fromkeys(out))


@dataclass
class AutoOutcome:
    full: list[ChildRun] = field(default_factory=list)  # runs of every benchmark
    restricted: list[ChildRun] = field(default_factory=list)  # runs of the undecided benchmarks
    comparison: Comparison | None = None
    stop_reason: str = ""
    looks: list[str] = field(default_factory=list)  # one line per look

    @property
    def children(self) -> list[ChildRun]:
        return [*self.full, *self.restricted]

    @property
    def failed(self) -> ChildRun | None:
        return next((c for c in self.children if not c.ok), None)


def run_auto(
    start: StartRun,
    budget: Budget,
    *,
    judge: Judge | None = None,
    full_runs: int = 1,
    looks: Sequence[int] = LOOKS,
    clock: Callable[[], float] = time.monotonic,
    both_sides: bool = False,
) -> AutoOutcome:
    """Runs until decided (``judge`` given) or until the budget or cap (saving). Never judges a partial
    candidate: a failed run ends the loop (``AutoOutcome.failed``). ``both_sides``: each run adds to both
    sides (``aorta ab``'s pairs), which the projection of how many more runs would decide a figure uses."""
    out = AutoOutcome()
    t0 = clock()
    only: list[str] | None = None
    n = judged_at = 0
    while True:
        target = next_look(n, looks) if judge is not None else budget.max_runs
        out_of_room = False
        while target is not None and n < target:
            lean_next = n >= full_runs
            walls = [c.wall_s for c in out.children if c.lean == lean_next] or [
                c.wall_s for c in out.children
            ]
            if n >= 1 and not budget.room_for_another(clock() - t0, walls, n):
                out_of_room = True
                break
            child = start(n + 1, only, lean_next)
            (out.full if only is None else out.restricted).append(child)
            n += 1
            if not child.ok:
                out.stop_reason = f"{child.label} failed ({child.ended or f'exit {child.exit_code}'})"
                return out
        if judge is None:
            out.stop_reason = (
                f"the {budget.seconds:.0f} s budget" if out_of_room else f"the cap of {budget.max_runs} runs"
            )
            return out
        if out.comparison is not None and n == judged_at:  # no run since the last look: nothing new to judge
            out.stop_reason = f"the {budget.seconds:.0f} s budget ({len(only or ())} benchmark(s) undecided)"
            return out
        out.comparison, judged_at = judge(out.full, out.restricted), n
        left = min(budget.max_runs, looks[-1]) - n
        still = undecided(out.comparison, left, both_sides=both_sides)
        out.looks.append(
            f"look at {n} run(s), {clock() - t0:.0f} s: {out.comparison.judged} of "
            f"{len(out.comparison.verdicts)} figures decided, {len(still)} benchmark(s) undecided"
        )
        open_n = len(out.comparison.verdicts) - out.comparison.judged  # figures not judged (issue 46)
        if not still and (open_n == 0 or not out_of_room):
            out.stop_reason = (
                f"the last look ({n} runs)"
                if left <= 0
                else "every figure decided"
                if open_n == 0
                else f"no figure more runs could decide ({open_n} not judged)"
            )
            return out
        if out_of_room:
            what = f"{len(still)} benchmark(s)" if still else f"{open_n} figure(s)"
            out.stop_reason = f"the {budget.seconds:.0f} s budget ({what} undecided)"
            return out
        only = still


def run_ids(outcome: AutoOutcome) -> tuple[list[str], list[str]]:
    """The ids of the full runs (``run1``..) and of the restricted runs (numbered on from them)."""
    full = [f"run{k + 1}" for k in range(len(outcome.full))]
    rest = [f"run{len(full) + k + 1}" for k in range(len(outcome.restricted))]
    return full, rest


def time_line(outcome: AutoOutcome) -> str:
    """Where an auto gate's wall went: full runs, lean runs, and why it stopped."""
    lean_walls = [c.wall_s for c in outcome.children if c.lean]
    parts = [f"{len(outcome.children)} run(s) {sum(c.wall_s for c in outcome.children):.0f} s"]
    if lean_walls:
        parts.append(f"repeat runs {min(lean_walls):.0f}-{max(lean_walls):.0f} s each")
    return "aorta gate: auto: " + ", ".join(parts) + f"; stopped at {outcome.stop_reason}"
