from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.copy_compute_overlap import CopyComputeOverlap

pytestmark = spec_marks(CopyComputeOverlap)


def test_copy_compute_overlap(hw_queue, streams, copy_mb):
    # The time without overlap: the same work on one stream, GEMMs then copies, through the same runner.
    serial = hw_queue(
        CopyComputeOverlap, 1, mode="serial", work_streams=streams, copy_mb=copy_mb, record=False
    )
    hw_queue(CopyComputeOverlap, streams, copy_mb=copy_mb, reference=serial)
