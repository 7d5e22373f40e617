import pytest

from aorta.hw_queue.workloads.hetero import HeteroKernels

pytestmark = [pytest.mark.p0, pytest.mark.latency]


def test_hetero_kernels(hw_queue, streams, issue_order):
    # Tiny kernels alone first (GEMM streams idle), then beside the GEMMs: the recorded run, read against them.
    alone = hw_queue(HeteroKernels, streams, with_gemms=False, issue_order=issue_order, record=False)
    hw_queue(HeteroKernels, streams, with_gemms=True, issue_order=issue_order, reference=alone)
