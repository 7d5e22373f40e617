"""Hand the timing loop's device times to pytest-benchmark (the supported route: a custom timer).

pytest-benchmark times ``timer()`` before and after each call of the target. ``ReplayClock`` returns
0 at the start of a round and the round's recorded device time at its end, so with
``benchmark.pedantic(clock.tick, rounds=len(samples), iterations=1)`` its ``stats`` hold exactly the
device times the one timing loop measured, and ``--benchmark-compare`` works on them unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence


class ReplayClock:
    """A scripted clock: alternates 0.0 (round start) and the next recorded duration (round end)."""

    def __init__(self) -> None:
        self._samples_s: list[float] = []
        self._calls = 0

    def load(self, samples_s: Sequence[float]) -> None:
        if any(s < 0 for s in samples_s):
            raise ValueError("device times cannot be negative")
        self._samples_s = list(samples_s)
        self._calls = 0

    def __call__(self) -> float:
        i, is_end = divmod(self._calls, 2)
        self._calls += 1
        if not is_end:
            return 0.0
        if i >= len(self._samples_s):
            raise RuntimeError("ReplayClock read past its recorded rounds")
        return self._samples_s[i]

    @staticmethod
    def tick() -> None:
        """The benchmarked target: the work already ran in the timing loop."""

    def __repr__(self) -> str:
        # Shown in pytest-benchmark's JSON options ("timer") of every saved run. The label keeps the name this
        # module had before it moved here (aorta/bridge.py), so runs saved before and after the move read alike.
        return "aorta.bridge.ReplayClock(device time from the timing loop)"


def replay_into(benchmark, clock: ReplayClock, per_iteration_ms: Sequence[float]) -> None:
    """Feed per-round device times (ms) to pytest-benchmark; its stats are in seconds."""
    clock.load([ms / 1e3 for ms in per_iteration_ms])
    benchmark.pedantic(clock.tick, rounds=len(per_iteration_ms), iterations=1, warmup_rounds=0)
