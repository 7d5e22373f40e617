"""Environment variables a sweep knows, and what values each accepts (pure: a table of validators).

A grid value the library would reject or silently ignore is caught before the first cell runs: the error
names the option, the variable, the value and what is allowed. A variable not in the table is passed as
given, with a note. Sources: NCCL's environment-variable documentation (``NCCL_*``), PyTorch's
ProcessGroupNCCL (``TORCH_NCCL_*``), CUDA's programming guide (``CUDA_DEVICE_MAX_CONNECTIONS``: 1 to 32) and
HIP's (``GPU_MAX_HW_QUEUES``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aorta.sweep.grid import Axis, SweepUsageError

NCCL_ALGOS = ("Ring", "Tree", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
NCCL_PROTOS = ("LL", "LL128", "Simple")
NCCL_COLLECTIVES = ("allreduce", "allgather", "reducescatter", "broadcast", "reduce", "sendrecv")
NCCL_DEBUG_LEVELS = ("VERSION", "WARN", "INFO", "TRACE", "ABORT")


@dataclass(frozen=True)
class Rule:
    """``check(value)`` is True when ``value`` is accepted; ``allowed`` says what is, in words."""

    check: Callable[[str], bool]
    allowed: str


def _int_in(lo: int, hi: int | None = None, step: int = 1) -> Rule:
    def check(v: str) -> bool:
        try:
            n = int(v, 10)
        except ValueError:
            return False
        return n >= lo and (hi is None or n <= hi) and n % step == 0

    if hi is None:
        words = f"an integer >= {lo}"
    elif step > 1:
        words = f"a multiple of {step} from {lo} to {hi}"
    else:
        words = f"an integer from {lo} to {hi}"
    return Rule(check, words)


def _one_of(choices: Sequence[str], *, case: bool = True) -> Rule:
    def check(v: str) -> bool:
        return v in choices if case else v.upper() in {c.upper() for c in choices}

    return Rule(check, "one of " + ", ".join(choices))


def _name_list(names: Sequence[str], what: str) -> Rule:
    """NCCL's list syntax: ``Ring,Tree``, ``^NVLS`` (all but), and per collective ``allreduce:tree;...``."""
    known = {n.lower() for n in names}

    def check(v: str) -> bool:
        for part in v.split(";"):
            op, sep, body = part.rpartition(":")
            if sep and op.strip().lower() not in NCCL_COLLECTIVES:
                return False
            items = [x.strip().lower() for x in body.lstrip("^").split(",")]
            if not items or any(x not in known for x in items):
                return False
        return True

    return Rule(
        check,
        f"a comma-separated list of {what} ({', '.join(names)}), '^' in front to exclude them, "
        f"or per collective: allreduce:{names[0]};allgather:{names[1]}",
    )


SWITCH = _one_of(("0", "1"))
POSITIVE = _int_in(1)

KNOWN: dict[str, Rule] = {
    "NCCL_NTHREADS": _int_in(64, 1024, 64),  # NCCL: 64, 128, 256, 512; RCCL builds go to 1024
    "NCCL_MAX_NCHANNELS": POSITIVE,
    "NCCL_MIN_NCHANNELS": POSITIVE,
    "NCCL_MAX_CTAS": POSITIVE,
    "NCCL_MIN_CTAS": POSITIVE,
    "NCCL_BUFFSIZE": POSITIVE,
    "NCCL_NCHANNELS_PER_NET_PEER": POSITIVE,
    "NCCL_ALGO": _name_list(NCCL_ALGOS, "algorithms"),
    "NCCL_PROTO": _name_list(NCCL_PROTOS, "protocols"),
    "NCCL_DEBUG": _one_of(NCCL_DEBUG_LEVELS, case=False),
    "NCCL_NVLS_ENABLE": SWITCH,
    "NCCL_P2P_DISABLE": SWITCH,
    "NCCL_SHM_DISABLE": SWITCH,
    "NCCL_IB_DISABLE": SWITCH,
    "NCCL_CUMEM_ENABLE": SWITCH,
    "RCCL_MSCCL_ENABLE": SWITCH,
    "RCCL_MSCCLPP_ENABLE": SWITCH,
    "TORCH_NCCL_HIGH_PRIORITY": SWITCH,
    "TORCH_NCCL_AVOID_RECORD_STREAMS": SWITCH,
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": _one_of(("0", "1", "2", "3")),
    "CUDA_DEVICE_MAX_CONNECTIONS": _int_in(1, 32),
    "CUDA_LAUNCH_BLOCKING": SWITCH,
    "GPU_MAX_HW_QUEUES": POSITIVE,
    "HSA_ENABLE_SDMA": SWITCH,
    "HSA_NO_SCRATCH_RECLAIM": SWITCH,
}


def check_env_axes(axes: Sequence[Axis]) -> list[str]:
    """Raise ``SweepUsageError`` on the first value a known variable does not accept; return one note per
    variable aorta does not know (passed as given)."""
    notes = []
    for axis in axes:
        if axis.kind != "env":
            continue
        rule = KNOWN.get(axis.name)
        if rule is None:
            notes.append(f"--grid {axis.name}: not in aorta's table of known variables; passed as given")
            continue
        for value in axis.values:
            if not rule.check(value):
                raise SweepUsageError(
                    f"--grid {axis.name}={','.join(axis.values)}: {value!r} is not a valid "
                    f"{axis.name}; allowed: {rule.allowed}"
                )
    return notes
