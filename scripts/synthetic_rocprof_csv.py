"""A large rocprofv3-like CSV trace (or rocpd database), to measure ``aorta trace figures`` at the size of a training run.

    python scripts/synthetic_rocprof_csv.py OUT_DIR --dispatches 300000 [--agents 1]
    python scripts/synthetic_rocprof_csv.py OUT.db --dispatches 300000 --rocpd

Writes ``OUT_DIR/<pid>_kernel_trace.csv`` and ``OUT_DIR/<pid>_hip_api_trace.csv`` as rocprofv3 ``--output-format
csv`` does: compute kernels on two streams that overlap, and every third dispatch one of ROCm's buffer fills
(``__amd_rocclr_fillBufferAligned.kd``) interleaved with them, as every real rocprofv3 trace holds; each dispatch
with its ``hipLaunchKernel`` (same ``Correlation_Id``). Timestamps are ns on a boot-time clock (~1.5e15).
With ``--rocpd``, the same dispatches and calls as one rocpd SQLite database, laid out as rocprofv3 writes it
(uuid-suffixed tables under the unsuffixed views, every row with its session's guid, the internal correlation id
in ``rocpd_event.stack_id``, ``pid`` columns pointing at ``rocpd_info_process.id``).
"""

from __future__ import annotations

import argparse
import sqlite3
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


UUID = "_0198c0de_1234_7abc_8def_0123456789ab"
GUID = "0198c0de-1234-7abc-8def-0123456789ab"
ROCPD_TABLES = {  # the columns of rocprofiler-sdk's rocpd_tables.sql that the reader uses
    "rocpd_string": "id INTEGER, guid TEXT, string TEXT",
    "rocpd_info_process": "id INTEGER, guid TEXT, nid INTEGER, ppid INTEGER, pid INTEGER",
    "rocpd_info_kernel_symbol": "id INTEGER, guid TEXT, kernel_name TEXT, display_name TEXT",
    "rocpd_event": "id INTEGER, guid TEXT, category_id INTEGER, stack_id INTEGER, correlation_id INTEGER",
    "rocpd_region": 'id INTEGER, guid TEXT, pid INTEGER, tid INTEGER, start BIGINT, "end" BIGINT, '
    "name_id INTEGER, event_id INTEGER",
    "rocpd_kernel_dispatch": "id INTEGER, guid TEXT, pid INTEGER, agent_id INTEGER, kernel_id INTEGER, "
    'queue_id INTEGER, stream_id INTEGER, start BIGINT, "end" BIGINT, event_id INTEGER',
    "rocpd_memory_copy": "id INTEGER, guid TEXT, pid INTEGER, name_id INTEGER, src_agent_id INTEGER, "
    'dst_agent_id INTEGER, queue_id INTEGER, stream_id INTEGER, start BIGINT, "end" BIGINT, event_id INTEGER',
}


def write_rocpd(path: Path, dispatches: int, agents: int = 1) -> None:
    """The CSV's dispatches and launches as one rocpd database at ``path`` (replaced where it exists)."""
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    con.execute("PRAGMA synchronous = OFF")
    con.execute("PRAGMA journal_mode = OFF")
    for table, cols in ROCPD_TABLES.items():
        con.execute(f'CREATE TABLE "{table}{UUID}" ({cols})')
        con.execute(f'CREATE VIEW "{table}" AS SELECT * FROM "{table}{UUID}"')

    def rows(table: str, values) -> None:
        n = ROCPD_TABLES[table].count(",") + 1
        con.executemany(f'INSERT INTO "{table}{UUID}" VALUES ({", ".join("?" * n)})', values)

    rows(
        "rocpd_string",
        [(1, GUID, "KERNEL_DISPATCH"), (2, GUID, "HIP_RUNTIME_API"), (3, GUID, "hipLaunchKernel")],
    )
    rows("rocpd_info_process", [(1, GUID, 1, 1, PID)])
    names = [FILL] + [f"void gemm_kernel_{k}<float>(float*, float const*, int)" for k in range(11)]
    rows("rocpd_info_kernel_symbol", [(k, GUID, n, n) for k, n in enumerate(names)])
    t0 = 1_550_151_853_029_637

    def dispatch(i: int) -> tuple:
        fill = i % 3 == 0
        stream = 3 if fill else 1 + (i % 2)
        start = t0 + i * 2_000 + (i % 7) * 300
        end = start + (1_200 if fill else 3_500 + (i % 5) * 100)
        return fill, stream, start, end

    rows("rocpd_event", ((2 * i, GUID, 1, i, 0) for i in range(1, dispatches + 1)))
    rows("rocpd_event", ((2 * i + 1, GUID, 2, i, 0) for i in range(1, dispatches + 1)))
    rows("rocpd_kernel_dispatch", (
        (i, GUID, 1, 4 + (i % agents), 0 if fill else 1 + i % 11, stream, stream, start, end, 2 * i)
        for i in range(1, dispatches + 1) for fill, stream, start, end in (dispatch(i),)
    ))  # fmt: skip
    rows("rocpd_region", (
        (i, GUID, 1, PID, start - 9_000, start - 8_000, 3, 2 * i + 1)
        for i in range(1, dispatches + 1) for _, _, start, _ in (dispatch(i),)
    ))  # fmt: skip
    con.commit()
    con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--dispatches", type=int, default=300_000)
    parser.add_argument("--agents", type=int, default=1)
    parser.add_argument("--rocpd", action="store_true", help="write OUT as one rocpd SQLite database")
    args = parser.parse_args()
    if args.dispatches < 1 or args.agents < 1:
        parser.error(f"--dispatches and --agents must be >= 1, got {args.dispatches}, {args.agents}")
    (write_rocpd if args.rocpd else write)(args.out, args.dispatches, args.agents)


if __name__ == "__main__":
    main()
