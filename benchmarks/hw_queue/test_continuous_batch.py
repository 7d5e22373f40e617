import pytest

from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.continuous_batch import ContinuousBatch

pytestmark = spec_marks(ContinuousBatch)


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_continuous_batch(hw_queue, streams, dtype):
    hw_queue(ContinuousBatch, streams, dtype=dtype)
