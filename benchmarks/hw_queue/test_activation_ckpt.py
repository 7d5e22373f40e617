import pytest

from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.activation_ckpt import ActivationCkpt

pytestmark = spec_marks(ActivationCkpt)


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_activation_ckpt(hw_queue, streams, dtype):
    hw_queue(ActivationCkpt, streams, dtype=dtype)
