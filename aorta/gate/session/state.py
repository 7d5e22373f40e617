"""What one gate keeps between pytest's hooks (in ``config.stash``), and how it speaks to the terminal."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from aorta.gate.comparison.compare import Comparison
from aorta.gate.runs import fresh_runs
from aorta.gate.session import auto_runs
from aorta.gate.session.options import GateOptions
from aorta.record.run_set import RunSet, read_runs


@dataclass
class GateState:
    """What the gate gathers as it goes: the baseline, the fresh runs, the comparison, the lines it shows."""

    baseline: dict | None = None
    baseline_path: Path | None = None
    baseline_set: RunSet | None = None  # the baseline's runs, read once: ``baseline_runs``
    runs_dir: Path | None = None  # where the fresh-process runs write their JSON and logs
    children: list[fresh_runs.ChildRun] = field(default_factory=list)
    json_target: object = None  # --benchmark-json of a run in fresh processes (a path, or an open file)
    auto: auto_runs.AutoOutcome | None = None  # --aorta-runs auto: its runs, looks and why it stopped
    comparison: Comparison | None = None
    lines: list[str] = field(default_factory=list)
    started: float = field(
        default_factory=time.monotonic
    )  # the gate's start (its wall: aorta.gate.runs.run_wall)

    def baseline_runs(self) -> RunSet | None:
        """The baseline's runs (``aorta.record.run_set``), read once whatever asks; None without a baseline."""
        if self.baseline is None:
            return None
        if self.baseline_set is None or self.baseline_set.doc is not self.baseline:
            self.baseline_set = read_runs(self.baseline)
        return self.baseline_set


GATE_OPTIONS = pytest.StashKey[GateOptions]()
RUN_BLOCK = pytest.StashKey[dict]()
CODE_HASH = pytest.StashKey[str]()  # the code the collected tests run (aorta.gate.session.check_pass)
LEAN_MODE_FIXTURE = "hw_queue"  # aorta.plugin's fixture: its workloads skip their checks in a lean run
GATE_STATE = pytest.StashKey[GateState]()


def say_to(config: pytest.Config):
    tr = config.pluginmanager.get_plugin("terminalreporter")

    def say(line: str) -> None:
        if tr is not None:
            tr.write_line(line)

    return say


def baseline_label(baseline: dict, baseline_path: Path | None) -> str:
    name = (baseline.get("aorta_baseline") or {}).get("name")
    return f"{name} ({baseline_path})" if name else str(baseline_path)
