"""FSDP overlap scenarios as data (pure: no torch). The pytest id is ``Scenario.id``: stable across runs,
so baselines keep matching."""

from __future__ import annotations

from dataclasses import dataclass

WRAPPERS = ("fsdp", "ddp")


@dataclass(frozen=True, kw_only=True)
class Scenario:
    id: str
    description: str
    wrapper: str = "fsdp"
    fp32: bool = False  # fp32 params, compute and reduction (no MixedPrecisionPolicy casting)
    explicit_prefetch: bool = False  # set_modules_to_forward_prefetch / set_modules_to_backward_prefetch
    reshard_after_forward: bool = True
    grad_accum: bool = False  # training.grad_accum_steps micro-batches, gradient sync on the last only
    compile: bool = False  # torch.compile each block
    comm_stress: bool = False  # extra all-reduces per block and a device->host copy per step

    def __post_init__(self) -> None:
        if not self.id or not self.id.replace("_", "").isalnum():
            raise ValueError(f"scenario id {self.id!r}: use letters, digits and '_' only")
        if self.wrapper not in WRAPPERS:
            raise ValueError(f"scenario {self.id}: wrapper {self.wrapper!r} not in {WRAPPERS}")
        if self.wrapper == "ddp" and (self.explicit_prefetch or not self.reshard_after_forward):
            raise ValueError(f"scenario {self.id}: prefetch and resharding are FSDP options, not DDP ones")


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        id="baseline",
        description="FSDP2 on each block and the root, implicit prefetch, bf16 MixedPrecisionPolicy",
    ),
    Scenario(
        id="explicit_prefetch",
        explicit_prefetch=True,
        description="forward and backward prefetch of the next block(s) set explicitly",
    ),
    Scenario(
        id="no_reshard",
        reshard_after_forward=False,
        description="reshard_after_forward=False: parameters stay gathered between forward and backward",
    ),
    Scenario(id="fp32", fp32=True, description="fp32 parameters, compute and gradient reduction"),
    Scenario(
        id="grad_accum",
        grad_accum=True,
        description="gradient accumulation over micro-batches, gradient sync only on the last",
    ),
    Scenario(id="compile", compile=True, description="torch.compile of each block"),
    Scenario(
        id="ddp", wrapper="ddp", description="DistributedDataParallel with gradient buckets (comparison)"
    ),
    Scenario(
        id="comm_stress",
        comm_stress=True,
        description="extra all-reduces per block and a device->host copy per step (starves overlap)",
    ),
)

_BY_ID = {s.id: s for s in SCENARIOS}


def get_scenario(scenario_id: str) -> Scenario:
    try:
        return _BY_ID[scenario_id]
    except KeyError:
        raise KeyError(f"unknown scenario {scenario_id!r}; valid ids: {', '.join(_BY_ID)}") from None
