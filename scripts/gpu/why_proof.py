"""Print each moved benchmark's causes from scripts/gpu/why_proof.sh's verdict files and check the proof:
forcing TF32 swaps the fp32 GEMM's kernel (kernel_selection, old and new names), the calibrated slowdown
names no kernel_selection. Exit 0 when both hold, 1 otherwise (pure: reads JSON only).

    python3 scripts/gpu/why_proof.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

KERNEL_SELECTION = "kernel_selection"


def moved(path: Path) -> dict[str, dict]:
    """``{benchmark: why}`` over every comparison of one verdict file ({} when the file is missing)."""
    if not path.exists():
        return {}
    doc = json.loads(path.read_text(encoding="utf-8"))
    return {name: why for c in doc.get("comparisons", ()) for name, why in (c.get("why") or {}).items()}


def show(step: str, whys: dict[str, dict]) -> None:
    print(f"{step}: {len(whys)} moved benchmark(s)")
    for name, why in whys.items():
        print(f"  {name.split('::')[-1]}: {why['outcome']}")
        for c in why["causes"]:
            print(f"    {c['cause']}: {c['summary']}")


def main(out: Path) -> int:
    tf32, slow = moved(out / "tf32.verdict.json"), moved(out / "slowdown.verdict.json")
    show("tf32", tf32)
    show("cublaslt", moved(out / "cublaslt.verdict.json"))
    show("slowdown", slow)
    fp32 = [w for n, w in tf32.items() if "fp32" in n]
    swapped = [c for w in fp32 for c in w["causes"] if c["cause"] == KERNEL_SELECTION]
    checks = {
        "tf32: the fp32 GEMM moved with kernel_selection naming old and new kernels": bool(swapped)
        and all(c["evidence"]["baseline_kernels"] and c["evidence"]["candidate_kernels"] for c in swapped),
        "slowdown: something moved (SLOWER)": any(w["outcome"] == "SLOWER" for w in slow.values()),
        "slowdown: no kernel_selection named": not any(
            c["cause"] == KERNEL_SELECTION for w in slow.values() for c in w["causes"]
        ),
    }
    for what, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}: {what}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "artifacts/why_proof")))
