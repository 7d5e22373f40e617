"""Kernels read from ``prof.events()`` (the ROCm default: no Chrome trace) carry their launch's host time, so
they go to the step that launched them as kernels read from a trace do."""

from dataclasses import dataclass, field

from torch.autograd import DeviceType

from aorta.fsdp.profiled_steps import split_by_step
from aorta.fsdp.profiling import kernels_from_events


@dataclass
class Range:
    start: float
    end: float

    def elapsed_us(self) -> float:
        return self.end - self.start


@dataclass
class Event:  # the fields of torch.autograd.profiler_util.FunctionEvent that the reader uses
    name: str
    id: int
    device_type: DeviceType
    activity_type: str
    time_range: Range
    device_resource_id: int = 0
    event_metadata: dict = field(default_factory=dict)


class Prof:
    def __init__(self, events):
        self._events = events

    def events(self):
        return self._events


def test_kernels_from_events_take_their_launch_from_the_runtime_call_with_their_id():
    cpu, gpu = DeviceType.CPU, DeviceType.CUDA
    prof = Prof(
        [
            Event("aten::mm", 9, cpu, "cpu_op", Range(5, 60)),  # an op's id is no correlation id
            Event("hipLaunchKernel", 7, cpu, "cuda_runtime", Range(10, 12)),
            Event("Cijk_gemm", 7, gpu, "kernel", Range(150, 180), 1),  # runs in the next step's range
            Event(
                "before", 5, gpu, "kernel", Range(120, 130), 1
            ),  # id below the first launch's: launched before
            Event("unrecorded", 9, gpu, "kernel", Range(190, 195), 1),  # launch not recorded: by device start
            Event("Memset (Device)", 10, gpu, "gpu_memset", Range(196, 197), 1),
        ]
    )
    kernels = kernels_from_events(prof)
    assert [(k.name, k.launch_us) for k in kernels] == [
        ("before", None),
        ("Cijk_gemm", 10.0),
        ("unrecorded", None),
    ]
    split = split_by_step(kernels, [(0.0, 100.0), (100.0, 200.0)])
    assert [[k.name for k in ks] for ks in split.by_step] == [["Cijk_gemm"], ["unrecorded"]]
    assert (split.by, split.before_window, split.outside, split.by_device_start) == ("launch", 1, 0, 1)
    assert split.note() == (
        "left out of the per-step figures: 1 of 3 kernels launched before the profiled window (no launch in "
        "the trace); 1 of 3 kernels have no recorded launch: placed by their device start; step 1: 1 ops with "
        "no launch in the trace, placed by device start (a kernel goes to the step holding its launch)"
    )
