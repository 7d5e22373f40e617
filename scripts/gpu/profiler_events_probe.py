"""What the lean profiler session (aorta/kernel_capture.py) records on this build: a few events of each kind
with the accessors the kernel timeline reads, and the rounds parsed from them (GPU run).

python3 scripts/gpu/profiler_events_probe.py
"""

import collections

import torch

from aorta import kernel_capture
from aorta import kernel_timeline as kt
from aorta.device import Device
from aorta.workload_parts.spin import cycles_for_ms

dev = Device.open("auto")
streams = dev.streams(2)
cycles = cycles_for_ms(dev, 0.2)
dev.spin(cycles)
dev.synchronize()
print("torch", torch.__version__, "activity_type:", hasattr(torch._C._autograd._KinetoEvent, "activity_type"))
session = kernel_capture._UserScopeSession()
with dev.mark(kt.round_label(0)):
    for i, s in enumerate(streams):
        with dev.mark(kt.block_label(i, "spin")), dev.use(s):
            dev.spin(cycles)
dev.synchronize()
session.stop(None, None, None)
events = list(session._result.events())
seen: collections.Counter = collections.Counter()
for ev in events:
    kind = kt.event_category(ev)
    seen[kind] += 1
    if seen[kind] <= 3:
        print(
            f"{kind!s:20} {ev.name()[:40]:40} dev={ev.device_type()} idx={ev.device_index()} "
            f"res={ev.device_resource_id()} corr={ev.correlation_id()} start={ev.start_ns()} dur={ev.duration_ns()}"
        )
print("kinds:", dict(seen))
trace = kt.trace_from_profiler_events(events)
for rnd in kt.parse_rounds(trace):
    print(
        "round",
        rnd.index,
        "ops",
        len(rnd.ops),
        "blocks",
        [(b.stream_index, b.label, len(b.ops)) for b in rnd.blocks],
    )
    print("figures", kt.round_figures(rnd))
