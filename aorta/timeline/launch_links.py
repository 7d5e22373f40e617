"""Device work linked to the host call that launched it (pure: no torch).

Two links, tried in this order, and the one used is kept with each op (``DeviceOp.link``):

- ``correlation``: the device event's ``args.correlation`` equals a runtime / driver call's (``cat``
  ``cuda_runtime`` / ``cuda_driver``, on NVIDIA and AMD alike); where two calls share an id (rocprofiler-sdk
  records an internal call beside ``hipMemsetAsync``), the first.
- ``flow``: Kineto's launch-to-kernel flow events (``cat`` ``ac2g``, the arrows a trace viewer draws): an
  ``"s"`` event at the launch call (same ``pid``, ``tid`` and ``ts``) and an ``"f"`` event at the device work,
  sharing an ``id`` (for a ROCm memset, an ``"f"`` at each end). Older Kineto and some ROCm builds write device events without a correlation id but keep
  these; Kineto takes the flow id from the correlation id, so it orders launches as the correlation id does.

Device work linked by neither has no launch in the trace (``launch_us`` None): launched before the profiled
window, or a trace without host events.

A launch call that names one kernel (``cudaLaunchKernel``, ``hipLaunchKernel``, ``hipExtModuleLaunchKernel``,
``cuLaunchKernel`` ...; a graph launch starts many and is not one) and that no device event answers is
*missing GPU work*: the profiler lost the kernel's record (a trace cut short on the GPU side).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from aorta.timeline.trace_check import FLOW_CATEGORY

CORRELATION, FLOW = "correlation", "flow"
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
# host calls that launch exactly one kernel (NVIDIA and AMD): hipLaunchKernel, hipExtModuleLaunchKernel,
# hipExtLaunchKernel, hipModuleLaunchKernel, cudaLaunchKernel(ExC), cudaLaunchCooperativeKernel, cuLaunchKernel(Ex)
ONE_KERNEL_LAUNCH = re.compile(r"Launch(Cooperative)?Kernel", re.IGNORECASE)

Position = tuple  # (pid, tid, ts) of an event: where a flow event sits


@dataclass(frozen=True)
class Launch:
    ts_us: float
    thread: tuple  # (pid, tid) of the host thread that made the call
    name: str


@dataclass
class LaunchLinks:
    """A trace's launches by correlation id and by flow id, and its one-kernel launch calls."""

    by_correlation: dict[int, Launch] = field(default_factory=dict)
    by_flow: dict[object, Launch] = field(default_factory=dict)  # flow id -> the call at its "s" event
    flow_at: dict[Position, object] = field(default_factory=dict)  # a flow end's position -> its flow id
    one_kernel_calls: list[tuple[Launch, object]] = field(default_factory=list)  # (call, its id or None)

    def link(self, ev: Mapping) -> tuple[object, Launch | None, str | None]:
        """(the op's correlation or flow id, its launch, which link) for one device event."""
        corr = (ev.get("args") or {}).get("correlation")
        if isinstance(corr, (int, float)) and not isinstance(corr, bool):
            launch = self.by_correlation.get(int(corr))
            if launch is not None:
                return int(corr), launch, CORRELATION
        flow = self.flow_at.get((ev.get("pid"), ev.get("tid"), ev.get("ts")))
        if flow is not None and flow in self.by_flow:
            return flow, self.by_flow[flow], FLOW
        if isinstance(corr, (int, float)) and not isinstance(corr, bool):
            return int(corr), None, None
        return flow, None, None


def _int_id(value: object) -> object:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def launch_links(events: Iterable[Mapping]) -> LaunchLinks:
    """Every launch of a trace's events, by correlation id and by flow id. A flow's launch is the runtime call
    at either of its ends: Kineto puts the ``"s"`` at a kernel's launch, but for a memset (``hipMemsetAsync``
    on ROCm) it writes two ``"f"`` ends, one at the call and one at the memset."""
    out = LaunchLinks()
    calls: list[Mapping] = []
    for ev in events:
        cat = str(ev.get("cat", "")).lower()
        if cat == FLOW_CATEGORY and ev.get("ph") in ("s", "f"):
            out.flow_at.setdefault((ev.get("pid"), ev.get("tid"), ev.get("ts")), _int_id(ev.get("id")))
        elif cat in LAUNCH_CATEGORIES and ev.get("ph") == "X":
            calls.append(ev)
    for ev in calls:
        call = Launch(float(ev["ts"]), (ev.get("pid"), ev.get("tid")), str(ev.get("name", "")))
        corr = (ev.get("args") or {}).get("correlation")
        key: object = None
        if isinstance(corr, (int, float)) and not isinstance(corr, bool):
            key = int(corr)
            if key not in out.by_correlation or call.ts_us < out.by_correlation[key].ts_us:
                out.by_correlation[key] = call
        flow = out.flow_at.get((ev.get("pid"), ev.get("tid"), ev.get("ts")))
        if flow is not None:
            out.by_flow.setdefault(flow, call)
            key = key if key is not None else flow
        if ONE_KERNEL_LAUNCH.search(call.name):
            out.one_kernel_calls.append((call, key))
    return out


def unanswered(links: LaunchLinks, answered: set) -> list[Launch]:
    """The one-kernel launch calls whose id no device op carries (missing GPU work). Calls with no id at
    all (neither a correlation id nor a flow) cannot be checked and are not counted."""
    return [call for call, key in links.one_kernel_calls if key is not None and key not in answered]
