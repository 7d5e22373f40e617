"""A large rocprofv3-like CSV trace, to measure ``aorta trace figures`` at the size of a training run.

    python scripts/synthetic_rocprof_csv.py OUT_DIR --dispatches 300000 [--agents 1]

Writes ``OUT_DIR/<pid>_kernel_trace.csv`` and ``OUT_DIR/<pid>_hip_api_trace.csv`` as rocprofv3 ``--output-format
csv`` does: compute kernels on two streams that overlap, and every third dispatch one of ROCm's buffer fills
(``__amd_rocclr_fillBufferAligned.kd``) interleaved with them, as every real rocprofv3 trace holds; each dispatch
with its ``hipLaunchKernel`` (same ``Correlation_Id``). Timestamps are ns on a boot-time clock (~1.5e15).
"""

from __future__ import annotations

import argparse
from pathlib import Path

KERNEL_HEADER = (
    '"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name",'
    '"Correlation_Id","Start_Timestamp","End_Timestamp","LDS_Block_Size","Scratch_Size","VGPR_Count",'
    '"Accum_VGPR_Count","SGPR_Count","Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X",'
    '"Grid_Size_Y","Grid_Size_Z"\n'
)
API_HEADER = (
    '"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
)
FILL = "__amd_rocclr_fillBufferAligned.kd"
PID = 4242


def write(out: Path, dispatches: int, agents: int = 1) -> None:
    out.mkdir(parents=True, exist_ok=True)
    t0 = 1_550_151_853_029_637
    with (out / f"{PID}_kernel_trace.csv").open("w") as k, (out / f"{PID}_hip_api_trace.csv").open("w") as a:
        k.write(KERNEL_HEADER)
        a.write(API_HEADER)
        for i in range(1, dispatches + 1):
            agent = 4 + (i % agents)
            fill = i % 3 == 0
            stream = 3 if fill else 1 + (i % 2)
            start = t0 + i * 2_000 + (i % 7) * 300  # 2 µs apart, jittered: streams overlap
            end = start + (1_200 if fill else 3_500 + (i % 5) * 100)
            name = FILL if fill else f"void gemm_kernel_{i % 11}<float>(float*, float const*, int)"
            k.write(
                f'"KERNEL_DISPATCH","Agent {agent}",{stream},{stream},{PID},{i},{i % 11},"{name}",{i},{start},{end},'
                "0,0,8,0,16,64,1,1,1024,1024,1\n"
            )
            a.write(f'"HIP_RUNTIME_API","hipLaunchKernel",{PID},{PID},{i},{start - 9_000},{start - 8_000}\n')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--dispatches", type=int, default=300_000)
    parser.add_argument("--agents", type=int, default=1)
    args = parser.parse_args()
    if args.dispatches < 1 or args.agents < 1:
        parser.error(f"--dispatches and --agents must be >= 1, got {args.dispatches}, {args.agents}")
    write(args.out, args.dispatches, args.agents)


if __name__ == "__main__":
    main()
