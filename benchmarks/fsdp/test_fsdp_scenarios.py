"""FSDP2 compute-communication overlap, one benchmark per scenario (ids from aorta.fsdp.scenarios).

torchrun --nproc_per_node N -m pytest benchmarks/fsdp --benchmark-json=fsdp.json
"""

import pytest

from aorta.fsdp.scenarios import SCENARIOS, get_scenario

pytestmark = [pytest.mark.fsdp, pytest.mark.training]


@pytest.mark.parametrize("scenario", [s.id for s in SCENARIOS])
def test_fsdp_scenario(fsdp_bench, scenario):
    record = fsdp_bench(get_scenario(scenario))
    assert record.metrics["step_ms"].value > 0
