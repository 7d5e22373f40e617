"""fsdp_tp with real collectives: a thin wrapper over the pytest benchmark, runnable from the repo root
without installing aorta.

    NCCL_NVLS_ENABLE=0 torchrun --standalone --nproc_per_node 4 scripts/gpu/fsdp_tp_collectives.py [pytest args]

Each rank runs ``pytest benchmarks/hw_queue/test_fsdp_tp.py -k bf16 --aorta-streams 2,4,16 --aorta-size full``
(the benchmark records comm=collectives when the world size is above 1); extra arguments go to pytest.
Rank 0 writes ``$OUT/fsdp_tp_collectives.json`` (pytest-benchmark JSON; ``./fsdp_tp_collectives.json``
without ``$OUT``) and prints one line per stream count. Without torchrun it runs one process and says so
(comm=d2d_copies_single_process).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # torchrun runs this file with scripts/gpu first on sys.path, not the repo
    sys.path.insert(0, str(REPO))


def lines(data: dict) -> list[str]:
    """One line per benchmark of a pytest-benchmark JSON: comm label, world size, samples/s, overlap."""
    out = []
    for b in data.get("benchmarks", []):
        e = b["extra_info"]
        m, info = e.get("metrics", {}), e.get("workload_info", {})
        value = lambda k, m=m: m.get(k, {}).get("value")  # noqa: E731
        out.append(
            f"streams={e.get('streams_requested')} mode={e.get('gpu_mode') or e.get('mode')} "
            f"comm={info.get('comm')} world={info.get('world_size')} "
            f"samples/s={value('samples_per_s')} overlap={value('comm_overlap_ratio')} "
            f"exposed_ms={value('exposed_comm_ms')} per_rank_median_ms={e.get('per_rank_median_ms')} "
            f"spread={e.get('per_rank_spread')}"
        )
    return out


def main(argv: list[str]) -> int:
    import pytest

    os.chdir(REPO)
    json_path = Path(os.environ.get("OUT") or ".", "fsdp_tp_collectives.json").resolve()
    args = [
        "benchmarks/hw_queue/test_fsdp_tp.py",
        "-k",
        "bf16",
        "--aorta-streams=2,4,16",
        f"--benchmark-json={json_path}",
        "-p",
        "no:randomly",
        *argv,
    ]
    if not any(a.startswith("--aorta-size") for a in argv):
        args.append("--aorta-size=full")
    rc = int(pytest.main(args))
    if os.environ.get("RANK", "0") == "0" and json_path.exists():
        if "WORLD_SIZE" not in os.environ:
            print("one process (no torchrun): comm ops are device-to-device copies, not collectives")
        for line in lines(json.loads(json_path.read_text())):
            print(line, flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
