"""Small GPU probes the proofs run in their own process: ``python3 -m scripts.gpu.probes NAME [ARGS]``.

bare_matmul                      a bare 8192^3 bf16 matmul through the one timing loop (ms, TFLOP/s)
sizes STREAMS CASE...            device ms, GPU busy, concurrency, CV of workloads at chosen sizes
                                 (CASE: workload[:dtype][:name=value,...], e.g. graph_subgraphs::mode=graph,B=1024)
multistep [--size full] [--streams 4,16] [--steps 3] [NAME...]
                                 several steps back to back on real streams still match the reference
graph_trace [N]                  what the profiler's trace holds for a replayed N-stream graph; a pass's cost
profiler_scope                   the capture with user-scope host ranges against torch.profiler's full one
kernel_traces OUT_DIR            record the small kernel traces kept in tests/data (trimmed)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from aorta import stats
from aorta.device import Device
from aorta.timeline import kernel_timeline as kt
from aorta.timeline.kernel_capture import KernelCapture
from aorta.timing import RoundRecorder, TimingPlan, run_forked, time_rounds


def bare_matmul(args: list[str]) -> int:
    """The reference for large_gemm_only: ms and TFLOP/s of one 8192^3 bf16 matmul, as JSON."""
    dev = Device.open("auto")
    n = 8192
    g = torch.Generator(device=dev.torch_device).manual_seed(0)
    a = torch.randn(n, n, generator=g, device=dev.torch_device).to(torch.bfloat16)
    b = (torch.randn(n, n, generator=g, device=dev.torch_device) / n**0.5).to(torch.bfloat16)
    c = torch.empty(n, n, device=dev.torch_device, dtype=torch.bfloat16)
    run = time_rounds(dev, [], lambda rec: torch.matmul(a, b, out=c), TimingPlan(warmup_rounds=3, rounds=20))
    ms = stats.median(run.per_iteration_ms)
    print(json.dumps({"bare_matmul_ms": ms, "bare_matmul_tflops": 2 * n**3 / (ms * 1e-3) / 1e12}))
    return 0


def _case(case: str):
    from aorta.hw_queue.workloads import REGISTRY

    name, dtype, params = (case.split(":") + ["", ""])[:3]
    kwargs: dict[str, object] = {}
    for item in filter(None, params.split(",")):
        key, value = item.split("=")
        kwargs[key] = int(value) if value.lstrip("-").isdigit() else value
    return REGISTRY[name], (dtype or None), kwargs


def sizes(args: list[str]) -> int:
    """What a size change does before it becomes a default: GPU mode, 20 rounds, one line per case."""
    from aorta.hw_queue.runner import run_workload

    dev = Device.open("auto")
    plan = TimingPlan(warmup_rounds=3, rounds=20)
    counts = [int(s) for s in args[0].split(",")]
    print(f"{'case':60} {'streams':>7} {'ms':>8} {'busy':>5} {'conc':>5} {'CV%':>5} {'host s':>6}")
    for case in args[1:]:
        cls, dtype, kwargs = _case(case)
        for n in counts:
            t0 = time.perf_counter()
            w = cls(dev, n, dtype=dtype, **kwargs)
            r = run_workload(dev, w, w.make_streams(), plan, mode="gpu")
            ms = r.run.per_iteration_ms
            cv = 100 * statistics.stdev(ms) / statistics.mean(ms) if len(ms) > 1 else float("nan")
            busy, conc = r.extra_info.get("gpu_busy_share"), r.extra_info.get("effective_concurrency")
            print(
                f"{case:60} {n:7d} {stats.median(ms):8.3f} {busy if busy is None else round(busy, 3)!s:>5} "
                f"{conc if conc is None else round(conc, 2)!s:>5} {cv:5.2f} {time.perf_counter() - t0:6.1f}",
                flush=True,
            )
            del w, r
            dev.free_memory()
    return 0


MULTISTEP_NAMES = (
    "moe",
    "fsdp_tp",
    "activation_ckpt",
    "grad_accum",
    "speculative_decode",
    "continuous_batch",
)


def _multistep_case(dev: Device, name: str, n: int, size: str, steps: int) -> str:
    from aorta.hw_queue.runner import poison
    from aorta.hw_queue.workload import WorkloadCheckError, clone_result, compare_results
    from aorta.hw_queue.workloads import get_workload

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


def multistep(args: list[str]) -> int:
    """Steps enqueued back to back (no join, as in a K-batched round) must match the one-stream reference:
    the runner's own check runs one step, this one also the dependencies between steps. Exit 1 on a mismatch."""
    ap = argparse.ArgumentParser(prog="multistep")
    ap.add_argument("--size", default="full")
    ap.add_argument("--streams", default="4,16")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("names", nargs="*", default=list(MULTISTEP_NAMES))
    a = ap.parse_args(args)
    dev = Device.open("auto")
    bad = 0
    for name in a.names:
        for n in (int(x) for x in a.streams.split(",")):
            line = _multistep_case(dev, name, n, a.size, a.steps)
            bad += line.startswith("FAIL")
            print(f"{name:20s} streams={n:<3d} {line}", flush=True)
    return 1 if bad else 0


def _show(trace, title: str) -> None:
    rounds = kt.parse_rounds(trace)
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
        f = kt.round_figures(r)
        busy = {k: round(v, 3) for k, v in f["per_stream_busy_ms"].items()}
        print(
            f"  round {r.index}: ops={len(r.ops)} blocks={len(r.blocks)} span={f['span_ms']:.3f} ms "
            f"per-stream busy={busy} conc={f.get('effective_concurrency')} busy_share={f.get('gpu_busy_share')}"
        )


def graph_trace(args: list[str]) -> int:
    """A replayed N-stream graph's trace (device streams, correlation to the graph launch, no labelled
    ranges) beside the same round launched, then the host cost of profiled passes of 1,000 / 20,000 kernels."""
    from aorta.hw_queue.parts.spin import cycles_for_ms

    n = int(args[0]) if args else 4
    dev = Device.open()
    streams = dev.streams(n)
    cycles = cycles_for_ms(dev, 2.0)

    def step(rec):
        for i in range(n):
            with rec.on(i, label="spin"):
                dev.spin(cycles)

    rec = RoundRecorder(dev, streams, record_intervals=False)
    replay = dev.capture_graph(lambda: run_forked(dev, streams, lambda: step(rec)))
    dev.synchronize()  # the capture is complete before it is replayed under the profiler
    with KernelCapture(dev) as cap:
        for k in range(2):
            with dev.mark(kt.round_label(k)):
                replay()
        dev.synchronize()  # every replayed kernel in the trace before it stops
    _show(cap.trace(), f"graph replay, {n} streams")
    rec2 = RoundRecorder(dev, streams, record_intervals=True)
    with KernelCapture(dev) as cap:
        for k in range(2):
            with dev.mark(kt.round_label(k)):
                run_forked(dev, streams, lambda: step(rec2))
        dev.synchronize()  # as above
    _show(cap.trace(), f"eager labelled, {n} streams")
    x = torch.zeros(1024, device=dev.torch_device)
    for kernels in (1_000, 20_000):
        t0 = time.perf_counter()
        cap = KernelCapture(dev)
        cap.__enter__()
        t1 = time.perf_counter()
        with dev.mark(kt.round_label(0)):
            for _ in range(kernels):
                x.add_(1.0)
        dev.synchronize()  # the kernels ran before the profiler stops
        t2 = time.perf_counter()
        cap.__exit__(None, None, None)
        t3 = time.perf_counter()
        rounds = kt.parse_rounds(cap.trace())
        t4 = time.perf_counter()
        print(
            f"profiled pass, {kernels} kernels: start {t1 - t0:.3f} s, run {t2 - t1:.3f} s, "
            f"stop+export+load {t3 - t2:.3f} s, parse {t4 - t3:.3f} s, ops {len(rounds[0].ops) if rounds else 0}"
        )
    return 0


def profiler_scope(args: list[str]) -> int:
    """The same rounds (400 tiny kernels, a copy, a 50-kernel graph replay) recorded with host ranges from
    the user scope alone and with torch.profiler's full recording: host cost, and the same ops and blocks."""
    dev = Device.open("auto")
    streams = dev.streams(2)
    x = torch.ones(1 << 20, device="cuda")
    host = torch.ones(1 << 20).pin_memory()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x.mul_(1.0)
    torch.cuda.synchronize()  # warm-up done before the capture
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
            dev.synchronize()  # each round ends on the device before the next is labelled

    def digest(trace):
        return [
            (r.index, len(r.ops), sorted({op.category for op in r.ops}),
             [(b.stream_index, b.label, len(b.ops)) for b in r.blocks], round(kt.round_figures(r)["gpu_busy_share"], 3))
            for r in kt.parse_rounds(trace)
        ]  # fmt: skip

    rounds()  # warm
    out: dict[bool, list] = {}
    for user_scope_only in (True, False, True, False):
        t0 = time.perf_counter()
        with KernelCapture(dev, "user_scope" if user_scope_only else "full") as cap:
            rounds()
        d = digest(cap.trace()) if cap.trace() is not None else cap.reason
        out.setdefault(user_scope_only, []).append(d)
        print(
            f"user_scope_only={user_scope_only}: total {time.perf_counter() - t0:.3f}s {cap.cost}", flush=True
        )
        print("   ", d, flush=True)
    strip = [[[(i, n, c, b) for i, n, c, b, _ in d] for d in out[k]] for k in (True, False)]
    same = strip[0] == strip[1] and bool(out[True][0])
    print("SAME OPS AND BLOCKS" if same else "DIFFERENT OPS OR BLOCKS")
    return 0 if same else 1


def kernel_traces(args: list[str]) -> int:
    """Record the small traces kept in tests/data (trimmed): four streams of one 1 ms spin each, and
    async_dataload at smoke size on three streams (labelled copy, preprocess and compute blocks)."""
    from aorta.hw_queue.parts.spin import cycles_for_ms
    from aorta.hw_queue.workloads.async_dataload import AsyncDataload
    from aorta.timing import loop

    out = Path(args[0])
    out.mkdir(parents=True, exist_ok=True)
    dev = Device.open("auto")
    captures = []

    def keep(device):  # the loop builds its capture as KernelCapture(device): keep each one for its trace
        c = KernelCapture(device)
        captures.append(c)
        return c

    loop.KernelCapture = keep  # type: ignore[misc]
    plan = TimingPlan(warmup_rounds=1, rounds=2, iterations_per_round=1)
    streams = dev.streams(4)
    cycles = cycles_for_ms(dev, 1.0)

    def spins(rec):
        for i in range(4):
            with rec.use(i):
                dev.spin(cycles)

    run = time_rounds(dev, streams, spins, plan)
    (out / "kernels_4streams_cuda.json").write_text(json.dumps(kt.trim_trace(captures[-1].trace())))
    print("spin4", run.device_ms, kt.summarize(run.kernel_rounds))
    w = AsyncDataload(dev, 3, size="smoke")
    w.setup()
    run = time_rounds(dev, w.make_streams(), w.step, plan)
    (out / "kernels_async_dataload_cuda.json").write_text(json.dumps(kt.trim_trace(captures[-1].trace())))
    labels = {k: len(v) for k, v in run.rounds[0].label_intervals_ms.items()}
    print("dataload", run.device_ms, labels, kt.summarize(run.kernel_rounds))
    for p in out.glob("*.json"):
        print(p.name, p.stat().st_size, "bytes")
    return 0


PROBES = {f.__name__: f for f in (bare_matmul, sizes, multistep, graph_trace, profiler_scope, kernel_traces)}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in PROBES:
        print(__doc__)
        print(f"probes: {', '.join(PROBES)}", file=sys.stderr)
        return 2
    return PROBES[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
