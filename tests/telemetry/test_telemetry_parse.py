"""Parsers of nvidia-smi and rocm-smi output, on outputs recorded in tests/data/."""

from pathlib import Path

import pytest

from aorta.telemetry import parse
from aorta.telemetry.inventory import NVSMI_STATIC_FIELDS, nvidia_smi_static
from aorta.telemetry.throttle import decode_nvml_reasons, parse_reason_mask

DATA = Path(__file__).parents[1] / "data"


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_nvml_reason_bits_decode_to_names():
    assert decode_nvml_reasons(0) == ()
    assert decode_nvml_reasons(0x4) == ("sw_power_cap",)
    assert decode_nvml_reasons(0x1 | 0x40) == ("gpu_idle", "hw_thermal_slowdown")
    assert decode_nvml_reasons(0x200) == ("bit_0x200",)  # a bit newer than this table is named, not lost
    assert parse_reason_mask("0x0000000000000004") == ("sw_power_cap",)
    assert parse_reason_mask("[N/A]") is None
    with pytest.raises(ValueError):
        decode_nvml_reasons(-1)


def test_nvidia_smi_sample_rows_one_per_gpu():
    rows = parse.parse_nvidia_smi_csv(read("nvidia_smi_sample_h100x2.csv"), parse.NVSMI_SAMPLE_FIELDS)
    busy, idle = (parse.nvidia_smi_sample(r, t_s=1.5) for r in rows)
    assert (busy.sm_clock_mhz, busy.mem_clock_mhz, busy.power_w, busy.temperature_c) == (
        1755,
        2619,
        698.54,
        67,
    )
    assert (busy.gpu_util_pct, busy.mem_util_pct, busy.t_s) == (100, 38, 1.5)
    assert busy.throttle_reasons == ("sw_power_cap",)
    assert idle.throttle_reasons == ("gpu_idle",)
    assert idle.sm_clock_mhz == 345


def test_nvidia_smi_legacy_reasons_field_and_not_available_values():
    fields = (*parse.NVSMI_SAMPLE_FIELDS[:-1], parse.NVSMI_LEGACY_REASONS_FIELD)
    (row,) = parse.parse_nvidia_smi_csv(read("nvidia_smi_sample_legacy.csv"), fields)
    sample = parse.nvidia_smi_sample(row, t_s=0.0)
    assert sample.power_w is None  # "[N/A]" is missing, not zero
    assert sample.sm_clock_mhz == 1410
    assert sample.throttle_reasons == ()


def test_nvidia_smi_line_with_wrong_field_count_is_an_error():
    with pytest.raises(ValueError, match="2 values for 7 fields"):
        parse.parse_nvidia_smi_csv("1, 2\n", parse.NVSMI_SAMPLE_FIELDS)


def test_nvidia_smi_static_facts():
    facts = nvidia_smi_static(read("nvidia_smi_static_h100.csv"))
    assert facts["name"] == "NVIDIA H100 80GB HBM3"
    assert facts["clocks_max_sm"] == 1980 and facts["power_limit"] == 700
    assert facts["ecc_mode_current"] == "Enabled"
    assert facts["pci_bus_id"] == "00000000:19:00.0"
    assert len(facts) == len(NVSMI_STATIC_FIELDS)


def test_rocm_smi_json_mi300x():
    cards = parse.parse_rocm_smi_json(read("rocm_smi_mi300x.json"))
    assert sorted(cards) == [0, 1]
    busy = parse.rocm_smi_sample(cards[0], t_s=2.0)
    assert (busy.sm_clock_mhz, busy.mem_clock_mhz) == (2096, 1300)
    assert busy.power_w == 612.0
    assert busy.temperature_c == 58.0  # junction preferred; edge is N/A on MI300X
    assert busy.gpu_util_pct == 100
    assert busy.mem_util_pct is None
    assert busy.throttle_reasons is None  # rocm-smi cannot tell
    assert parse.rocm_smi_sample(cards[1], t_s=2.0).sm_clock_mhz == 132


def test_rocm_smi_json_older_keys_and_system_entry_ignored():
    cards = parse.parse_rocm_smi_json(read("rocm_smi_radeon_edge.json"))
    assert list(cards) == [0]
    s = parse.rocm_smi_sample(cards[0], t_s=0.0)
    assert (s.power_w, s.temperature_c, s.mem_util_pct, s.sm_clock_mhz) == (28.123, 43.0, 3, 2270)


def test_rocm_smi_text_report_matches_the_json_form():
    text_cards = parse.parse_rocm_smi_text(read("rocm_smi_mi300x_showclocks.txt"))
    json_cards = parse.parse_rocm_smi_json(read("rocm_smi_mi300x.json"))
    for i in (0, 1):
        from_text = parse.rocm_smi_sample(text_cards[i], t_s=0.0)
        from_json = parse.rocm_smi_sample(json_cards[i], t_s=0.0)
        assert from_text == from_json


def test_rocm_smi_limits():
    assert parse.rocm_smi_max_sclk_mhz(read("rocm_smi_sclkrange.txt")) == 2100
    assert parse.rocm_smi_max_sclk_mhz("nothing here") is None
    card = parse.parse_rocm_smi_json(read("rocm_smi_maxpower.json"))[0]
    assert parse.rocm_smi_power_limit_w(card) == 750.0


def test_rocm_smi_json_that_is_not_an_object_is_an_error():
    with pytest.raises(ValueError):
        parse.parse_rocm_smi_json("[1, 2]")


def test_topology_from_nvidia_smi_loses_its_terminal_escapes():
    raw = (DATA / "nvidia_smi_topo_h100.txt").read_text()  # recorded on the lent H100: header underlined
    assert "\x1b[" in raw
    clean = parse.strip_ansi(raw)
    assert "\x1b" not in clean and clean.startswith("GPU0\tCPU Affinity") and "0-15" in clean
