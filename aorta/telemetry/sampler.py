"""The background sampler: a daemon thread that reads a source every ``interval_s`` seconds.

It reads counters only (no GPU work, no synchronize), so the benchmark's device timeline is untouched.
A read that fails is counted and the thread goes on; after ``MAX_CONSECUTIVE_ERRORS`` failures in a
row it stops and says why. When a read takes longer than the interval (the command-line tools), the
next read starts right after it: the interval stretches, the sampler never queues up reads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from aorta.telemetry.sample import Sample

MAX_CONSECUTIVE_ERRORS = 5


class Sampler:
    def __init__(self, source, interval_s: float, clock: Callable[[], float] = time.perf_counter):
        if interval_s <= 0:
            raise ValueError(f"sampling interval must be > 0 s, got {interval_s}")
        self.source = source
        self.interval_s = interval_s
        self._clock = clock
        self._samples: list[Sample] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors = 0
        self.first_error: str | None = None
        self.gave_up: str | None = None

    def start(self) -> Sampler:
        if self._thread is not None:
            raise RuntimeError("sampler already started")
        self._thread = threading.Thread(target=self._loop, name="aorta-telemetry", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        consecutive = 0
        while True:
            t_next = self._clock() + self.interval_s
            try:
                sample = self.source.read(self._clock)
            except Exception as exc:  # a failed read must never take the benchmark down
                self.errors += 1
                consecutive += 1
                self.first_error = self.first_error or f"{type(exc).__name__}: {exc}"
                if consecutive >= MAX_CONSECUTIVE_ERRORS:
                    self.gave_up = f"stopped after {consecutive} failed reads in a row ({self.first_error})"
                    return
            else:
                consecutive = 0
                with self._lock:
                    self._samples.append(sample)
            if self._stop.wait(max(0.0, t_next - self._clock())):
                return

    def samples(self) -> list[Sample]:
        """A snapshot of the samples so far (the thread keeps running)."""
        with self._lock:
            return list(self._samples)

    def stop(self) -> list[Sample]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(5.0, 3 * self.interval_s))
        return self.samples()
