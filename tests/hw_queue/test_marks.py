"""The markers come from the spec list: each benchmark module's from its workload's spec, and every name the
plugin registers from PRIORITIES and CATEGORIES."""

from __future__ import annotations

import pytest

from aorta.hw_queue.marks import MARKERS, spec_marks
from aorta.hw_queue.specs import CATEGORIES, PRIORITIES
from aorta.hw_queue.workloads import REGISTRY


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_a_workloads_marks_are_its_specs_priority_and_category(name):
    cls = REGISTRY[name]
    assert [m.name for m in spec_marks(cls)] == [cls.spec.priority, cls.spec.category]


def test_every_priority_and_category_is_a_registered_marker():
    assert set(PRIORITIES) | set(CATEGORIES) <= set(MARKERS)
    # and the gate's run-kind markers (aorta/gate/session/selection.py)
    assert set(MARKERS) - set(PRIORITIES) - set(CATEGORIES) == {"gpu", "fsdp", "check_run_only", "lean_mode"}


def test_the_plugin_registers_every_marker(pytestconfig):
    registered = {line.split(":")[0].split("(")[0] for line in pytestconfig.getini("markers")}
    assert set(MARKERS) <= registered
