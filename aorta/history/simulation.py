"""A simulated run history from recorded runs, to measure the change-point detector (pure: numpy).

Each figure's recorded runs (fresh processes on machines of one model) give its between-run noise as it is:
the log run figures less their mean. A simulated history of ``n_runs`` runs draws each run's noise from those
residuals (with replacement), and multiplies the figure by ``1 + step`` at each injected change, where the
stack changed (a field named per change); the stack also changes at decoy places where nothing moves. A found
change counts as found where it lies within ``tolerance`` runs of an injected one, and as named where the
stack field it names is the one changed there; any other found change is false.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from aorta.history.changepoints import DEFAULT_ALPHA, detect, difference_noise

# (run index, the stack field that changed there, whether the figure moves there, its direction)
STACK_PLAN: tuple[tuple[int, str, bool, int], ...] = (
    (25, "versions.cublas", False, 0),
    (50, "versions.torch", True, +1),
    (75, "versions.python", False, 0),
    (100, "settings.CUDA_DEVICE_MAX_CONNECTIONS", True, +1),
    (125, "hardware.power_limit_w", False, 0),
    (150, "versions.driver", True, -1),
    (175, "versions.nccl", False, 0),
)
TOLERANCE = 2


@dataclass
class Tally:
    injected: int = 0
    found: int = 0
    named: int = 0
    false: int = 0
    runs: int = 0

    def add(self, other: Tally) -> None:
        for k in ("injected", "found", "named", "false", "runs"):
            setattr(self, k, getattr(self, k) + getattr(other, k))


def residuals(run_values: Sequence[float]) -> np.ndarray:
    logs = np.log(np.asarray(run_values, dtype=float))
    return logs - logs.mean()


STACK_AT = {at: field for at, field, _, _ in STACK_PLAN}


def history(res: np.ndarray, step: float, rng: np.random.Generator, n_runs: int = 200) -> np.ndarray:
    """One simulated history of one figure: noise drawn from ``res``, steps of ``step`` where STACK_PLAN says."""
    x = rng.choice(res, size=n_runs, replace=True)
    for at, _, moves, sign in STACK_PLAN:
        if moves and step:
            x[at:] += sign * math.log1p(step)
    return np.exp(x)


def judge(found: Sequence[int], step: float, n_runs: int = 200) -> Tally:
    """A detector's change points (run indices) on a history of ``step``: found, named, false."""
    truth = {at: field for at, field, moves, _ in STACK_PLAN if moves and step}
    t = Tally(injected=len(truth), runs=n_runs)
    hit: set[int] = set()
    for index in found:
        near = [at for at in truth if abs(index - at) <= TOLERANCE and at not in hit]
        if not near:
            t.false += 1
            continue
        hit.add(near[0])
        t.found += 1
        t.named += name_at(index, STACK_AT) == truth[near[0]]
    return t


def simulate(
    res: np.ndarray, step: float, rng: np.random.Generator, n_runs: int = 200, stack_aware: bool = True
) -> Tally:
    """One simulated history of one figure with steps of ``step`` (0: an A/A history), judged."""
    values = history(res, step, rng, n_runs)
    sigma = None if stack_aware else _blind_sigma(values)
    found = detect(values, list(STACK_AT) if stack_aware else [], sigma=sigma)
    return judge([c.index for c in found], step, n_runs)


def _blind_sigma(values: np.ndarray) -> float | None:
    """The noise a detector that knows no stack would use: robust, from successive differences."""
    return difference_noise(list(values))


def name_at(index: int, stack_at: dict[int, str], snap: int = TOLERANCE) -> str:
    """The stack field changed at ``index``, else at the nearest stack change within ``snap`` runs; "" none."""
    near = sorted((abs(at - index), at) for at in stack_at if abs(at - index) <= snap)
    return stack_at[near[0][1]] if near else ""


NOISE_BANDS: tuple[tuple[float, float], ...] = (
    (0.0, 0.005),
    (0.005, 0.01),
    (0.01, 0.02),
    (0.02, 0.05),
    (0.05, math.inf),
)
STEPS = (0.0, 0.02, 0.05, 0.2)


def band_of(sigma: float) -> tuple[float, float]:
    return next(b for b in NOISE_BANDS if b[0] <= sigma < b[1])


def band_text(band: tuple[float, float]) -> str:
    lo, hi = band
    return f">= {lo * 100:g}%" if math.isinf(hi) else f"{lo * 100:g}-{hi * 100:g}%"


def histories(
    figure_runs: dict[str, Sequence[float]], *, seed: int, repeats: int
) -> list[tuple[float, tuple[float, float], np.ndarray]]:
    """(step, noise band, values) of ``repeats`` simulated histories of each figure (its recorded run figures
    in ``figure_runs``) for each step; the same seed gives the same histories."""
    rng = np.random.default_rng(seed)
    out = []
    for step in STEPS:
        for _name, values in sorted(figure_runs.items()):
            res = residuals(values)
            band = band_of(float(res.std(ddof=1)))
            out += [(step, band, history(res, step, rng)) for _ in range(repeats)]
    return out


def tally(
    judged: Sequence[tuple[float, tuple[float, float], Sequence[int]]],
) -> dict[tuple[float, tuple[float, float] | None], Tally]:
    """Per (step, noise band) and per (step, None: every figure): the tally of the change points found."""
    out: dict[tuple[float, tuple[float, float] | None], Tally] = {}
    for step, band, found in judged:
        t = judge(found, step)
        for key in ((step, band), (step, None)):
            out.setdefault(key, Tally()).add(t)
    return out


def run_simulation(
    figure_runs: dict[str, Sequence[float]],
    *,
    seed: int,
    repeats: int,
    stack_aware: bool,
    alpha: float = DEFAULT_ALPHA,
) -> dict[tuple[float, tuple[float, float] | None], Tally]:
    """The detector on every simulated history (``histories``), with the stack changes or without them."""
    judged = []
    for step, band, values in histories(figure_runs, seed=seed, repeats=repeats):
        sigma = None if stack_aware else _blind_sigma(values)
        found = detect(values, list(STACK_AT) if stack_aware else [], sigma=sigma, alpha=alpha)
        judged.append((step, band, [c.index for c in found]))
    return tally(judged)


def table_lines(
    aware: dict,
    blind: dict,
    counts: dict[tuple[float, float] | None, int],
    other: dict | None = None,
    other_name: str = "",
) -> list[str]:
    """The markdown table: per step and noise band, found / named / false change points, with the stack and
    without it (and by another detector, ``other``, where given)."""
    extra = f" found, {other_name} | false per 100 runs, {other_name} |" if other is not None else ""
    lines = [
        "| step | figures' between-run noise | figures | changes injected | found | named right (of found) "
        "| false per 100 runs | found, stack-blind | false per 100 runs, stack-blind |" + extra,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        + (" --- | --- |" if other is not None else ""),
    ]

    def pct(a: int, b: int) -> str:
        return f"{100 * a / b:.1f}%" if b else "-"

    for step in STEPS:
        for band in (*NOISE_BANDS, None):
            t, b = aware.get((step, band)), blind.get((step, band))
            if t is None or b is None:
                continue
            label = "all" if band is None else band_text(band)
            lines.append(
                f"| {'none (A/A)' if step == 0 else f'{step * 100:g}%'} | {label} | {counts.get(band, 0)} | "
                f"{t.injected} | {pct(t.found, t.injected)} | {pct(t.named, t.found)} | "
                f"{100 * t.false / t.runs:.2f} | {pct(b.found, b.injected)} | {100 * b.false / b.runs:.2f} |"
                + (_other_cells(other.get((step, band))) if other is not None else "")
            )
    return lines


def _other_cells(t: Tally | None) -> str:
    if t is None:
        return " - | - |"
    found = f"{100 * t.found / t.injected:.1f}%" if t.injected else "-"
    return f" {found} | {100 * t.false / t.runs:.2f} |"
