"""A run's environment fingerprint: the facts that decide its figures, grouped so two runs can be diffed
(pure: no torch). Read from what the run recorded in ``machine_info["aorta"]`` (aorta/environment/machine.py).

Groups: ``versions`` (driver, CUDA/HIP, torch, NCCL/RCCL, math libraries), ``settings`` (the scheduling
environment variables), ``hardware`` (GPU model and count, clocks, power limit) and ``sweep`` (the
``aorta sweep`` cell's settings). Versions differ between stacks on purpose; settings are what a comparison
must hold equal unless told otherwise (the gate refuses otherwise, see ``unintended_settings``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping

# The cell a run belongs to, as JSON: set by ``aorta sweep`` (aorta/sweep/runner.py), recorded in the run's
# machine info (aorta/environment/machine.py), read back here as the ``sweep`` group.
CELL_ENV_VAR = "AORTA_SWEEP_CELL"
VERSION_KEYS = ("driver", "cuda", "hip", "torch", "nccl", "rccl")
HARDWARE_KEYS = ("gpu_name", "gpu_count")
GPU_FACTS = (
    "sm_clock_max_mhz",
    "mem_clock_max_mhz",
    "sm_clock_applications_mhz",
    "power_limit_w",
    "power_default_limit_w",
)
# Recorded with the scheduling variables but not settings of the measured work: logging and which GPUs
# are visible (runs on GPU 0 and on GPU 3 compare fine).
NOT_SETTINGS = (
    "NCCL_DEBUG",
    "NCCL_DEBUG_SUBSYS",
    "NCCL_DEBUG_FILE",
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
)
UNSET = "unset"
# Set by the launcher itself when the user did not: torchrun's agent gives every rank
# TORCH_NCCL_ASYNC_ERROR_HANDLING=1 (torch/distributed/elastic/agent/server/local_elastic_agent.py). That
# value against unset is the launcher, not a setting; any other value still is one.
LAUNCHER_DEFAULTS = {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}


def launcher_default(name: str, a: object, b: object) -> bool:
    """One side unset and the other the value a launcher sets by itself."""
    default = LAUNCHER_DEFAULTS.get(name)
    return default is not None and {a, b} == {None, default}


def without_launcher_defaults(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` less the variables that hold the value their launcher sets by itself."""
    return {k: v for k, v in env.items() if LAUNCHER_DEFAULTS.get(k) != v}


def _text(v: object) -> str:
    return "-" if v is None or v == "" else str(v)


def _mapping(v: object) -> Mapping:
    return v if isinstance(v, Mapping) else {}


def fingerprint(machine: Mapping) -> dict[str, dict[str, str]]:
    """``{"versions": {...}, "settings": {...}, "hardware": {...}, "sweep": {...}}``, every value a string."""
    versions = {k: _text(machine.get(k)) for k in VERSION_KEYS if machine.get(k) is not None}
    versions.update({k: _text(v) for k, v in sorted((machine.get("math_libraries") or {}).items())})
    gpu = _mapping(machine.get("gpu"))
    hardware = {k: _text(machine.get(k)) for k in HARDWARE_KEYS if machine.get(k) is not None}
    hardware.update({k: _text(gpu.get(k)) for k in GPU_FACTS if gpu.get(k) is not None})
    cell = _mapping(machine.get("sweep_cell"))
    return {
        "versions": versions,
        "settings": {k: _text(v) for k, v in sorted((machine.get("env") or {}).items())},
        "hardware": hardware,
        "sweep": {k: _text(v) for k, v in (cell.get("settings") or {}).items()},
    }


def differences(fingerprints: Mapping[str, Mapping[str, Mapping[str, str]]]) -> list[dict]:
    """Rows ``{"group", "name", "values": {label: value}}`` for every fact that is not the same in all runs
    (a fact one run lacks reads "unset" for settings, "-" otherwise)."""
    rows = []
    groups = dict.fromkeys(g for fp in fingerprints.values() for g in fp)
    for group in groups:
        names = sorted({n for fp in fingerprints.values() for n in fp.get(group, {})})
        missing = UNSET if group == "settings" else "-"
        for name in names:
            values = {label: fp.get(group, {}).get(name, missing) for label, fp in fingerprints.items()}
            if len(set(values.values())) > 1:
                rows.append({"group": group, "name": name, "values": values})
    return rows


def _allowed(name: str, allowed: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in allowed)


def unintended_settings(
    ref_machine: Mapping, cand_machine: Mapping, allowed: Iterable[str] = ()
) -> list[tuple[str, str, str]]:
    """(variable, baseline value, candidate value) for each scheduling setting that differs and was not
    named as intended (``allowed``: names or globs, ``*`` for all). A run that recorded no ``env`` at all
    (a record older than the scheduling variables) cannot be judged: nothing is returned for it."""
    if "env" not in ref_machine or "env" not in cand_machine:
        return []
    allowed = list(allowed)
    a, b = ref_machine.get("env") or {}, cand_machine.get("env") or {}
    out = []
    for name in sorted(set(a) | set(b)):
        if (
            name in NOT_SETTINGS
            or _allowed(name, allowed)
            or launcher_default(name, a.get(name), b.get(name))
        ):
            continue
        if a.get(name) != b.get(name):
            out.append((name, _text(a.get(name, UNSET)), _text(b.get(name, UNSET))))
    return out


def parse_allowed(values: Iterable[str]) -> list[str]:
    """``--aorta-allow-env-diff NAME[,NAME...]`` (repeatable) -> names and globs."""
    return [name.strip() for text in values for name in str(text).split(",") if name.strip()]


def describe(diffs: Iterable[tuple[str, str, str]]) -> str:
    return ", ".join(f"{name} {a} -> {b}" for name, a, b in diffs)
