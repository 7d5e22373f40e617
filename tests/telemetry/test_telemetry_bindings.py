"""The NVML and amdsmi sources against stand-in binding modules (the real ones need a GPU): the calls
they make, the units they convert, and figures a device does not support recorded as missing."""

import sys
import time
import types
from types import SimpleNamespace

import pytest

from aorta.telemetry.sources import AmdSmiSource, NvmlSource, open_source


class NVMLError(Exception):
    pass


def fake_pynvml(power_mw=650_000, reasons=0x4, by_pci=None):
    calls = []
    m = types.ModuleType("pynvml")
    m.NVML_CLOCK_SM, m.NVML_CLOCK_MEM, m.NVML_TEMPERATURE_GPU = 1, 2, 0
    m.nvmlInit = lambda: calls.append("init")
    m.nvmlShutdown = lambda: calls.append("shutdown")
    m.nvmlDeviceGetHandleByIndex = lambda i: ("index", i)

    def by_pci_id(bus_id):
        calls.append(("pci", bus_id))
        return ("pci", bus_id)

    m.nvmlDeviceGetHandleByPciBusId = by_pci or by_pci_id
    m.nvmlDeviceGetClockInfo = lambda h, kind: {1: 1755, 2: 2619}[kind]
    m.nvmlDeviceGetMaxClockInfo = lambda h, kind: {1: 1980, 2: 2619}[kind]
    m.nvmlDeviceGetPowerUsage = lambda h: power_mw
    m.nvmlDeviceGetEnforcedPowerLimit = lambda h: 700_000
    m.nvmlDeviceGetTemperature = lambda h, sensor: 66

    def util(h):
        raise NVMLError("Not Supported")

    m.nvmlDeviceGetUtilizationRates = util
    m.nvmlDeviceGetCurrentClocksEventReasons = lambda h: reasons
    return m, calls


def test_nvml_source_reads_the_gpu_torch_uses_by_pci_bus_id(monkeypatch):
    module, calls = fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", module)
    src = NvmlSource(0, "00000000:19:00.0")
    sample = src.read(time.perf_counter)
    assert ("pci", "00000000:19:00.0") in calls
    assert (sample.sm_clock_mhz, sample.mem_clock_mhz, sample.temperature_c) == (1755, 2619, 66)
    assert sample.power_w == 650.0  # NVML reports mW
    assert sample.gpu_util_pct is None  # unsupported: missing, not zero, and not fatal
    assert sample.throttle_reasons == ("sw_power_cap",)
    limits = src.limits()
    assert (limits.sm_clock_max_mhz, limits.power_limit_w) == (1980, 700.0)
    src.close()
    assert calls[-1] == "shutdown"


def test_nvml_source_retries_the_bus_id_as_bytes_for_older_bindings(monkeypatch):
    def bytes_only(bus_id):
        if not isinstance(bus_id, bytes):
            raise TypeError("bytes or integer address expected instead of str instance")
        return ("pci", bus_id)

    module, _ = fake_pynvml(by_pci=bytes_only)
    monkeypatch.setitem(sys.modules, "pynvml", module)
    assert NvmlSource(0, "00000000:19:00.0")._h == ("pci", b"00000000:19:00.0")


def test_open_source_prefers_nvml_and_falls_back_with_reasons(monkeypatch):
    module, _ = fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", module)
    source, reason = open_source("cuda", 0)
    assert source.name == "nvml" and reason is None
    monkeypatch.setitem(sys.modules, "pynvml", None)  # not installed
    monkeypatch.setenv("PATH", "/nonexistent")
    source, reason = open_source("cuda", 0)
    assert source is None
    assert "nvml: not installed (pip install nvidia-ml-py)" in reason and "nvidia-smi not found" in reason


def fake_amdsmi():
    m = types.ModuleType("amdsmi")
    m.AmdSmiClkType = SimpleNamespace(GFX="gfx", MEM="mem")
    m.AmdSmiTemperatureType = SimpleNamespace(HOTSPOT="hotspot")
    m.AmdSmiTemperatureMetric = SimpleNamespace(CURRENT="current")
    m.amdsmi_init = lambda: None
    m.amdsmi_shut_down = lambda: None
    m.amdsmi_get_processor_handles = lambda: ["gpu0", "gpu1"]
    m.amdsmi_get_processor_handle_from_bdf = lambda bdf: ("bdf", bdf)
    m.amdsmi_get_clock_info = lambda h, kind: {
        "gfx": {"clk": 2100, "min_clk": 500, "max_clk": 2100},
        "mem": {"clk": 1300, "min_clk": 900, "max_clk": 1300},
    }[kind]
    m.amdsmi_get_power_info = lambda h: {"current_socket_power": "N/A", "average_socket_power": 610}
    m.amdsmi_get_gpu_activity = lambda h: {"gfx_activity": 99, "umc_activity": 40, "mm_activity": "N/A"}
    m.amdsmi_get_temp_metric = lambda h, kind, metric: 71
    m.amdsmi_get_power_cap_info = lambda h: {"power_cap": 750_000_000}  # µW
    return m


def test_amdsmi_source(monkeypatch):
    monkeypatch.setitem(sys.modules, "amdsmi", fake_amdsmi())
    src = AmdSmiSource(1, "00000000:C1:00.0")
    assert src._h == ("bdf", "0000:c1:00.0")
    sample = src.read(time.perf_counter)
    assert (sample.sm_clock_mhz, sample.mem_clock_mhz, sample.power_w) == (2100, 1300, 610)
    assert (sample.temperature_c, sample.gpu_util_pct, sample.mem_util_pct) == (71, 99, 40)
    assert sample.throttle_reasons is None
    limits = src.limits()
    assert (limits.sm_clock_max_mhz, limits.power_limit_w) == (2100, 750.0)
    assert AmdSmiSource(1)._h == "gpu1"


@pytest.mark.parametrize("backend", ["cpu"])
def test_no_gpu_no_source(backend):
    assert open_source(backend, 0) == (None, "cpu backend: no GPU to sample")


def test_gpu_inventory_keeps_what_it_can_read_and_says_what_it_cannot(monkeypatch):
    from aorta.telemetry.inventory import gpu_inventory

    module, _ = fake_pynvml()
    module.nvmlSystemGetDriverVersion = lambda: b"580.159.03"
    monkeypatch.setitem(sys.modules, "pynvml", module)
    monkeypatch.setenv("PATH", "/nonexistent")  # no nvidia-smi: no topology
    facts = gpu_inventory("cuda", 0, "00000000:19:00.0")
    assert facts["source"] == "nvml" and facts["driver_version"] == "580.159.03"
    assert facts["sm_clock_max_mhz"] == 1980 and facts["power_limit_w"] == 700.0
    assert facts["telemetry_source"] == "nvml" and facts["telemetry_limits"]["sm_clock_max_mhz"] == 1980
    assert "AttributeError" in facts["unavailable"]["vbios_version"]  # this stand-in lacks it
    assert facts["unavailable"]["topology"] == "not reported"
