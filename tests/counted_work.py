"""Counted work in place of the host's time, for tests of timing decisions (issue 56, class 7).

A gate test's benchmark is a host busy loop (``Device.spin`` on the CPU backend) timed by the host clock: on a
loaded machine a 1 ms round reads 1 to 5 ms, the deliberate slowdown's calibration reads its padding as
nothing ("padded +0.0%"), and a 4x slowdown passed as exit 0 in 7 of 19 runs at load 2-5 on 2 cores. Under
``CONFTEST`` (the ``conftest.py`` the ``counted_work`` fixture writes into a pytester folder, so the gate's fresh
runs load it too) the CPU backend's events read a clock that only ``spin`` moves, by the nanoseconds asked
plus 0-1% of noise: a round takes what its work counts, whatever the load. The noise is drawn afresh in each
process (a fixed seed would make two runs' samples equal, and the gate counts equal runs once); no decision
the tests assert is near 1%.
The GPU backend is left as it is.
"""

CONFTEST = '''
import random

from aorta import device as dev

_REAL = {}


class CountedClock:
    """Seconds of counted work: ``spin(ns)`` adds ns (and 0-1% of noise); nothing else moves it."""

    def __init__(self) -> None:
        self.ns = 0
        self.rng = random.Random()

    def now(self) -> float:
        return self.ns / 1e9

    def spin(self, ns: int) -> None:
        self.ns += int(ns * (1.0 + 0.01 * self.rng.random()))


def pytest_configure(config):
    clock = CountedClock()
    _REAL.update(spin=dev.Device.spin, event=dev.CpuEvent.__init__)

    def spin(self, cycles):
        if self.is_gpu:
            return _REAL["spin"](self, cycles)
        if self.launch_log is not None:
            self.launch_log.note("spin")
        clock.spin(int(cycles))

    def event(self, clock_fn=None):
        _REAL["event"](self, clock.now)

    dev.Device.spin = spin
    dev.CpuEvent.__init__ = event


def pytest_unconfigure(config):
    if _REAL:
        dev.Device.spin = _REAL["spin"]
        dev.CpuEvent.__init__ = _REAL["event"]
'''
