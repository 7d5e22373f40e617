import pytest

from aorta.hw_queue.workloads.speculative_decode import SpeculativeDecode

pytestmark = [pytest.mark.p1, pytest.mark.inference]


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_speculative_decode(hw_queue, streams, dtype):
    hw_queue(SpeculativeDecode, streams, dtype=dtype)
