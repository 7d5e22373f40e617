import pytest

from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.grad_accum import GradAccum

pytestmark = spec_marks(GradAccum)


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_grad_accum(hw_queue, streams, dtype):
    hw_queue(GradAccum, streams, dtype=dtype)
