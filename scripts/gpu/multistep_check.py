"""Multi-step correctness check on a GPU: several steps of a workload enqueued back to back on real
streams (no join between them, as in a K-batched timed round) must still match the one-stream reference.

The runner's own check runs one step; this one also exercises the dependencies between consecutive
steps (write-after-read across streams). Prints one line per case; exit status 1 on any mismatch.
By default it checks the six training and inference workloads (whose steps carry state from one step
to the next); name others to check those.
Usage: python3 scripts/gpu/multistep_check.py [--size full|smoke] [--streams 4,16] [--steps 3] [names...]
"""

from __future__ import annotations

import argparse
import sys
import time

from aorta.device import Device
from aorta.hw_queue.runner import poison
from aorta.hw_queue.workload import WorkloadCheckError, clone_result, compare_results
from aorta.hw_queue.workloads import get_workload
from aorta.timing import RoundRecorder, run_forked

NAMES = ("moe", "fsdp_tp", "activation_ckpt", "grad_accum", "speculative_decode", "continuous_batch")


def check(dev: Device, name: str, n: int, size: str, steps: int) -> str:
    cls = get_workload(name)
    reason = cls.spec.stream_skip_reason(n)
    if reason:
        return f"skip ({reason})"
    w = cls(dev, n, size=size)
    w.setup()
    streams = dev.streams(n)
    one = RoundRecorder(dev, [dev.current_stream()] * n, record_intervals=False)
    w.step(one)
    dev.synchronize()  # reference complete before it is copied
    ref = clone_result(w.result())
    poison(w.result())
    many = RoundRecorder(dev, streams, record_intervals=False)
    t0 = time.perf_counter()

    def body():
        for _ in range(steps):
            w.step(many)

    run_forked(dev, streams, body)
    dev.synchronize()  # all steps done before the result is read
    ms = (time.perf_counter() - t0) * 1e3
    try:
        compare_results(w.result(), ref, *w.tolerance())
    except WorkloadCheckError as exc:
        return f"FAIL {exc}"
    finally:
        w.__dict__.clear()  # drop the workload's buffers before the next case allocates
        dev.free_memory()
    return f"ok ({steps} steps, {ms:.1f} ms wall incl. enqueue)"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="full")
    ap.add_argument("--streams", default="4,16")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("names", nargs="*", default=list(NAMES))
    args = ap.parse_args()
    dev = Device.open("auto")
    bad = 0
    for name in args.names:
        for n in (int(x) for x in args.streams.split(",")):
            line = check(dev, name, n, args.size, args.steps)
            bad += line.startswith("FAIL")
            print(f"{name:20s} streams={n:<3d} {line}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
