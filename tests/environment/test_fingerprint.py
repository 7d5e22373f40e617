"""The environment fingerprint (what decides a run's figures) and the gate's refusal to compare runs whose
scheduling settings differ unless named (exit 14); versions may differ, that is a stack comparison."""

import copy
import json
import os
import re
from pathlib import Path

import pytest

from aorta.cli import main
from aorta.device import loaded_library
from aorta.environment.fingerprint import differences, fingerprint, parse_allowed, unintended_settings
from aorta.environment.machine import sweep_cell
from aorta.exit_codes import EXIT_SETTINGS_DIFFER

RUN = Path(__file__).parents[1] / "data" / "report" / "hwq_per_round.json"

H200 = {
    "backend": "cuda",
    "gpu_name": "NVIDIA H200",
    "gpu_count": 2,
    "driver": "580.159.04",
    "torch": "2.11.0+cu130",
    "cuda": "13.0",
    "hip": None,
    "nccl": "2.28.9",
    "math_libraries": {"cudnn": "91300", "cublas": "13.1.0", "cublaslt": "13.1.0"},
    "env": {"NCCL_NVLS_ENABLE": "0", "NCCL_NTHREADS": "256", "CUDA_VISIBLE_DEVICES": "0,1"},
    "gpu": {"sm_clock_max_mhz": 1980, "power_limit_w": 700.0, "ecc_enabled": True},
    "sweep_cell": {"cell": "NCCL_NTHREADS=256", "settings": {"NCCL_NTHREADS": "256"}},
}


def test_fingerprint_groups_versions_settings_hardware_and_the_sweep_cell():
    fp = fingerprint(H200)
    assert fp["versions"] == {
        "driver": "580.159.04",
        "cuda": "13.0",
        "torch": "2.11.0+cu130",
        "nccl": "2.28.9",
        "cublas": "13.1.0",
        "cublaslt": "13.1.0",
        "cudnn": "91300",
    }
    assert fp["settings"] == {"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_NTHREADS": "256", "NCCL_NVLS_ENABLE": "0"}
    assert fp["hardware"] == {
        "gpu_name": "NVIDIA H200",
        "gpu_count": "2",
        "sm_clock_max_mhz": "1980",
        "power_limit_w": "700.0",
    }
    assert fp["sweep"] == {"NCCL_NTHREADS": "256"}


def test_differences_list_only_what_differs_with_unset_for_a_missing_setting():
    other = copy.deepcopy(H200)
    other["torch"] = "2.12.0+cu130"
    other["env"]["TORCH_NCCL_HIGH_PRIORITY"] = "1"
    other["gpu"]["power_limit_w"] = 600.0
    rows = differences({"old": fingerprint(H200), "new": fingerprint(other)})
    assert rows == [
        {"group": "versions", "name": "torch", "values": {"old": "2.11.0+cu130", "new": "2.12.0+cu130"}},
        {"group": "settings", "name": "TORCH_NCCL_HIGH_PRIORITY", "values": {"old": "unset", "new": "1"}},
        {"group": "hardware", "name": "power_limit_w", "values": {"old": "700.0", "new": "600.0"}},
    ]


def test_unintended_settings_skip_versions_visibility_and_what_is_allowed():
    other = copy.deepcopy(H200)
    other.update(torch="2.12.0", nccl="2.29.1")  # another stack: allowed
    other["env"].update(CUDA_VISIBLE_DEVICES="2,3", NCCL_NTHREADS="512", TORCH_NCCL_HIGH_PRIORITY="1")
    assert unintended_settings(H200, other) == [
        ("NCCL_NTHREADS", "256", "512"),
        ("TORCH_NCCL_HIGH_PRIORITY", "unset", "1"),
    ]
    allowed = parse_allowed(["NCCL_NTHREADS", "TORCH_NCCL_*"])
    assert unintended_settings(H200, other, allowed) == []
    assert unintended_settings(H200, other, ["*"]) == []
    older = {k: v for k, v in H200.items() if k != "env"}  # a record without scheduling variables
    assert unintended_settings(older, other) == []


def test_the_loaded_math_library_is_found_by_file_name_not_prefix_of_another():
    maps = (
        "7f00-7f01 r-xp 00000000 08:01 1 /venv/nvidia/cublas/lib/libcublasLt.so.13\n"
        "7f02-7f03 r-xp 00000000 08:01 2 /venv/nvidia/cublas/lib/libcublas.so.13\n"
        "7f04-7f05 rw-p 00000000 00:00 0 \n"
    )
    assert loaded_library(maps, "libcublas.so") == "/venv/nvidia/cublas/lib/libcublas.so.13"
    assert loaded_library(maps, "libcublasLt.so") == "/venv/nvidia/cublas/lib/libcublasLt.so.13"
    assert loaded_library(maps, "librocblas.so") is None


def test_the_sweep_cell_is_read_from_its_environment_variable():
    assert sweep_cell({}) is None
    assert sweep_cell({"AORTA_SWEEP_CELL": '{"cell": "A=1", "settings": {"A": "1"}}'}) == {
        "cell": "A=1",
        "settings": {"A": "1"},
    }
    assert "is not JSON" in sweep_cell({"AORTA_SWEEP_CELL": "{oops"})["error"]


# ------------------------------------------------------------------------------------------ the gate
def _run_with(tmp_path: Path, name: str, **changes) -> Path:
    doc = json.loads(RUN.read_text())
    machine = doc["machine_info"]["aorta"]
    env = changes.pop("env", None)
    if env is not None:
        machine["env"] = env
    machine.update(changes)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


def test_aorta_compare_refuses_a_settings_difference_with_exit_14(tmp_path, capsys):
    ref = _run_with(tmp_path, "ref", env={"NCCL_NTHREADS": "256"})
    cand = _run_with(tmp_path, "cand", env={"NCCL_NTHREADS": "512", "TORCH_NCCL_HIGH_PRIORITY": "1"})
    code = main(["compare", str(ref), str(cand), "--verdict-json", ""])
    err = capsys.readouterr().err
    assert code == EXIT_SETTINGS_DIFFER == 14
    assert "scheduling settings differ" in err
    assert "NCCL_NTHREADS 256 -> 512, TORCH_NCCL_HIGH_PRIORITY unset -> 1" in err
    assert "--allow-env-diff NCCL_NTHREADS,TORCH_NCCL_HIGH_PRIORITY" in err
    assert not (tmp_path / "cand.verdict.json").exists()
    # named as intended: compared (identical samples, so clean)
    code = main(
        [
            "compare",
            str(ref),
            str(cand),
            "--verdict-json",
            "",
            "--allow-env-diff",
            "NCCL_NTHREADS,TORCH_NCCL_*",
        ]
    )
    assert code == 15, (
        capsys.readouterr()
    )  # compared, not refused: one run a side judges nothing (inconclusive)


def test_aorta_compare_allows_another_stack_with_the_same_settings(tmp_path, capsys):
    ref = _run_with(tmp_path, "ref", env={"NCCL_NTHREADS": "256"}, torch="2.11.0", nccl="2.28.9")
    cand = _run_with(tmp_path, "cand", env={"NCCL_NTHREADS": "256"}, torch="2.12.0", nccl="2.29.1")
    assert main(["compare", str(ref), str(cand), "--verdict-json", ""]) == 15  # compared; 1 v 1: inconclusive
    assert "torch 2.11.0 -> 2.12.0" in capsys.readouterr().out


SPIN_TEST = """
def test_tiny(hw_queue, streams):
    from aorta.hw_queue.workloads.tiny_kernel_stress import TinyKernelStress
    hw_queue(TinyKernelStress, streams, mode="eager")
"""


@pytest.mark.slow  # two pytest runs of a tiny benchmark
def test_pytest_compare_refuses_a_settings_difference_before_any_benchmark(pytester, monkeypatch):
    pytester.makepyfile(test_tiny=SPIN_TEST)
    root = str(Path(__file__).resolve().parents[2])  # this checkout's aorta, whatever else is installed
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    # in-process runs (fresh-process runs are tested in test_gate_plugin.py)
    args = (
        "-p",
        "no:cacheprovider",
        "--aorta-streams=1",
        "--aorta-rounds=3",
        "--aorta-runs=1",
        "--aorta-confirm=0",
    )
    monkeypatch.setenv("NCCL_NTHREADS", "256")
    assert pytester.runpytest_subprocess(*args, "--aorta-save-baseline", "base").ret == 0
    monkeypatch.setenv("NCCL_NTHREADS", "512")
    r = pytester.runpytest_subprocess(*args, "--aorta-compare", "base")
    assert r.ret == 14, r.stdout.str()
    r.stderr.fnmatch_lines(
        ["*--aorta-compare: refused (exit 14)*NCCL_NTHREADS 256 -> 512*--aorta-allow-env-diff*"]
    )
    assert "passed" not in r.stdout.str()  # nothing ran
    r = pytester.runpytest_subprocess(
        *args, "--aorta-compare", "base", "--aorta-allow-env-diff", "NCCL_NTHREADS"
    )
    # Allowed: the benchmark runs and is compared, and the exit code is the verdicts' (10 only for a SLOWER one).
    out = r.stdout.str()
    assert "1 passed" in out and "env differs: NCCL_NTHREADS 256 -> 512" in out, out
    verdict = re.search(
        r"verdict: (\d+) SLOWER, (\d+) FASTER, (\d+) SAME, (\d+) UNSURE, (\d+) NOT_GATEABLE(?:; INCONCLUSIVE[^>]*)? -> exit (\d+)",
        out,
    )
    assert verdict is not None, out
    slower, faster, same, unsure, not_gateable, code = (int(g) for g in verdict.groups())
    assert slower + faster + same + unsure + not_gateable == 3  # every figure of the run is judged
    assert code == r.ret == (10 if slower else 0 if same + faster >= 2 else 15)  # 15: judged too few


pytest_plugins = ["pytester"]


def test_scheduling_variables_are_recorded_and_install_paths_are_not():
    from aorta.device import Device

    environ = {
        "NCCL_NTHREADS": "256",
        "TORCH_NCCL_HIGH_PRIORITY": "1",
        "CUDA_DEVICE_MAX_CONNECTIONS": "32",
        "CUDA_SCALE_LAUNCH_QUEUES": "4x",
        "GPU_MAX_HW_QUEUES": "2",
        "HSA_ENABLE_SDMA": "0",
        "HIP_FORCE_DEV_KERNARG": "1",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "HIP_PATH": "/opt/rocm-7.0.10",
        "CUDA_HOME": "/usr/local/cuda-13.0",
        "HOME": "/root",
    }
    recorded = Device.scheduling_env(environ)
    assert sorted(recorded) == sorted(set(environ) - {"HIP_PATH", "CUDA_HOME", "HOME"})


def test_the_value_torchrun_sets_by_itself_is_not_a_settings_difference():
    """Issue 24, case 14: torchrun gives every rank TORCH_NCCL_ASYNC_ERROR_HANDLING=1 when it is unset."""
    from aorta.environment.fingerprint import unintended_settings

    plain, under_torchrun = {"env": {}}, {"env": {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}}
    assert unintended_settings(plain, under_torchrun) == []
    assert unintended_settings(under_torchrun, plain) == []
    chosen = {"env": {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "3"}}
    assert unintended_settings(under_torchrun, chosen) == [("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", "3")]
    assert unintended_settings(plain, chosen) == [("TORCH_NCCL_ASYNC_ERROR_HANDLING", "unset", "3")]


def test_a_run_under_torchrun_adds_to_a_baseline_saved_without_it(tmp_path):
    from test_gate_offline import H100, bench, run

    from aorta.gate.baselines import baseline as bl

    bl.save_baseline(run([bench("a", 10.0)]), tmp_path, "base", {})
    env = {**H100["env"], "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}
    _, n = bl.save_baseline(run([bench("a", 10.0, seed=2)], env=env), tmp_path, "base", {})
    assert n == 2
    with pytest.raises(bl.StackChanged, match="TORCH_NCCL_ASYNC_ERROR_HANDLING"):
        bl.save_baseline(
            run([bench("a", 10.0, seed=3)], env={**env, "TORCH_NCCL_ASYNC_ERROR_HANDLING": "0"}),
            tmp_path,
            "base",
            {},
        )
