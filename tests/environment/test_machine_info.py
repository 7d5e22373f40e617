"""Host facts recorded in machine_info (the GPU facts need a GPU: python3 -m scripts.gpu.prove telemetry)."""

import json
import os
import platform
import socket

import torch

from aorta.device import Device
from aorta.environment.machine import cpu_model, machine_info, sweep_cell

CPUINFO_X86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9654 96-Core Processor\n"
CPUINFO_ARM = "processor\t: 0\nBogoMIPS\t: 2000.00\nModel\t\t: NVIDIA Grace\n"


def test_cpu_model_from_cpuinfo():
    assert cpu_model(CPUINFO_X86) == "AMD EPYC 9654 96-Core Processor"
    assert cpu_model(CPUINFO_ARM) == "NVIDIA Grace"
    assert cpu_model("") == (platform.processor() or platform.machine())  # what platform knows


def test_cpu_machine_info_has_host_and_says_why_gpu_facts_are_missing(monkeypatch):
    monkeypatch.setenv("NCCL_NTHREADS", "256")
    monkeypatch.setenv("HOME", "/root")  # not a scheduling variable: left out
    info = machine_info(Device("cpu"))
    assert info["host"] == {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "os": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }
    assert (info["backend"], info["gpu_name"], info["gpu_arch"], info["gpu_count"]) == ("cpu", None, None, 0)
    assert info["torch"] == torch.__version__
    assert info["env"]["NCCL_NTHREADS"] == "256" and "HOME" not in info["env"]
    assert "sweep_cell" not in info
    assert info["gpu"]["unavailable"]["gpu_facts"] == "CPU backend: no GPU"


def test_a_sweep_cell_is_recorded_and_a_malformed_one_says_why(monkeypatch):
    cell = {"sweep": "stackA", "cell": "NCCL_NTHREADS=128", "index": 1}
    monkeypatch.setenv("AORTA_SWEEP_CELL", json.dumps(cell))
    assert machine_info(Device("cpu"))["sweep_cell"] == cell
    assert sweep_cell({"AORTA_SWEEP_CELL": "{nope"})["error"].startswith("AORTA_SWEEP_CELL is not JSON")
    assert sweep_cell({"AORTA_SWEEP_CELL": "[1]"}) == {
        "error": "AORTA_SWEEP_CELL is not a JSON object",
        "raw": "[1]",
    }
    assert sweep_cell({}) is None
