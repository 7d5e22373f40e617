"""``--aorta-runs auto``: fresh-process runs added until every figure is decided or the budget ends.

The loop (``run_auto``) knows nothing of pytest: it is given a way to start one run (``start``) and, when
comparing, a way to judge the runs so far (``judge``). At each look of ``aorta.gate.stats.sequential.LOOKS`` the
runs are judged with each test at ``alpha / len(LOOKS)``; the benchmarks with a figure still undecided
(``undecided``) get the next runs, restricted to them where the runs are not paired with a baseline's; the
rest stop. The first run is the check run (output checks, kernel and labelled passes, the suite's checks);
later runs are lean (benchmarks only) and are the samples, all measured the same way (issue 45): the check
run is a sample only where a lean run would have run just the same. Saving a baseline has no verdicts to wait
for: its runs continue until the budget or the run cap.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from aorta.gate.comparison.compare import Comparison
from aorta.gate.runs.fresh_runs import ChildRun
from aorta.gate.session import check_pass
from aorta.gate.stats.sequential import LOOKS, Budget, next_look, runs_to_gateable
from aorta.gate.verdicts.verdict import NOT_GATEABLE, UNSURE

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


# A lean run's wall before any was measured, as a share of the check run's: p0 runs measured 0.33-0.45
# (H100 28-31 s lean against 72-87 s full; H200 19-25 s against 55-65 s). Only the first lean run is so
# predicted; every later one from the lean runs of its selection.
FIRST_LEAN_SHARE = 0.5


@dataclass
class AutoOutcome:
    full: list[ChildRun] = field(default_factory=list)  # sample runs of every benchmark
    restricted: list[ChildRun] = field(default_factory=list)  # sample runs of the undecided benchmarks
    check: ChildRun | None = None  # the first run: full (output checks, kernel and labelled passes)
    check_skipped: str = ""  # why no check run ran: one that passed before vouches (session.check_pass)
    comparison: Comparison | None = None
    stop_reason: str = ""
    looks: list[str] = field(default_factory=list)  # one line per look
    selections: dict[str, tuple[str, ...] | None] = field(default_factory=dict)  # label -> what it ran
    prior_estimate_s: float = 0.0  # a skipped check run's record: the lean run it planned

    @property
    def samples(self) -> list[ChildRun]:
        return [*self.full, *self.restricted]

    @property
    def children(self) -> list[ChildRun]:
        extra = [self.check] if self.check is not None and self.check not in self.full else []
        return [*extra, *self.samples]

    @property
    def failed(self) -> ChildRun | None:
        return next((c for c in self.children if not c.ok), None)

    def predicted_wall(self, only: Sequence[str] | None) -> float:
        """The wall the next lean run of ``only`` is planned at: the slowest lean run of that selection so
        far, else of any larger one, else the check run's wall less the work it recorded that a lean run skips
        (``ChildRun.lean_estimate_s``), else a share of the check run's (``FIRST_LEAN_SHARE``: a check run that
        recorded nothing of its wall)."""
        lean = [c for c in self.samples if c.lean]
        same = [c.wall_s for c in lean if self.selections.get(c.label) == (tuple(only) if only else None)]
        if same:
            return max(same)
        if lean:
            return max(c.wall_s for c in lean)
        if self.check is None:
            return self.prior_estimate_s
        if self.check.lean_estimate_s is not None:  # the check run less what a lean run skips (run_wall)
            return self.check.lean_estimate_s
        return self.check.wall_s * FIRST_LEAN_SHARE


def run_auto(
    start: StartRun,
    budget: Budget,
    *,
    judge: Judge | None = None,
    looks: Sequence[int] = LOOKS,
    clock: Callable[[], float] = time.monotonic,
    both_sides: bool = False,
    restrict: bool = True,
    max_samples: int | None = None,
    say: Callable[[str], None] | None = None,
    prior: check_pass.Passed | None = None,
    vouches: Callable[[ChildRun], str | None] | None = None,
) -> AutoOutcome:
    """Runs until decided (``judge`` given) or until the budget or cap (saving). Run 0 is the check run
    (full); it is a sample only where it measured as a lean run does (``ChildRun.sample``). Later runs are
    lean, of the undecided benchmarks where ``restrict`` (a compare whose runs are paired with a baseline's
    runs of every benchmark takes every benchmark: a restricted run would have no partner). ``max_samples``:
    at most this many sample runs (the baseline's blocks). Never judges a partial candidate: a failed run
    ends the loop (``AutoOutcome.failed``). ``both_sides``: each run adds to both sides (``aorta ab``'s
    pairs), which the projection of how many more runs would decide a figure uses.
    ``prior``: a check run that passed with this command (``aorta.gate.session.check_pass``): the first run is
    then run 1, lean, and ``vouches(run)`` says why the record does not vouch for it (None where it does), in which
    case the check run runs next."""
    out = AutoOutcome()
    t0 = clock()
    if prior is None:
        if _check_run(start, out) is None:
            return out
    else:
        out.check_skipped = check_pass.skipped_line(prior)
        out.prior_estimate_s = prior.lean_estimate_s or prior.check_s * FIRST_LEAN_SHARE
        if say is not None:
            say(out.check_skipped)
    cap = min(
        budget.max_runs, looks[-1] if judge is not None else budget.max_runs, max_samples or budget.max_runs
    )
    if say is not None and out.check is not None:
        left = budget.seconds - (clock() - t0)
        guess = out.predicted_wall(None)
        fits = int(left // guess) if guess > 0 and math.isfinite(left) else cap
        say(
            f"check run {out.check.wall_s:.0f} s ({'a sample' if out.check.sample else 'not a sample'}); "
            f"repeat runs planned at {guess:.0f} s each"
            + (
                " (the check run less the checks and passes a repeat run skips)"
                if out.check.lean_estimate_s
                else ""
            )
            + " until one is measured: the budget holds about "
            f"{min(fits, cap)} more"
            + (" (fewer than 3: the first look comes at the budget's end)" if fits < 3 and judge else "")
        )
    only: list[str] | None = None
    k, judged_at = 1, -1
    while True:
        n = len(out.samples)
        target = next_look(n, looks) if judge is not None else cap
        target = None if target is None else min(target, cap)
        out_of_room = False
        while target is not None and n < target:
            if not budget.room_for_another(clock() - t0, [out.predicted_wall(only)], n):
                out_of_room = True
                break
            child = start(k, only if restrict else None, True)
            k += 1
            out.selections[child.label] = tuple(only) if (only and restrict) else None
            (out.full if not (only and restrict) else out.restricted).append(child)
            n += 1
            if not child.ok:
                out.stop_reason = f"{child.label} failed ({child.ended or f'exit {child.exit_code}'})"
                return out
            if prior is not None and out.check is None and out.check_skipped:
                why = vouches(child) if vouches is not None else "nothing compares the run with the record"
                if why is not None:  # the record does not vouch for this run: check it now
                    out.check_skipped = ""
                    if say is not None:
                        say(f"check run after all: {why}")
                    checked = _check_run(start, out)
                    if checked is None:
                        return out
                    if checked.sample:
                        n += 1
        if judge is None:
            out.stop_reason = (
                f"the {budget.seconds:.0f} s budget" if out_of_room else f"the cap of {cap} runs"
            )
            return out
        if out.comparison is not None and n == judged_at:  # no run since the last look: nothing new to judge
            out.stop_reason = f"the {budget.seconds:.0f} s budget ({len(only or ())} benchmark(s) undecided)"
            return out
        if n == 0:
            out.stop_reason = f"the {budget.seconds:.0f} s budget (no repeat run fits)"
            return out
        out.comparison, judged_at = judge(out.full, out.restricted), n
        left = cap - n
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


def _check_run(start: StartRun, out: AutoOutcome) -> ChildRun | None:
    """Run 0, the check run; None (and ``out.stop_reason``) where it failed."""
    check = out.check = start(0, None, False)
    out.selections[check.label] = None
    if not check.ok:
        out.stop_reason = f"{check.label} failed ({check.ended or f'exit {check.exit_code}'})"
        return None
    if check.sample:
        out.full.append(check)
    return check


def run_ids(outcome: AutoOutcome) -> tuple[list[str], list[str]]:
    """The ids of the sample runs of every benchmark (``run1``..) and of the restricted ones (numbered on)."""
    full = [f"run{k + 1}" for k in range(len(outcome.full))]
    rest = [f"run{len(full) + k + 1}" for k in range(len(outcome.restricted))]
    return full, rest


def time_line(outcome: AutoOutcome, what: str = "auto") -> str:
    """Where an auto gate's wall went: full runs, lean runs, and why it stopped."""
    lean_walls = [c.wall_s for c in outcome.children if c.lean]
    parts = [f"{len(outcome.children)} run(s) {sum(c.wall_s for c in outcome.children):.0f} s"]
    if outcome.check is not None:
        parts.append(
            f"check run {outcome.check.wall_s:.0f} s{'' if outcome.check.sample else ' (not a sample)'}"
        )
    if lean_walls:
        parts.append(f"repeat runs {min(lean_walls):.0f}-{max(lean_walls):.0f} s each")
    return f"aorta gate: {what}: " + ", ".join(parts) + f"; stopped at {outcome.stop_reason}"
