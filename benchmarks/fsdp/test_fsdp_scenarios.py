"""FSDP2 compute-communication overlap, one benchmark per scenario (ids from aorta.fsdp.scenarios).

torchrun --nproc_per_node N -m pytest benchmarks/fsdp --benchmark-json=fsdp.json
"""

import pytest

from aorta.fsdp.scenarios import SCENARIOS

pytestmark = [pytest.mark.fsdp, pytest.mark.training]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_fsdp_scenario(fsdp_bench, scenario):
    extra = fsdp_bench(scenario)
    assert extra["metrics"]["step_ms"]["value"] > 0
