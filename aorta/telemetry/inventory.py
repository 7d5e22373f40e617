"""Static GPU facts for machine_info: clocks, power limit, ECC, PCIe link, topology, driver.

Vendor calls (NVML, amdsmi, nvidia-smi, rocm-smi), like ``sources``. Each fact that cannot be read is
left out and the reason listed under ``unavailable``; nothing here ever raises.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

from aorta.telemetry import parse
from aorta.telemetry.sources import nvml_handle, open_source, run_tool

NVSMI_STATIC_FIELDS = (
    "name",
    "driver_version",
    "vbios_version",
    "clocks.max.sm",
    "clocks.max.mem",
    "power.limit",
    "power.default_limit",
    "ecc.mode.current",
    "pcie.link.gen.max",
    "pcie.link.width.max",
    "pcie.link.gen.current",
    "pcie.link.width.current",
    "pci.bus_id",
)


def _try(facts: dict, missing: dict, key: str, fn: Callable[[], object]) -> None:
    try:
        value = fn()
    except Exception as exc:  # one unreadable fact must not lose the others
        missing[key] = f"{type(exc).__name__}: {exc}"
        return
    if value is None:
        missing[key] = "not reported"
    else:
        facts[key] = value


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _nvml_facts(index: int, pci_bus_id: str | None, facts: dict, missing: dict) -> None:
    import pynvml

    nv = pynvml
    nv.nvmlInit()
    try:
        h = nvml_handle(nv, index, pci_bus_id)
        _try(facts, missing, "driver_version", lambda: _text(nv.nvmlSystemGetDriverVersion()))
        _try(facts, missing, "cuda_driver_version", lambda: nv.nvmlSystemGetCudaDriverVersion())
        _try(facts, missing, "vbios_version", lambda: _text(nv.nvmlDeviceGetVbiosVersion(h)))
        _try(facts, missing, "sm_clock_max_mhz", lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM))
        _try(facts, missing, "mem_clock_max_mhz", lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM))
        _try(
            facts,
            missing,
            "sm_clock_applications_mhz",  # the clock set by `nvidia-smi -ac` (the target under load)
            lambda: nv.nvmlDeviceGetApplicationsClock(h, nv.NVML_CLOCK_SM),
        )
        _try(facts, missing, "power_limit_w", lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3)
        _try(
            facts,
            missing,
            "power_default_limit_w",
            lambda: nv.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1e3,
        )
        _try(facts, missing, "ecc_enabled", lambda: bool(nv.nvmlDeviceGetEccMode(h)[0]))
        _try(facts, missing, "persistence_mode", lambda: bool(nv.nvmlDeviceGetPersistenceMode(h)))
        _try(facts, missing, "pcie_link_gen_max", lambda: nv.nvmlDeviceGetMaxPcieLinkGeneration(h))
        _try(facts, missing, "pcie_link_width_max", lambda: nv.nvmlDeviceGetMaxPcieLinkWidth(h))
        _try(facts, missing, "pcie_link_gen_current", lambda: nv.nvmlDeviceGetCurrPcieLinkGeneration(h))
        _try(facts, missing, "pcie_link_width_current", lambda: nv.nvmlDeviceGetCurrPcieLinkWidth(h))
    finally:
        nv.nvmlShutdown()


def _nvidia_smi_facts(index: int, pci_bus_id: str | None, facts: dict, missing: dict) -> None:
    out = run_tool(
        [
            "nvidia-smi",
            f"--query-gpu={','.join(NVSMI_STATIC_FIELDS)}",
            "--format=csv,noheader,nounits",
            "-i",
            pci_bus_id or str(index),
        ]
    )
    facts.update(nvidia_smi_static(out))


def nvidia_smi_static(text: str) -> dict:
    """One GPU's ``NVSMI_STATIC_FIELDS`` csv line as machine_info facts (numbers where they are numbers)."""
    row = parse.parse_nvidia_smi_csv(text, NVSMI_STATIC_FIELDS)[0]
    out: dict = {}
    for key, value in row.items():
        number = parse.number_or_none(value)
        out[key.replace(".", "_")] = number if number is not None else value
    return out


def _amdsmi_facts(index: int, pci_bus_id: str | None, facts: dict, missing: dict) -> None:
    import amdsmi

    a = amdsmi
    a.amdsmi_init()
    try:
        h = a.amdsmi_get_processor_handles()[index]
        _try(facts, missing, "driver", lambda: a.amdsmi_get_gpu_driver_info(h))
        _try(facts, missing, "vbios", lambda: a.amdsmi_get_gpu_vbios_info(h))
        _try(
            facts,
            missing,
            "sm_clock_max_mhz",
            lambda: a.amdsmi_get_clock_info(h, a.AmdSmiClkType.GFX)["max_clk"],
        )
        _try(
            facts,
            missing,
            "mem_clock_max_mhz",
            lambda: a.amdsmi_get_clock_info(h, a.AmdSmiClkType.MEM)["max_clk"],
        )
        _try(facts, missing, "power_cap", lambda: a.amdsmi_get_power_cap_info(h))
        _try(facts, missing, "ecc_enabled_blocks", lambda: str(a.amdsmi_get_gpu_ecc_enabled(h)))
        _try(facts, missing, "pcie", lambda: a.amdsmi_get_pcie_info(h))
    finally:
        a.amdsmi_shut_down()


def _rocm_smi_facts(index: int, pci_bus_id: str | None, facts: dict, missing: dict) -> None:
    out = run_tool(
        [
            "rocm-smi",
            "-d",
            str(index),
            "--showproductname",
            "--showdriverversion",
            "--showmaxpower",
            "--showvbios",
            "--showbus",
            "--json",
        ]
    )
    cards = parse.parse_rocm_smi_json(out)
    facts["rocm_smi"] = cards.get(index, {})
    facts["power_limit_w"] = parse.rocm_smi_power_limit_w(facts["rocm_smi"])


def _topology(backend: str) -> str | None:
    cmd = {"cuda": ["nvidia-smi", "topo", "-m"], "rocm": ["rocm-smi", "--showtopo"]}.get(backend)
    if cmd is None or shutil.which(cmd[0]) is None:
        return None
    return parse.strip_ansi(run_tool(cmd)).strip()


def gpu_inventory(backend: str, index: int, pci_bus_id: str | None = None) -> dict:
    """Static facts about the GPU at ``index`` / ``pci_bus_id``, with ``source`` and ``unavailable``."""
    facts: dict = {"pci_bus_id": pci_bus_id}
    missing: dict[str, str] = {}
    readers = {
        "cuda": (("nvml", _nvml_facts), ("nvidia-smi", _nvidia_smi_facts)),
        "rocm": (("amdsmi", _amdsmi_facts), ("rocm-smi", _rocm_smi_facts)),
    }.get(backend, ())
    failures = []
    for name, reader in readers:
        try:
            reader(index, pci_bus_id, facts, missing)
            facts["source"] = name
            break
        except Exception as exc:
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
    else:
        missing["gpu_facts"] = "; ".join(failures) or f"{backend} backend: no GPU"
    _try(facts, missing, "topology", lambda: _topology(backend))
    if backend in ("cuda", "rocm"):
        source, reason = open_source(backend, index, pci_bus_id)
        if source is None:
            missing["telemetry_limits"] = reason or "no source"
        else:
            try:
                facts["telemetry_limits"] = source.limits().as_dict()
                facts["telemetry_source"] = source.name
            finally:
                source.close()
    facts["unavailable"] = missing
    return facts
