import pytest

from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.stream_dependency import StreamDependency

pytestmark = spec_marks(StreamDependency)


@pytest.mark.parametrize("mode", ["eager", "graph"])
@pytest.mark.parametrize("pattern", ["chain", "fan"])
def test_stream_dependency(hw_queue, streams, pattern, mode, extra_deps):
    # The reference: the same kernels without event dependencies. A chain's critical path is every kernel, so
    # its reference is the chain on one stream (stream order); a fan's is stream 0's root, fan and join, so its
    # reference keeps the streams (the fan kernels of the other streams off the critical path).
    ref_streams = 1 if pattern == "chain" else streams
    ref = hw_queue(
        StreamDependency, ref_streams, pattern=pattern, mode=mode, dependencies="none", record=False
    )
    hw_queue(StreamDependency, streams, pattern=pattern, mode=mode, extra_hops=extra_deps, reference=ref)
