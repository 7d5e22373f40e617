import pytest

from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.speculative_decode import SpeculativeDecode

pytestmark = spec_marks(SpeculativeDecode)


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_speculative_decode(hw_queue, streams, dtype):
    hw_queue(SpeculativeDecode, streams, dtype=dtype)
