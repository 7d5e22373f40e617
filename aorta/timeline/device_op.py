"""One op on the device's timeline, as the profiler recorded it (pure: no torch).

The one kernel type of aorta: the hardware-queue kernel timeline (aorta/timeline/kernel_timeline.py), the
kernel summary kept with every run (aorta/timeline/kernel_summary.py) and the FSDP trace analysis
(aorta/fsdp/trace_analysis.py, which fills in the collective's metadata) all read ``DeviceOp``.

Times are µs on the device timeline, absolute as the profiler gives them. The start and the duration are
kept as the profiler wrote them (``ts`` and ``dur``) and the end is their sum, so a duration read back is the
profiler's own and not an end minus a start rounded at the trace's large absolute timestamps.
"""

from __future__ import annotations

from dataclasses import dataclass

from aorta.timeline.trace_events import MEMORY, classify_kernel

# Chrome-trace categories of device work that is a copy or a memset (the rest of DEVICE_CATEGORIES: kernels)
_MEMORY_CATEGORIES = ("gpu_memcpy", "gpu_memset")


@dataclass(frozen=True, slots=True)  # slots: a trace of millions of ops holds no dict per op
class DeviceOp:
    name: str
    stream: int | str  # the runtime's stream id as the profiler gives it
    start_us: float  # start on the device timeline, µs (absolute as the profiler gives it)
    dur_us: float
    category: str = "kernel"  # the Chrome-trace category: kernel, gpu_memcpy or gpu_memset
    grid: tuple[int, ...] | None = None  # launch grid and block, where the profiler records them (args)
    block: tuple[int, ...] | None = None
    collective: str | None = None  # profiler arg "Collective name", where recorded
    message_bytes: int | None = None  # max(in, out) elements × dtype bytes, where recorded
    group_size: int | None = None
    process_group: str | None = None  # profiler arg "Process Group Name", where recorded
    launch_us: float | None = None  # host time of the runtime call that launched it (None: not in the trace)
    correlation: int | None = None  # the profiler's correlation id (op <-> launch), rising in launch order
    queue: int | None = None  # the hardware queue it ran on, where the profiler says (rocprofv3 Queue_Id)
    link: str | None = None  # how launch_us was found: "correlation", "flow" (aorta/timeline/launch_links.py)
    # the GPU it ran on (Kineto args.device, rocprofv3 Agent_Id / agent_id): one timeline per device
    device: int | str | None = None
    # the profiler's own integer ns where it writes them (rocprofv3): figures subtract these, exact at any clock
    start_ns: int | None = None
    dur_ns: int | None = None

    @property
    def end_us(self) -> float:
        return self.start_us + self.dur_us

    @property
    def kind(self) -> str:
        """``compute``, ``memory`` or one of ``COMM_KINDS`` (aorta/timeline/trace_events.py)."""
        if self.category in _MEMORY_CATEGORIES:
            return MEMORY
        return classify_kernel(self.name, self.collective)
