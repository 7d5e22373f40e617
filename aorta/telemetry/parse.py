"""Parsers of the vendor tools' output, as pure functions (no torch, no subprocess).

- ``nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits``: one line per GPU, values in the
  order of the fields; ``[N/A]`` / ``[Not Supported]`` where a figure does not exist.
- ``rocm-smi --showclocks --showpower --showtemp --showuse --showmemuse --json``: ``{"card0": {...}}``
  with keys such as ``"sclk clock speed:": "(2100Mhz)"`` and ``"Temperature (Sensor junction) (C)"``.
- The same rocm-smi query without ``--json``: lines ``GPU[0]  : sclk clock level: 1: (2100Mhz)``.
"""

from __future__ import annotations

import json
import re

from aorta.telemetry.sample import Limits, Sample
from aorta.telemetry.throttle import parse_reason_mask

# What the sampler asks nvidia-smi for, per sample. ``clocks_event_reasons.active`` is the name since
# driver 535; older drivers only know ``clocks_throttle_reasons.active`` (same bitmask).
NVSMI_SAMPLE_FIELDS = (
    "clocks.sm",
    "clocks.mem",
    "power.draw",
    "temperature.gpu",
    "utilization.gpu",
    "utilization.memory",
    "clocks_event_reasons.active",
)
NVSMI_LEGACY_REASONS_FIELD = "clocks_throttle_reasons.active"
NVSMI_LIMIT_FIELDS = ("clocks.max.sm", "clocks.max.mem", "power.limit")

_MISSING = {
    "",
    "n/a",
    "[n/a]",
    "[not supported]",
    "not supported",
    "[unknown error]",
    "[insufficient permissions]",
}


ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """Tool output without terminal escapes (``nvidia-smi topo -m`` underlines its header even into a pipe)."""
    return ANSI_ESCAPE.sub("", text)


def number_or_none(text: object) -> float | None:
    """``"699.12"`` -> 699.12; ``"[N/A]"``, ``"[Not Supported]"``, ``"N/A"``, garbage -> ``None``."""
    if text is None:
        return None
    if isinstance(text, (int, float)):
        return float(text)
    s = str(text).strip()
    if s.lower() in _MISSING:
        return None
    m = re.fullmatch(r"\(?\s*([-+]?\d+(?:\.\d+)?)\s*(?:mhz|w|c|%|mib)?\s*\)?", s, flags=re.IGNORECASE)
    return float(m.group(1)) if m else None


def parse_nvidia_smi_csv(text: str, fields: tuple[str, ...]) -> list[dict[str, str]]:
    """Rows of ``--format=csv,noheader,nounits`` output as ``{field: raw value}``, one per GPU line."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = [v.strip() for v in line.split(",")]
        if len(values) != len(fields):
            raise ValueError(f"nvidia-smi line has {len(values)} values for {len(fields)} fields: {line!r}")
        rows.append(dict(zip(fields, values)))
    return rows


def nvidia_smi_sample(row: dict[str, str], t_s: float) -> Sample:
    """One ``parse_nvidia_smi_csv`` row of ``NVSMI_SAMPLE_FIELDS`` (either reasons field) as a Sample."""
    reasons_raw = row.get("clocks_event_reasons.active", row.get(NVSMI_LEGACY_REASONS_FIELD))
    return Sample(
        t_s=t_s,
        sm_clock_mhz=number_or_none(row.get("clocks.sm")),
        mem_clock_mhz=number_or_none(row.get("clocks.mem")),
        power_w=number_or_none(row.get("power.draw")),
        temperature_c=number_or_none(row.get("temperature.gpu")),
        gpu_util_pct=number_or_none(row.get("utilization.gpu")),
        mem_util_pct=number_or_none(row.get("utilization.memory")),
        throttle_reasons=parse_reason_mask(reasons_raw) if reasons_raw is not None else None,
    )


def nvidia_smi_limits(row: dict[str, str]) -> Limits:
    return Limits(
        sm_clock_max_mhz=number_or_none(row.get("clocks.max.sm")),
        mem_clock_max_mhz=number_or_none(row.get("clocks.max.mem")),
        power_limit_w=number_or_none(row.get("power.limit")),
    )


# ----------------------------------------------------------------------------- rocm-smi
_ROCM_POWER_KEYS = (
    "Current Socket Graphics Package Power (W)",
    "Average Graphics Package Power (W)",
    "Average Power (W)",
)
_ROCM_TEMP_KEYS = ("Temperature (Sensor junction) (C)", "Temperature (Sensor edge) (C)")
_ROCM_MEM_UTIL_KEYS = ("GPU Memory Read/Write Activity (%)", "GPU memory use (%)")
_ROCM_MAX_POWER_KEYS = ("Max Graphics Package Power (W)", "Max Power (W)")


def _first_number(card: dict, keys: tuple[str, ...]) -> float | None:
    for key in keys:
        value = number_or_none(card.get(key))
        if value is not None:
            return value
    return None


def parse_rocm_smi_json(text: str) -> dict[int, dict[str, str]]:
    """``{"card0": {...}, "system": {...}}`` -> ``{0: {...}}`` (cards only, keyed by index)."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("rocm-smi --json output is not a JSON object")
    cards = {}
    for key, value in data.items():
        m = re.fullmatch(r"card(\d+)", key)
        if m and isinstance(value, dict):
            cards[int(m.group(1))] = value
    return cards


_TEXT_CLOCK = re.compile(r"^(\w+) clock level:\s*(\d+):\s*(\(.*\))\s*$")
_TEXT_LINE = re.compile(r"^GPU\[(\d+)\]\s*:\s*(.*)$")


def parse_rocm_smi_text(text: str) -> dict[int, dict[str, str]]:
    """The plain-text report as the same ``{index: {key: value}}`` as the JSON form.

    ``GPU[0] : sclk clock level: 1: (2100Mhz)`` becomes ``"sclk clock speed:": "(2100Mhz)"`` (the JSON
    key), other lines ``GPU[0] : <key>: <value>`` split at their last ``": "``.
    """
    cards: dict[int, dict[str, str]] = {}
    for line in text.splitlines():
        m = _TEXT_LINE.match(line.strip())
        if not m:
            continue
        card = cards.setdefault(int(m.group(1)), {})
        body = m.group(2).strip()
        clock = _TEXT_CLOCK.match(body)
        if clock:
            card[f"{clock.group(1)} clock speed:"] = clock.group(3)
            card[f"{clock.group(1)} clock level:"] = clock.group(2)
            continue
        key, sep, value = body.rpartition(": ")
        if sep:
            card[key.strip()] = value.strip()
    return cards


def rocm_smi_sample(card: dict[str, str], t_s: float) -> Sample:
    """One card of ``parse_rocm_smi_json`` / ``parse_rocm_smi_text`` as a Sample.

    rocm-smi gives no throttle reasons, so ``throttle_reasons`` is ``None`` (the clock rule still applies).
    """
    return Sample(
        t_s=t_s,
        sm_clock_mhz=number_or_none(card.get("sclk clock speed:")),
        mem_clock_mhz=number_or_none(card.get("mclk clock speed:")),
        power_w=_first_number(card, _ROCM_POWER_KEYS),
        temperature_c=_first_number(card, _ROCM_TEMP_KEYS),
        gpu_util_pct=number_or_none(card.get("GPU use (%)")),
        mem_util_pct=_first_number(card, _ROCM_MEM_UTIL_KEYS),
        throttle_reasons=None,
    )


def rocm_smi_max_sclk_mhz(text: str) -> float | None:
    """Highest level of ``rocm-smi --showsclkrange`` / ``-s`` (``Valid sclk range: 500Mhz - 2100Mhz`` or
    a level list ``N: 2100Mhz``); ``None`` if none is found."""
    values = [float(v) for v in re.findall(r"(\d+(?:\.\d+)?)\s*Mhz", text, flags=re.IGNORECASE)]
    return max(values) if values else None


def rocm_smi_power_limit_w(card: dict[str, str]) -> float | None:
    return _first_number(card, _ROCM_MAX_POWER_KEYS)
