"""A gate's options for the session tests, every field at a plain value; a test names what it changes."""

from __future__ import annotations

from pathlib import Path

from aorta.gate.comparison.compare import GateSettings
from aorta.gate.session.options import DEFAULT_BUDGET_S, GateOptions


def gate_options(tmp_path: Path, **kw) -> GateOptions:
    base = dict(
        save_name=None,
        replace_baseline=False,
        compare_ref="main",
        baseline_dir=tmp_path / "baselines",
        runs_root=tmp_path / "runs",
        settings=GateSettings(),
        confirm=0,
        runs=1,
        verdict_json=tmp_path / "verdict.json",
        markdown=None,
        test_slowdown=0.0,
        budget_s=DEFAULT_BUDGET_S,
    )
    return GateOptions(**{**base, **kw})
