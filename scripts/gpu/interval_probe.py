"""Do the per-stream interval events perturb what they measure?

For each workload, times the same step in one process with per-stream interval events recorded and
without (interleaved passes, same rounds), and prints the median device ms of each and their ratio, with
the effective concurrency the intervals report. A ratio away from 1 means the events (an end event waits
in a hardware queue that other streams share) changed the schedule being measured.
Usage: python3 scripts/gpu/interval_probe.py [--streams 16,64] [--rounds 10] [--passes 3] [--size full] [names...]
"""

from __future__ import annotations

import argparse

from aorta import results, stats
from aorta.device import Device
from aorta.timing import TimingPlan, time_rounds
from aorta.workloads import REGISTRY, get_workload


def probe(dev: Device, name: str, n: int, rounds: int, passes: int, size: str) -> list:
    cls = get_workload(name)
    if cls.spec.stream_skip_reason(n):
        return [name, n, "skip", "", "", ""]
    w = cls(dev, n, size=size)
    w.setup()
    if w.interval_unavailable_reason() or w.uses_graph():
        return [name, n, "no intervals", "", "", ""]
    streams = dev.streams(n)
    plan = TimingPlan(warmup_rounds=2, rounds=rounds, hold_cycles=w.launch_hold_cycles())
    on, off, conc = [], [], []
    for _ in range(passes):
        for record, into in ((True, on), (False, off)):
            run = time_rounds(dev, streams, w.step, plan, record_intervals=record)
            into.extend(run.per_iteration_ms)
            if record:
                figs = results.stream_figures([r.stream_intervals_ms for r in run.rounds], run.device_ms, n)
                conc.append(figs.get("effective_concurrency"))
    w.__dict__.clear()
    dev.free_memory()
    m_on, m_off = stats.median(on), stats.median(off)
    return [
        name,
        n,
        f"{m_on:.3f}",
        f"{m_off:.3f}",
        f"{m_on / m_off:.3f}",
        f"{stats.median([c for c in conc if c is not None]):.2f}" if any(conc) else "n/a",
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", default="16,64")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--size", default="full")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    dev = Device.open()
    rows = []
    for name in a.names or sorted(REGISTRY):
        for n in (int(s) for s in a.streams.split(",")):
            try:
                rows.append(probe(dev, name, n, a.rounds, a.passes, a.size))
            except Exception as exc:  # one workload's failure must not hide the others' figures
                rows.append([name, n, f"error: {str(exc)[:60]}", "", "", ""])
                dev.free_memory()
            print(*rows[-1], flush=True)
    from aorta.table import format_table

    for line in format_table(
        ["workload", "streams", "ms with intervals", "ms without", "ratio", "eff. conc"], rows
    ):
        print(line)


if __name__ == "__main__":
    main()
