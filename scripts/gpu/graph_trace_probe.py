"""What the profiler's trace holds for a replayed multi-stream CUDA/HIP graph, and what a profiled pass costs.

1. N streams, each one long one-block spin kernel, captured as one graph and replayed inside a labelled round
   under ``torch.profiler``: prints each device op's stream id, start, duration, correlation, the launch call
   it matches and the figures ``aorta.timeline.kernel_timeline`` reads from that round (per-stream busy, concurrency).
2. The same round eager (labelled blocks) for comparison.
3. Host cost of one profiled pass: profiler start, rounds, stop + export + parse, for a round of many tiny kernels.

    python3 scripts/gpu/graph_trace_probe.py [N]
"""

import sys
import time

import torch

from aorta.device import Device
from aorta.hw_queue.parts.spin import cycles_for_ms
from aorta.timeline import kernel_timeline
from aorta.timeline.kernel_capture import KernelCapture
from aorta.timing.loop import RoundRecorder, run_forked

n = int(sys.argv[1]) if len(sys.argv) > 1 else 4
dev = Device.open()
streams = dev.streams(n)
cycles = cycles_for_ms(dev, 2.0)


def step(rec):
    for i in range(n):
        with rec.on(i, label="spin"):
            dev.spin(cycles)


def show(trace, title):
    rounds = kernel_timeline.parse_rounds(trace)
    print(f"== {title}: {len(rounds)} round(s)")
    ev = trace.get("traceEvents", [])
    launches = {
        e.get("args", {}).get("correlation"): e["name"]
        for e in ev
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
    }
    for e in ev:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            a = e.get("args", {})
            print(
                f"  op {e['name'][:40]:40s} stream={a.get('stream')} ts={e['ts']:.1f} dur={e.get('dur')} "
                f"corr={a.get('correlation')} launch={launches.get(a.get('correlation'))} graph={a.get('graph node id')}"
            )
    for r in rounds:
        f = kernel_timeline.round_figures(r)
        print(
            f"  round {r.index}: ops={len(r.ops)} blocks={len(r.blocks)} span={f['span_ms']:.3f} ms "
            f"per-stream busy={ {k: round(v, 3) for k, v in f['per_stream_busy_ms'].items()} } "
            f"conc={f.get('effective_concurrency')} busy_share={f.get('gpu_busy_share')}"
        )


origin = dev.current_stream()
rec = RoundRecorder(dev, streams, record_intervals=False)
replay = dev.capture_graph(lambda: run_forked(dev, streams, lambda: step(rec)))
dev.synchronize()
with KernelCapture(dev) as cap:
    for k in range(2):
        with dev.mark(kernel_timeline.round_label(k)):
            replay()
    dev.synchronize()
show(cap.trace(), f"graph replay, {n} streams")

rec2 = RoundRecorder(dev, streams, record_intervals=True)
with KernelCapture(dev) as cap:
    for k in range(2):
        with dev.mark(kernel_timeline.round_label(k)):
            run_forked(dev, streams, lambda: step(rec2))
    dev.synchronize()
show(cap.trace(), f"eager labelled, {n} streams")

# cost of a profiled pass with many tiny kernels
x = torch.zeros(1024, device=dev.torch_device)
for kernels in (1_000, 20_000):
    t0 = time.perf_counter()
    cap = KernelCapture(dev)
    cap.__enter__()
    t1 = time.perf_counter()
    with dev.mark(kernel_timeline.round_label(0)):
        for _ in range(kernels):
            x.add_(1.0)
    dev.synchronize()
    t2 = time.perf_counter()
    cap.__exit__(None, None, None)
    t3 = time.perf_counter()
    rounds = kernel_timeline.parse_rounds(cap.trace())
    t4 = time.perf_counter()
    print(
        f"profiled pass, {kernels} kernels: start {t1 - t0:.3f} s, run {t2 - t1:.3f} s, stop+export+load {t3 - t2:.3f} s, parse {t4 - t3:.3f} s, ops {len(rounds[0].ops) if rounds else 0}"
    )
