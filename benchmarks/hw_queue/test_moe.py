import pytest

from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.moe import Moe

pytestmark = spec_marks(Moe)


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_moe(hw_queue, streams, dtype):
    hw_queue(Moe, streams, dtype=dtype)
