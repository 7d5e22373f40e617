"""scripts/gpu/throttle_rounds.py on recorded H100 runs (docs/data/gate_pools): the evidence behind the
throttle policy, read again from the data (docs/measurements.md, "Throttled rounds on H100")."""

import runpy
import sys
from pathlib import Path

POOLS = Path(__file__).resolve().parents[2] / "docs" / "data" / "gate_pools"
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu" / "throttle_rounds.py"


def test_the_recorded_runs_were_throttled_by_the_power_limit_only(monkeypatch, capsys):
    monkeypatch.setattr(
        sys, "argv", ["throttle_rounds.py", str(POOLS / "pool_a.tgz"), str(POOLS / "pool_c.tgz")]
    )
    try:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    except SystemExit as exc:
        assert exc.code == 0
    lines = capsys.readouterr().out.splitlines()
    runs = {line.split()[0]: line.split()[1:] for line in lines if line.startswith(("a-", "c-"))}
    assert runs == {
        "a-1": ["720", "65", "6", "sw_power_cap", "65"],
        "a-2": ["720", "60", "5", "sw_power_cap", "60"],
        "c-1": ["720", "80", "8", "sw_power_cap", "80"],
        "c-2": ["720", "85", "8", "sw_power_cap", "85"],
    }
    gemm = next(line for line in lines if line.startswith("test_large_gemm_only[streams1-fp32]"))
    assert gemm.split()[-2:] == ["0.63%", "10.95%"]  # clock scaling spreads the runs, not the opposite
