"""Device time, GPU busy share and CV of chosen workloads at chosen sizes (GPU run): what a size change does
to the one-stream busy share before it becomes a default.

python3 scripts/gpu/size_probe.py STREAMS CASE [CASE ...]
CASE: workload[:dtype][:name=value,...], e.g. speculative_decode:bf16:batch=16  graph_subgraphs::mode=graph,B=1024
"""

import statistics
import sys
import time

from aorta import stats
from aorta.device import Device
from aorta.hw_queue.runner import run_workload
from aorta.hw_queue.workloads import REGISTRY
from aorta.timing import TimingPlan


def parse(case: str):
    name, dtype, params = (case.split(":") + ["", ""])[:3]
    kwargs = {}
    for item in filter(None, params.split(",")):
        key, value = item.split("=")
        kwargs[key] = value if not value.lstrip("-").isdigit() else int(value)
    return REGISTRY[name], (dtype or None), kwargs


dev = Device.open("auto")
plan = TimingPlan(warmup_rounds=3, rounds=20)
counts = [int(s) for s in sys.argv[1].split(",")]
print(f"{'case':60} {'streams':>7} {'ms':>8} {'busy':>5} {'conc':>5} {'CV%':>5} {'host s':>6}")
for case in sys.argv[2:]:
    cls, dtype, kwargs = parse(case)
    for n in counts:
        t0 = time.perf_counter()
        w = cls(dev, n, dtype=dtype, **kwargs)
        r = run_workload(dev, w, w.make_streams(), plan, mode="gpu")
        ms = r.run.per_iteration_ms
        info = r.extra_info
        cv = 100 * statistics.stdev(ms) / statistics.mean(ms) if len(ms) > 1 else float("nan")
        busy, conc = info.get("gpu_busy_share"), info.get("effective_concurrency")
        print(
            f"{case:60} {n:7d} {stats.median(ms):8.3f} {busy if busy is None else round(busy, 3)!s:>5} "
            f"{conc if conc is None else round(conc, 2)!s:>5} {cv:5.2f} {time.perf_counter() - t0:6.1f}",
            flush=True,
        )
        del w, r
        dev.free_memory()
