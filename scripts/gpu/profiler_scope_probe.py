"""The capture with host ranges from the user scope alone against torch.profiler's full recording (GPU run).

Both profile the same deterministic rounds: 400 tiny kernels on stream 0, a host-to-device copy on stream 1
and a 50-kernel graph replay, each in aorta's labelled ranges. Printed per recording: the host cost (rounds,
stop, export, load) and trace size, then the rounds as the kernel timeline reads them; the device ops and
blocks must be the same.

python3 scripts/gpu/profiler_scope_probe.py
"""

import time

import torch

from aorta.device import Device
from aorta.timeline import kernel_timeline as kt
from aorta.timeline.kernel_capture import KernelCapture

dev = Device.open("auto")
streams = dev.streams(2)
x = torch.ones(1 << 20, device="cuda")
host = torch.ones(1 << 20).pin_memory()
side = torch.cuda.Stream()
with torch.cuda.stream(side):
    x.mul_(1.0)
torch.cuda.synchronize()
graph = torch.cuda.CUDAGraph()
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
                        for _ in range(400):
                            x.add_(1.0)
            with dev.mark(kt.block_label(0, "graph")):
                graph.replay()
        dev.synchronize()


def digest(trace):
    return [
        (
            r.index,
            len(r.ops),
            sorted({op.category for op in r.ops}),
            [(b.stream_index, b.label, len(b.ops)) for b in r.blocks],
            round(kt.round_figures(r)["gpu_busy_share"], 3),
        )
        for r in kt.parse_rounds(trace)
    ]


rounds()  # warm
out = {}
for user_scope_only in (True, False, True, False):
    recording = "user_scope" if user_scope_only else "full"
    t0 = time.perf_counter()
    with KernelCapture(dev, recording) as cap:
        rounds()
    t_rounds = time.perf_counter() - t0
    d = digest(cap.trace()) if cap.trace() is not None else cap.reason
    out.setdefault(user_scope_only, []).append(d)
    print(f"user_scope_only={user_scope_only}: total {t_rounds:.3f}s {cap.cost}", flush=True)
    print("   ", d, flush=True)
same = [[(i, n, c, b) for i, n, c, b, _ in d] for d in out[True]] == [
    [(i, n, c, b) for i, n, c, b, _ in d] for d in out[False]
]
print("SAME OPS AND BLOCKS" if same and out[True][0] else "DIFFERENT OPS OR BLOCKS")
