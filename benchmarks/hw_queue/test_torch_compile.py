from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.torch_compile import TorchCompile

pytestmark = spec_marks(TorchCompile)


def test_torch_compile(hw_queue, streams):
    hw_queue(TorchCompile, streams)
