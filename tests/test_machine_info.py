"""Host facts recorded in machine_info (the GPU facts need a GPU: scripts/gpu/telemetry.sh)."""

from aorta.device import Device
from aorta.machine import cpu_model, machine_info

CPUINFO_X86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9654 96-Core Processor\n"
CPUINFO_ARM = "processor\t: 0\nBogoMIPS\t: 2000.00\nModel\t\t: NVIDIA Grace\n"


def test_cpu_model_from_cpuinfo():
    assert cpu_model(CPUINFO_X86) == "AMD EPYC 9654 96-Core Processor"
    assert cpu_model(CPUINFO_ARM) == "NVIDIA Grace"
    assert cpu_model("") != ""  # falls back to what platform knows


def test_cpu_machine_info_has_host_and_says_why_gpu_facts_are_missing():
    info = machine_info(Device("cpu"))
    assert {"hostname", "kernel", "os", "cpu_model", "cpu_count", "python"} <= set(info["host"])
    assert info["gpu"]["unavailable"]["gpu_facts"] == "CPU backend: no GPU"
