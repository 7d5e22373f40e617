import pytest

from aorta.workloads.fsdp_tp import FsdpTp

pytestmark = [pytest.mark.p1, pytest.mark.training]


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_fsdp_tp(hw_queue, streams, dtype):
    hw_queue(FsdpTp, streams, dtype=dtype)
