"""How much machines of one kind differ, measured (aorta.gate.stats.machine_spread, scripts/machine_spread.py):
the table the one-machine rule reads, and what it was measured from."""

import importlib.util
import math
from pathlib import Path

import pytest

from aorta.gate.stats.machine_noise import machine_spread
from aorta.gate.stats.machine_spread import PoolRun, load_table, measure, spread_for

ROOT = Path(__file__).resolve().parents[2]
POOLS = ROOT / "docs" / "data" / "gate_pools"


def test_worked_answer_three_machines_two_runs_each():
    # logs: A 0.00, 0.02; C 0.10, 0.14; D -0.10, -0.10. Runs about their machine: ss 0.0002 + 0.0008 + 0
    # over df 3: s_run^2 = 0.001 / 3. Machine means 0.01, 0.12, -0.10: s_mm^2 = 0.0121; h = 1/2.
    # sigma_machine^2 = 0.0121 - 0.001 / 3 / 2
    est = machine_spread([0.0, 0.02, 0.10, 0.14, -0.10, -0.10], ["A", "A", "C", "C", "D", "D"])
    assert est.sigma_machine == pytest.approx(math.sqrt(0.0121 - 0.001 / 6), rel=1e-9)
    assert est.sigma_run == pytest.approx(math.sqrt(0.001 / 3), rel=1e-9)
    assert (est.machines, est.runs, est.df_run) == (3, 6, 3)


def test_machines_that_differ_less_than_their_runs_read_zero_not_negative():
    est = machine_spread([0.0, 0.1, 0.01, 0.09], ["A", "A", "C", "C"])
    assert est.sigma_machine == 0.0


def test_one_machine_or_one_run_per_machine_measures_nothing():
    assert machine_spread([0.0, 0.1], ["A", "A"]) is None
    assert machine_spread([0.0, 0.1], ["A", "C"]) is None  # runs and machines cannot be told apart


def test_measure_keeps_figures_seen_on_two_machines_and_summarizes_the_model():
    def run(machine, value, extra=None):
        figs = {"b": {"device_ms": [value] * 5, **(extra or {})}}
        return PoolRun("H100", machine, f"pool_{machine}", figs)

    e = math.e
    runs = [
        run("A", 1.0, {"only_a": [3.0]}),
        run("A", e**0.02, {"only_a": [3.1]}),
        run("C", e**0.10),
        run("C", e**0.14),
        run("D", e**-0.10),
        run("D", e**-0.10),
    ]
    model = measure(runs)["H100"]
    assert model["machines"] == ["A", "C", "D"]
    assert list(model["figures"]["b"]) == ["device_ms"]  # only_a: one machine
    assert model["figures"]["b"]["device_ms"]["sigma_machine"] == pytest.approx(
        math.sqrt(0.0121 - 0.001 / 6), abs=1e-6
    )
    s = model["summary"]
    assert (s["figures"], s["machines"], s["max_at"], s["above"]) == (
        1,
        3,
        "b [device_ms]",
        {"0.01": 1, "0.02": 1, "0.05": 1},
    )


def test_the_shipped_table_is_what_the_script_computes_from_the_recorded_pools(capsys):
    spec = importlib.util.spec_from_file_location(
        "machine_spread_script", ROOT / "scripts" / "machine_spread.py"
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    pools = sorted(POOLS.glob("pool_*.tgz"))
    assert script.main([*map(str, pools), "--check"]) == 0, capsys.readouterr().out


def test_every_entry_of_the_shipped_table_has_two_machines_and_its_provenance():
    table = load_table()
    prov = table["provenance"]
    assert prov["command"].startswith("python3 scripts/machine_spread.py docs/data/gate_pools/pool_a.tgz")
    used = [p for p in prov["pools"] if p["used"]]
    assert {p["kind"] for p in used} == {"aa"}  # slowdowns and changed settings are not machines
    assert all((POOLS / f"{p['pool']}.tgz").is_file() for p in prov["pools"])
    for model, entry in table["models"].items():
        assert {p["machine"] for p in used if p["gpu_model"] == model} == set(entry["machines"])
        for figs in entry["figures"].values():
            for e in figs.values():
                assert e["machines"] >= 2 and e["runs"] > e["machines"] and e["sigma_machine"] >= 0


def test_the_measured_h100_spread():
    table = load_table()
    h100 = table["models"]["NVIDIA H100 80GB HBM3"]["summary"]
    assert (h100["figures"], h100["machines"]) == (343, 5)
    assert h100["above"] == {"0.01": 112, "0.02": 70, "0.05": 33}
    bench = "benchmarks/hw_queue/test_hetero_kernels.py::test_hetero_kernels[streams16-breadth]"
    device = spread_for(table, "NVIDIA H100 80GB HBM3", bench, "device_ms")
    assert device.measured and device.sigma == pytest.approx(0.0118, abs=1e-4)
