"""Record small kernel traces for tests/data (trimmed) and print kernel-timeline figures (GPU run).

python3 scripts/gpu/kernel_timeline_probe.py OUT_DIR
"""

import json
import sys
from pathlib import Path

from aorta.device import Device
from aorta.hw_queue.parts.spin import cycles_for_ms
from aorta.hw_queue.workloads.async_dataload import AsyncDataload
from aorta.timeline import kernel_timeline as kt
from aorta.timeline.kernel_capture import KernelCapture
from aorta.timing import TimingPlan, loop, time_rounds

out = Path(sys.argv[1])
dev = Device.open("auto")
captures = []


def _keep(device):  # the loop builds its capture as KernelCapture(device): keep each one for its trace
    c = KernelCapture(device)
    captures.append(c)
    return c


loop.KernelCapture = _keep
plan = TimingPlan(warmup_rounds=1, rounds=2, iterations_per_round=1)

# 1. four native streams, one 1 ms spin kernel each, breadth-first
streams = dev.streams(4)
cycles = cycles_for_ms(dev, 1.0)


def spins(rec):
    for i in range(4):
        with rec.use(i):
            dev.spin(cycles)


run = time_rounds(dev, streams, spins, plan)
doc = kt.trim_trace(captures[-1].trace())
(out / "kernels_4streams_cuda.json").write_text(json.dumps(doc))
print("spin4", run.device_ms, kt.summarize(run.kernel_rounds))

# 2. async_dataload smoke at 3 streams: labelled copy / preprocess / compute blocks, memcpy events
w = AsyncDataload(dev, 3, size="smoke")
w.setup()
run = time_rounds(dev, w.make_streams(), w.step, plan)
doc = kt.trim_trace(captures[-1].trace())
(out / "kernels_async_dataload_cuda.json").write_text(json.dumps(doc))
print(
    "dataload",
    run.device_ms,
    {k: len(v) for k, v in run.rounds[0].label_intervals_ms.items()},
    kt.summarize(run.kernel_rounds),
)
for p in out.glob("*.json"):
    print(p.name, p.stat().st_size, "bytes")
