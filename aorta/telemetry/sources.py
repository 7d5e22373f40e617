"""Where samples come from: NVML or amdsmi through their Python bindings, else the command-line tools.

This module (with ``inventory``) is where vendor monitoring calls live. A source reads the GPU's
counters only: it launches no GPU work, so sampling does not disturb the measurement beyond a few
microseconds of host time per read (the bindings release the GIL inside their C calls).

``open_source`` tries, in order, NVML then ``nvidia-smi`` on NVIDIA, amdsmi then ``rocm-smi`` on AMD,
and returns the first that reads, or ``None`` with the reason each one failed.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

from aorta.telemetry import parse
from aorta.telemetry.sample import Limits, Sample
from aorta.telemetry.throttle import decode_nvml_reasons

T = TypeVar("T")

SOURCES = ("nvml", "nvidia-smi", "amdsmi", "rocm-smi")
SOURCES_BY_BACKEND = {"cuda": ("nvml", "nvidia-smi"), "rocm": ("amdsmi", "rocm-smi")}
TOOL_TIMEOUT_S = 10.0

Runner = Callable[[list[str]], str]


def run_tool(cmd: list[str]) -> str:
    """stdout of ``cmd``; raises ``RuntimeError`` naming the command on any failure."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        raise RuntimeError(f"{cmd[0]}: {exc}") from None
    if done.returncode != 0:
        msg = (done.stderr or done.stdout).strip().splitlines()
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}: {msg[0] if msg else ''}")
    return done.stdout


def _none_on_error(fn: Callable[[], T]) -> T | None:
    try:
        return fn()
    except Exception:  # a figure the device does not support is recorded as missing, not fatal
        return None


# --------------------------------------------------------------------------- NVIDIA
def nvml_handle(nv, index: int, pci_bus_id: str | None):
    """The NVML handle of the GPU torch calls ``index``: found by PCI bus id where torch gives one (NVML
    numbers GPUs in PCI order, ignoring ``CUDA_VISIBLE_DEVICES``), else by index."""
    if pci_bus_id:
        for key in (pci_bus_id, pci_bus_id.encode()):  # older bindings want bytes
            try:
                return nv.nvmlDeviceGetHandleByPciBusId(key)
            except TypeError:
                continue
    return nv.nvmlDeviceGetHandleByIndex(index)


class NvmlSource:
    name = "nvml"

    def __init__(self, index: int, pci_bus_id: str | None = None):
        import pynvml  # nvidia-ml-py

        self._nv = pynvml
        pynvml.nvmlInit()
        try:
            self._h = nvml_handle(pynvml, index, pci_bus_id)
        except Exception:
            pynvml.nvmlShutdown()
            raise
        get = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._reasons = get or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons

    def limits(self) -> Limits:
        nv, h = self._nv, self._h
        return Limits(
            sm_clock_max_mhz=_none_on_error(lambda: float(nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM))),
            mem_clock_max_mhz=_none_on_error(
                lambda: float(nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM))
            ),
            power_limit_w=_none_on_error(lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3),
        )

    def read(self, clock: Callable[[], float]) -> Sample:
        nv, h = self._nv, self._h
        t0 = clock()
        util = _none_on_error(lambda: nv.nvmlDeviceGetUtilizationRates(h))
        reasons = _none_on_error(lambda: self._reasons(h))
        sample = Sample(
            t_s=0.0,
            sm_clock_mhz=_none_on_error(lambda: float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))),
            mem_clock_mhz=_none_on_error(lambda: float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM))),
            power_w=_none_on_error(lambda: nv.nvmlDeviceGetPowerUsage(h) / 1e3),
            temperature_c=_none_on_error(
                lambda: float(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
            ),
            gpu_util_pct=float(util.gpu) if util is not None else None,
            mem_util_pct=float(util.memory) if util is not None else None,
            throttle_reasons=decode_nvml_reasons(int(reasons)) if reasons is not None else None,
        )
        return _stamped(sample, (t0 + clock()) / 2)

    def close(self) -> None:
        self._nv.nvmlShutdown()


class NvidiaSmiSource:
    """``nvidia-smi --query-gpu`` once per sample (tens of ms per call: the interval stretches to fit)."""

    name = "nvidia-smi"

    def __init__(self, index: int, pci_bus_id: str | None = None, runner: Runner = run_tool):
        if runner is run_tool and shutil.which("nvidia-smi") is None:
            raise RuntimeError("nvidia-smi not found on PATH")
        self._run = runner
        self._id = pci_bus_id or str(index)
        self._fields = parse.NVSMI_SAMPLE_FIELDS
        try:
            self._query(self._fields)
        except RuntimeError:  # drivers before 535 name the reasons field clocks_throttle_reasons
            self._fields = (*parse.NVSMI_SAMPLE_FIELDS[:-1], parse.NVSMI_LEGACY_REASONS_FIELD)
            self._query(self._fields)

    def _query(self, fields: tuple[str, ...]) -> dict[str, str]:
        out = self._run(
            ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits", "-i", self._id]
        )
        rows = parse.parse_nvidia_smi_csv(out, fields)
        if len(rows) != 1:
            raise RuntimeError(f"nvidia-smi -i {self._id} returned {len(rows)} rows, expected 1")
        return rows[0]

    def limits(self) -> Limits:
        try:
            return parse.nvidia_smi_limits(self._query(parse.NVSMI_LIMIT_FIELDS))
        except (RuntimeError, ValueError):
            return Limits()

    def read(self, clock: Callable[[], float]) -> Sample:
        t0 = clock()
        row = self._query(self._fields)
        return parse.nvidia_smi_sample(row, (t0 + clock()) / 2)

    def close(self) -> None:
        return None


# --------------------------------------------------------------------------- AMD
class AmdSmiSource:
    name = "amdsmi"

    def __init__(self, index: int, pci_bus_id: str | None = None):
        import amdsmi

        self._a = amdsmi
        amdsmi.amdsmi_init()
        try:
            if pci_bus_id:
                # amdsmi wants the 4-digit-domain form: 0000:19:00.0
                self._h = amdsmi.amdsmi_get_processor_handle_from_bdf(pci_bus_id[-12:].lower())
            else:
                self._h = amdsmi.amdsmi_get_processor_handles()[index]
        except Exception:
            amdsmi.amdsmi_shut_down()
            raise

    def _clock(self, kind: str, key: str) -> float | None:
        a = self._a
        return _none_on_error(
            lambda: parse.number_or_none(
                a.amdsmi_get_clock_info(self._h, getattr(a.AmdSmiClkType, kind))[key]
            )
        )

    def limits(self) -> Limits:
        a, h = self._a, self._h

        def power_cap_w() -> float | None:
            cap = parse.number_or_none(a.amdsmi_get_power_cap_info(h)["power_cap"])
            return None if cap is None else (cap / 1e6 if cap > 10_000 else cap)  # reported in µW

        return Limits(
            sm_clock_max_mhz=self._clock("GFX", "max_clk"),
            mem_clock_max_mhz=self._clock("MEM", "max_clk"),
            power_limit_w=_none_on_error(power_cap_w),
        )

    def read(self, clock: Callable[[], float]) -> Sample:
        a, h = self._a, self._h
        t0 = clock()
        power = _none_on_error(lambda: a.amdsmi_get_power_info(h))
        activity = _none_on_error(lambda: a.amdsmi_get_gpu_activity(h))

        def watts() -> float | None:
            for key in ("current_socket_power", "average_socket_power"):
                value = parse.number_or_none(power.get(key)) if power else None
                if value is not None:
                    return value
            return None

        sample = Sample(
            t_s=0.0,
            sm_clock_mhz=self._clock("GFX", "clk"),
            mem_clock_mhz=self._clock("MEM", "clk"),
            power_w=watts(),
            temperature_c=_none_on_error(
                lambda: float(
                    a.amdsmi_get_temp_metric(
                        h, a.AmdSmiTemperatureType.HOTSPOT, a.AmdSmiTemperatureMetric.CURRENT
                    )
                )
            ),
            gpu_util_pct=parse.number_or_none(activity.get("gfx_activity")) if activity else None,
            mem_util_pct=parse.number_or_none(activity.get("umc_activity")) if activity else None,
            throttle_reasons=None,  # amdsmi's throttle bits differ per SMU generation: not decoded
        )
        return _stamped(sample, (t0 + clock()) / 2)

    def close(self) -> None:
        self._a.amdsmi_shut_down()


class RocmSmiSource:
    """``rocm-smi ... --json`` once per sample (a few hundred ms per call: the interval stretches to fit)."""

    name = "rocm-smi"
    QUERY = ("--showclocks", "--showpower", "--showtemp", "--showuse", "--showmemuse", "--json")

    def __init__(self, index: int, pci_bus_id: str | None = None, runner: Runner = run_tool):
        if runner is run_tool and shutil.which("rocm-smi") is None:
            raise RuntimeError("rocm-smi not found on PATH")
        self._run = runner
        self._index = index
        self._card()

    def _card(self, *args: str) -> dict[str, str]:
        cards = parse.parse_rocm_smi_json(
            self._run(["rocm-smi", "-d", str(self._index), *(args or self.QUERY)])
        )
        if self._index not in cards:
            raise RuntimeError(f"rocm-smi -d {self._index} returned no card{self._index}")
        return cards[self._index]

    def limits(self) -> Limits:
        power = _none_on_error(lambda: parse.rocm_smi_power_limit_w(self._card("--showmaxpower", "--json")))
        sclk = _none_on_error(
            lambda: parse.rocm_smi_max_sclk_mhz(
                self._run(["rocm-smi", "-d", str(self._index), "--showsclkrange"])
            )
        )
        return Limits(sm_clock_max_mhz=sclk, power_limit_w=power)

    def read(self, clock: Callable[[], float]) -> Sample:
        t0 = clock()
        card = self._card()
        return parse.rocm_smi_sample(card, (t0 + clock()) / 2)

    def close(self) -> None:
        return None


_CLASSES = {
    "nvml": NvmlSource,
    "nvidia-smi": NvidiaSmiSource,
    "amdsmi": AmdSmiSource,
    "rocm-smi": RocmSmiSource,
}
_MISSING_HINT = {"nvml": "pip install nvidia-ml-py", "amdsmi": "install ROCm's amdsmi Python package"}


def open_source(backend: str, index: int, pci_bus_id: str | None = None, prefer: str = "auto"):
    """``(source, None)`` for the first source that opens and reads, or ``(None, reason)``."""
    if backend not in SOURCES_BY_BACKEND:
        return None, f"{backend} backend: no GPU to sample"
    names = SOURCES_BY_BACKEND[backend] if prefer == "auto" else (prefer,)
    failures = []
    for name in names:
        try:
            source = _CLASSES[name](index, pci_bus_id)
            try:
                source.read(time.perf_counter)  # opened is not enough: it must read
            except Exception:
                source.close()
                raise
            return source, None
        except ImportError as exc:
            failures.append(f"{name}: not installed ({_MISSING_HINT.get(name, exc)})")
        except Exception as exc:
            failures.append(f"{name}: {exc}")
    return None, "; ".join(failures)


def _stamped(sample: Sample, t_s: float) -> Sample:
    from dataclasses import replace

    return replace(sample, t_s=t_s)
