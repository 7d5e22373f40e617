"""The suite's pytest markers, derived from the spec list: a workload's own (its priority and category,
``spec_marks``) and every name the plugin registers with its help (``MARKERS``). A new workload writes no
marker by hand; a new category or priority is one entry in ``aorta/hw_queue/specs.py``."""

from __future__ import annotations

import pytest

from aorta.hw_queue.specs import CATEGORIES, PRIORITIES

# What a gate's lean repeat run (--aorta-lean-run) does with a test (aorta/gate/session/selection.py): leaves it out
# (a check), or runs it measuring less than a full run does (then a full run of it is not a sample).
CHECK_RUN_ONLY = "check_run_only"
LEAN_MODE = "lean_mode"

MARKERS = {
    "gpu": "needs a CUDA or ROCm GPU (skipped on CPU-only machines)",
    **{p: f"priority {p[1]} workload" for p in PRIORITIES},
    **{c: f"{c} workload category" for c in CATEGORIES},
    "fsdp": "FSDP2 overlap scenario",
    CHECK_RUN_ONLY: "a check (a known answer), not a sample: a gate's lean repeat runs leave it out",
    LEAN_MODE: "measures less in a gate's lean repeat run than in a full run (whose figures are then no sample)",
}


def spec_marks(workload: type) -> list[pytest.MarkDecorator]:
    """A benchmark module's ``pytestmark``: its workload's priority and category, read from the spec."""
    spec = workload.spec  # type: ignore[attr-defined]
    return [getattr(pytest.mark, spec.priority), getattr(pytest.mark, spec.category)]
