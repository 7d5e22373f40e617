"""A large Kineto (``torch.profiler``) Chrome trace, to measure ``aorta trace figures`` at the size of a training run.

    python scripts/synthetic_kineto_trace.py OUT.json[.gz] --events 1000000 [--kernels-per-step 1000]

Events are shaped and ordered as Kineto writes them (the MI300X trace of ../shared/amd_traces/ is the model): the
host's events first (``cpu_op`` per launch, ``python_function`` frames, ``ProfilerStep#N`` as ``user_annotation``,
``nccl:all_reduce`` annotations), then the runtime calls with their flow events and the device work as the
profiler drained them (``cuda_runtime`` launches with ``args.correlation``, ``ac2g`` ``s`` / ``f`` flows, ``kernel``,
``gpu_memcpy`` and ``gpu_memset`` with ``args.device`` / ``stream`` / ``correlation``), the GPU-side copies of the
steps (``gpu_user_annotation``) and the metadata last. Compute runs on stream 7, every eighth launch is an RCCL
all-reduce on stream 20 (``Collective name``, message size, group size) overlapping the compute; every step ends
with the host waiting for the GPU. Times are µs with 3 decimals on a clock near 3.7e12 µs (past 2^40 µs, where
only the text's digits hold the ns), written from integer ns.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import tempfile
from pathlib import Path
from typing import TextIO

PID, TID, GPU_PID = 542, 542, 2
T0_NS = 3_743_411_222_487_063
COMPUTE_STREAM, COMM_STREAM = 7, 20
EVENTS_PER_LAUNCH = 6  # cpu_op, python_function, runtime call, its two flow events, the device op
KERNELS = (
    "void at::native::vectorized_elementwise_kernel<8, at::native::AUnaryFunctor<c10::BFloat16>>(int)",
    "Cijk_Ailk_Bljk_BBS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS3_ASE_ASGT_ASAE01",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float>>>(float)",
    "void at::native::(anonymous namespace)::CatArrayBatchedCopy_contig<unsigned int, 1, 128, 1>(int)",
)
COMM = "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)"


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def _x(out: TextIO, cat: str, name: str, pid, tid, ts_ns: int, dur_ns: int, args: dict | None = None) -> None:
    a = f', "args": {json.dumps(args)}' if args else ""
    out.write(
        f',\n{{"ph": "X", "cat": "{cat}", "name": {json.dumps(name)}, "pid": {json.dumps(pid)}, '
        f'"tid": {json.dumps(tid)}, "ts": {_us(ts_ns)}, "dur": {_us(dur_ns)}{a}}}'
    )


def _flow(out: TextIO, ph: str, flow_id: int, pid, tid, ts_ns: int) -> None:
    bp = ', "bp": "e"' if ph == "f" else ""
    out.write(
        f',\n{{"ph": "{ph}", "id": {flow_id}, "pid": {pid}, "tid": {tid}, "ts": {_us(ts_ns)}, '
        f'"cat": "ac2g", "name": "ac2g"{bp}}}'
    )


def write(path: Path, events: int, kernels_per_step: int = 1000) -> int:
    """The trace at ``path`` (gzipped where it ends in ``.gz``) of about ``events`` events; returns how many."""
    launches = max(1, events // EVENTS_PER_LAUNCH)
    opener = gzip.open if path.suffix == ".gz" else open
    written = 0
    with (
        opener(path, "wt") as host,
        tempfile.TemporaryFile("w+t") as device,
        tempfile.TemporaryFile("w+t") as tail,
    ):
        host.write(
            '{"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8},\n'
        )
        host.write('"deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X"}],\n"traceEvents": [\n')
        host.write(f'{{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": 0, '
                   f'"ts": {_us(T0_NS)}, "dur": 1.000}}')  # fmt: skip
        written += 1
        t = T0_NS + 10_000  # the host's clock (ns)
        free = {COMPUTE_STREAM: t, COMM_STREAM: t}  # when each stream's last op ends
        i = step = 0
        while i < launches:
            step_start, gpu_first, gpu_last = t, None, t
            for _ in range(min(kernels_per_step, launches - i)):
                corr = 100_000 + i
                comm, copy, fill = i % 8 == 5, i % 16 == 3, i % 32 == 9
                dur = 900 + (i * 37) % 400  # the runtime call (ns)
                op_name = "nccl:all_reduce" if comm else ("aten::copy_" if copy else "aten::mm")
                _x(host, "cpu_op", op_name, PID, TID, t - 500, dur + 1000, {"External id": i, "Ev Idx": i})
                _x(host, "python_function", f"model.py({i % 97}): forward", PID, TID, t - 900, dur + 1800)
                call = "hipMemcpyAsync" if copy else "hipMemsetAsync" if fill else "hipLaunchKernel"
                _x(device, "cuda_runtime", call, PID, TID, t, dur, {"External id": i, "correlation": corr})
                _flow(device, "s", corr, PID, TID, t)
                stream = COMM_STREAM if comm else COMPUTE_STREAM
                start = max(t + 20_000, free[stream])
                length = 30_000 + (i * 13) % 9_000 if comm else 4_000 + (i * 7919) % 5_000
                args = {"device": 0, "stream": stream, "correlation": corr}
                if copy:
                    cat, name, length = "gpu_memcpy", "Memcpy DtoD (Device -> Device)", 2_000
                elif fill:
                    cat, name, length = "gpu_memset", "Memset (Device)", 1_500
                else:
                    cat, name = "kernel", COMM if comm else KERNELS[i % len(KERNELS)]
                    args |= {"grid": [1024, 1, 1], "block": [256, 1, 1]}
                    if comm:
                        args |= {"Collective name": "allreduce", "dtype": "BFloat16", "In msg nelems": 2873320,
                                 "Out msg nelems": 2873320, "Group size": 8, "Process Group Name": "0"}  # fmt: skip
                _x(device, cat, name, GPU_PID, stream, start, length, args)
                _flow(device, "f", corr, GPU_PID, stream, start)
                free[stream] = start + length
                gpu_first = start if gpu_first is None else min(gpu_first, start)
                gpu_last = max(gpu_last, start + length)
                written += EVENTS_PER_LAUNCH
                t += dur + 6_000 + (i * 31) % 3_000
                i += 1
            t = max(t, gpu_last) + 5_000  # the step ends with the host waiting for the GPU
            name = f"ProfilerStep#{step}"
            _x(host, "user_annotation", name, PID, TID, step_start - 200, t - step_start)
            _x(tail, "gpu_user_annotation", name, GPU_PID, COMPUTE_STREAM, gpu_first, gpu_last - gpu_first)
            written += 2
            step += 1
        for part in (device, tail):
            part.seek(0)
            shutil.copyfileobj(part, host)
        host.write(f',\n{{"name": "process_name", "ph": "M", "ts": {_us(T0_NS)}, "pid": {PID}, "tid": 0, '
                   '"args": {"name": "python3"}}\n]}\n')  # fmt: skip
        written += 1
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--kernels-per-step", type=int, default=1000)
    args = parser.parse_args()
    if args.events < EVENTS_PER_LAUNCH or args.kernels_per_step < 1:
        parser.error(f"--events must be >= {EVENTS_PER_LAUNCH} and --kernels-per-step >= 1")
    print(f"{write(args.out, args.events, args.kernels_per_step)} events written to {args.out}")


if __name__ == "__main__":
    main()
