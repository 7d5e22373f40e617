"""The two readers of one profile give the same rounds (GPU run): eager launches on 2 streams in labelled
ranges, a host-to-device copy, and a graph replay; ops per round, blocks, labels and figures compared.

python3 scripts/gpu/profiler_readers_probe.py
"""

import json
import os
import tempfile
import time

import torch
from torch.profiler import ProfilerActivity, profile

from aorta import kernel_timeline as kt
from aorta.device import Device

dev = Device.open("auto")
streams = dev.streams(2)
x = torch.ones(1 << 20, device="cuda")
host = torch.ones(1 << 20).pin_memory()
graph = torch.cuda.CUDAGraph()
side = torch.cuda.Stream()
with torch.cuda.stream(side):
    x.mul_(1.0)
torch.cuda.synchronize()
with torch.cuda.graph(graph):
    for _ in range(50):
        x.mul_(1.0)


def rounds():
    for n in range(3):
        with dev.mark(kt.round_label(n)):
            for i, s in enumerate(streams):
                with dev.mark(kt.block_label(i, "copy" if i else "tiny")), dev.use(s):
                    if i:
                        x.copy_(host, non_blocking=True)
                    else:
                        for _ in range(200):
                            x.add_(1.0)
            with dev.mark(kt.block_label(0, "graph")):
                graph.replay()
        dev.synchronize()


def digest(trace):
    out = []
    for r in kt.parse_rounds(trace):
        f = kt.round_figures(r)
        out.append(
            (
                r.index,
                len(r.ops),
                sorted({op.category for op in r.ops}),
                [(b.stream_index, b.label, len(b.ops)) for b in r.blocks],
                round(f["span_ms"], 6),
                round(f["gpu_busy_share"], 6),
                round(f["effective_concurrency"], 6),
            )
        )
    return out


with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    rounds()
t0 = time.perf_counter()
from_events = digest(kt.trace_from_profiler_events(prof.profiler.kineto_results.events()))
t1 = time.perf_counter()
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "t.json")
    prof.export_chrome_trace(path)
    with open(path) as fh:
        from_chrome = digest(json.load(fh))
t2 = time.perf_counter()
print("torch", torch.__version__, f"events read {t1 - t0:.3f}s, chrome export+load+parse {t2 - t1:.3f}s")
for a, b in zip(from_events, from_chrome):
    print("events", a)
    print("chrome", b)
print("READERS AGREE" if from_events == from_chrome and from_events else "READERS DIFFER")
