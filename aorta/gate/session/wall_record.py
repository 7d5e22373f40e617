"""A run's record of where its own wall went (``aorta.gate.runs.run_wall.WALL_KEY`` in its JSON): its tests'
seconds, its timed rounds' (each benchmark's ``timed_s`` and the unrecorded reference run it read,
``reference_timed_s``) and what a lean run of it would skip (each benchmark's ``lean_skips_s``, and every test
that is not a benchmark: a lean run deselects the checks)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import pytest

from aorta.gate.runs import blocks
from aorta.record import host_phases
from aorta.record.bench import MEASURED_AS_REFERENCE


class WallRecorder:
    """Registered as a plugin by the gate at configure: counts collection's and each test phase's seconds."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.tests_s = 0.0
        self.checks_s = 0.0  # tests that are not benchmarks (a lean run deselects them)
        self.collect_s = 0.0
        self.bench: set[str] = set()

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(self, session: pytest.Session):
        t0 = time.perf_counter()
        try:
            return (yield)
        finally:
            self.collect_s = time.perf_counter() - t0
            self.bench = {i.nodeid for i in session.items if blocks.is_benchmark_item(i)}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        d = float(getattr(report, "duration", 0.0) or 0.0)
        self.tests_s += d
        if report.nodeid not in self.bench:
            self.checks_s += d

    def record(self, benchmarks: Sequence[Mapping]) -> dict:
        """The run's wall record, from its benchmarks' entries (``extra_info``) and its tests' seconds."""
        timed = skips = 0.0
        for b in benchmarks:
            info = b.get("extra_info") or {}
            if "timed_s" in info:  # the hardware-queue runner's timed rounds, warm-up apart
                # A run recorded here but made as an earlier benchmark's reference was counted with that one.
                own = 0.0 if info.get(MEASURED_AS_REFERENCE) else _num(info.get("timed_s"))
                timed += own + _num(info.get("reference_timed_s"))
            else:  # another runner's (the FSDP suite's) timed phases (aorta/record/host_phases.py)
                phases = info.get("host_phase_s") or {}
                timed += sum(
                    _num(v) for k, v in phases.items() if host_phases.phase_kind(k) == host_phases.TIMED
                )
            skips += _num(info.get("lean_skips_s"))
        return {
            "tests_s": round(self.tests_s, 3),
            "timed_s": round(timed, 3),
            "collect_s": round(self.collect_s, 3),
            "lean_skips_s": round(skips + self.checks_s, 3),
        }


def _num(v) -> float:
    return float(v) if isinstance(v, (int, float)) and v == v else 0.0


def record(config: pytest.Config, benchmarks: Sequence[Mapping]) -> dict | None:
    """The wall record of this run (None where the gate's recorder is not registered)."""
    rec = config.pluginmanager.get_plugin("aorta-wall-record")
    return rec.record(benchmarks) if isinstance(rec, WallRecorder) else None
