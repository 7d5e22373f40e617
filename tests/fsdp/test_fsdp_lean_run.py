"""A gate's lean repeat run of the FSDP suite (``--aorta-lean-run``): it times what the gate judges and nothing
the check run already proved. A scenario's first step runs unchecked as a warm-up step (every later step is the
full run's); the collective sweep times its judged point only; every benchmark says where its host wall went."""

from __future__ import annotations

import pytest
import torch

from aorta.fsdp import collective_sweep as sweep
from aorta.fsdp.config import load_config
from aorta.fsdp.distributed import init_dist
from aorta.fsdp.figures import build_result
from aorta.fsdp.measure import LEAN_RUN, run_rank
from aorta.fsdp.profiling import NO_KERNELS_ON_CPU
from aorta.fsdp.scenarios import get_scenario
from aorta.record.host_phases import by_kind


@pytest.fixture(scope="module")
def one_rank():
    torch.set_num_threads(1)
    env = init_dist("cpu", 60.0, environ={})  # a real one-rank gloo group, as `pytest benchmarks/fsdp` makes
    yield env
    env.shutdown()


def _run(env, tmp_path, lean: bool):
    cfg = load_config(None, [], smoke=True)
    return run_rank(get_scenario("baseline"), cfg, env, tmp_path, lean=lean), cfg


def test_a_lean_scenario_leaves_the_first_step_unchecked_and_times_the_same_steps(one_rank, tmp_path):
    (full, full_records), cfg = _run(one_rank, tmp_path, lean=False)
    (lean, lean_records), _ = _run(one_rank, tmp_path, lean=True)
    assert full.check is not None and full.lean_run is None
    assert lean.check is None and lean.lean_run == LEAN_RUN
    assert "check" in full.host_phase_s and "check" not in lean.host_phase_s
    assert "first_step" in lean.host_phase_s
    assert len(lean.step_ms) == len(full.step_ms) == cfg.training.steps
    phases = [[r["phase"] for r in recs if r["kind"] == "step"] for recs in (full_records, lean_records)]
    assert phases[0][0] == "check" and phases[1][0] == "warmup"  # the first step: checked, or a warm-up step
    # then the same timed steps; on CPU no profiled steps in a lean run: they would give no figure
    assert phases[0][1:] == [*phases[1][1:], *["profiled"] * cfg.profiling.active]
    assert "profiled_steps" in full.host_phase_s and "profiled_steps" not in lean.host_phase_s
    assert lean.overlap_reason == lean.slowdown_reason == NO_KERNELS_ON_CPU == full.overlap_reason


def test_every_phase_of_a_scenario_is_in_its_record_with_its_kind(one_rank, tmp_path):
    (result, _), cfg = _run(one_rank, tmp_path, lean=False)
    assert list(result.host_phase_s) == [
        "setup",
        "check",
        "timed_steps",
        "telemetry",
        "profiled_steps",
        "trace_analysis",
        "reference_pass",
        "records",
    ]
    (result, _), cfg = _run(one_rank, tmp_path, lean=True)
    _, record = build_result(
        {"id": "baseline"},
        [result],
        world_size=1,
        seq_len=cfg.dataset.seq_len,
        backend="cpu",
        comm_library="gloo",
        config={},
    )
    assert record.details["lean_run"] == LEAN_RUN  # what the gate's baseline reads as a lean entry
    phases = record.details["host_phase_s"]
    assert list(phases) == ["setup", "first_step", "timed_steps", "telemetry", "records"]  # on CPU
    kinds = by_kind(phases)
    assert kinds["timed"] == pytest.approx(phases["timed_steps"], abs=1e-3)
    assert kinds["setup"] == pytest.approx(
        phases["setup"] + phases["first_step"] + phases["records"], abs=1e-3
    )
    assert sum(kinds.values()) == pytest.approx(sum(phases.values()), abs=1e-3)


def test_the_sweep_times_its_judged_point_last_and_a_lean_run_that_point_alone():
    sizes = (1 << 16, 1 << 12)
    full = sweep.points(sizes)
    assert len(full) == 3 * 2 and full[-1] == ("all_reduce", 1 << 16) == sweep.judged_point(sizes)
    assert full[:2] == [("all_gather", 1 << 12), ("all_gather", 1 << 16)]  # sizes ascending, kind by kind
    assert sweep.points(sizes, lean=True) == [("all_reduce", 1 << 16)]
    with pytest.raises(ValueError, match="must include 'all_reduce'"):
        sweep.points(sizes, kinds=("all_gather",))
