from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.hetero_kernels import HeteroKernels

pytestmark = spec_marks(HeteroKernels)


def test_hetero_kernels(hw_queue, streams, issue_order):
    # Tiny kernels alone first (GEMM streams idle), then beside the GEMMs: the recorded run, read against them.
    alone = hw_queue(HeteroKernels, streams, with_gemms=False, issue_order=issue_order, record=False)
    hw_queue(HeteroKernels, streams, with_gemms=True, issue_order=issue_order, reference=alone)
