"""The collective sweep's rounds start together on every rank: each round's plan carries a round barrier, a
one-element all-reduce, so no round times one rank waiting for another's launch (pure: no process group)."""

from types import SimpleNamespace

import torch

from aorta.device import Device
from aorta.fsdp import collective_sweep


def test_every_sweep_round_starts_behind_a_one_element_all_reduce(monkeypatch):
    plans, reduced = [], []

    def fake_time_rounds(device, streams, step, plan, record_intervals):
        plans.append(plan)
        return SimpleNamespace(per_iteration_ms=[1.0] * plan.rounds)

    monkeypatch.setattr(collective_sweep, "time_rounds", fake_time_rounds)
    monkeypatch.setattr(collective_sweep.dist, "all_reduce", lambda t: reduced.append(t))
    env = SimpleNamespace(
        world_size=2,
        device=Device.open("cpu"),
        exchange=lambda key, mine: [mine, mine] if key.endswith("ms") else [mine],
    )
    point = collective_sweep.measure_point(env, "all_reduce", 1 << 12, warmup=1, rounds=3)
    (plan,) = plans
    assert plan.round_barrier is not None and plan.iterations_per_round == collective_sweep.iterations_for(
        1 << 12
    )
    plan.round_barrier()
    (flag,) = reduced
    assert isinstance(flag, torch.Tensor) and flag.numel() == 1
    assert point["ms_per_op"] == [1.0, 1.0, 1.0]
