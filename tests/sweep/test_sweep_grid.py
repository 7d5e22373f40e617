"""The sweep's pure pieces: grid parsing and expansion, known-variable validation, the command per cell."""

from pathlib import Path

import pytest

from aorta.sweep.command import cell_command, check_command, check_overrides, runs_pytest
from aorta.sweep.grid import Cell, SweepUsageError, expand, parse_axes, parse_axis
from aorta.sweep.variables import check_env_axes


def test_the_grid_is_the_product_first_axis_slowest():
    axes = parse_axes(["NCCL_NTHREADS=256,512", "NCCL_MAX_NCHANNELS=4, 16 ,32"], ["training.steps=5"])
    cells = expand(axes)
    assert len(cells) == 2 * 3 * 1
    assert [c.id for c in cells[:4]] == [
        "NCCL_NTHREADS=256 NCCL_MAX_NCHANNELS=4 training.steps=5",
        "NCCL_NTHREADS=256 NCCL_MAX_NCHANNELS=16 training.steps=5",
        "NCCL_NTHREADS=256 NCCL_MAX_NCHANNELS=32 training.steps=5",
        "NCCL_NTHREADS=512 NCCL_MAX_NCHANNELS=4 training.steps=5",
    ]
    assert cells[5].env == {"NCCL_NTHREADS": "512", "NCCL_MAX_NCHANNELS": "32"}
    assert cells[5].overrides == {"training.steps": "5"}
    assert cells[5].dirname == "cell06_NCCL_NTHREADS=512_NCCL_MAX_NCHANNELS=32_training.steps=5"
    assert len({c.dirname for c in cells}) == len(cells)


@pytest.mark.parametrize(
    "kind, text, words",
    [
        ("env", "NCCL_NTHREADS", "expected an environment variable name=v1,v2"),
        ("env", "1BAD=1,2", "expected an environment variable name"),
        ("env", "NCCL_NTHREADS=", "an empty value"),
        ("env", "NCCL_NTHREADS=256,,512", "an empty value"),
        ("env", "NCCL_NTHREADS=256,256", "256 given twice"),
        ("env", "AORTA_SWEEP_CELL=1", "set by the sweep itself"),
        ("override", "training..steps=1", "expected a config key path"),
    ],
)
def test_bad_axes_name_the_option_and_the_text(kind, text, words):
    with pytest.raises(SweepUsageError, match=words) as exc:
        parse_axis(kind, text)
    assert ("--grid" if kind == "env" else "--override") in str(exc.value)


def test_a_name_given_twice_or_no_axis_at_all_is_refused():
    with pytest.raises(SweepUsageError, match="--grid NCCL_NTHREADS is given twice"):
        parse_axes(["NCCL_NTHREADS=256", "NCCL_NTHREADS=512"], [])
    with pytest.raises(SweepUsageError, match="no --grid or --override"):
        parse_axes([], [])


@pytest.mark.parametrize(
    "grid, bad, allowed",
    [
        ("NCCL_NTHREADS=256,abc", "'abc'", "a multiple of 64 from 64 to 1024"),
        ("NCCL_NTHREADS=256,500", "'500'", "a multiple of 64"),
        ("NCCL_MAX_NCHANNELS=4,16.5", "'16.5'", "an integer >= 1"),
        ("NCCL_MIN_NCHANNELS=0", "'0'", "an integer >= 1"),
        ("CUDA_DEVICE_MAX_CONNECTIONS=8,33", "'33'", "an integer from 1 to 32"),
        ("GPU_MAX_HW_QUEUES=two", "'two'", "an integer >= 1"),
        ("TORCH_NCCL_HIGH_PRIORITY=0,2", "'2'", "one of 0, 1"),
        ("NCCL_ALGO=Ring,Butterfly", "'Butterfly'", "Ring, Tree"),
        ("NCCL_PROTO=LL,Fast", "'Fast'", "LL, LL128, Simple"),
    ],
)
def test_invalid_grid_values_are_caught_with_the_option_value_and_what_is_allowed(grid, bad, allowed):
    with pytest.raises(SweepUsageError) as exc:
        check_env_axes(parse_axes([grid], []))
    message = str(exc.value)
    assert message.startswith(f"--grid {grid}: {bad} is not a valid")
    assert allowed in message


def test_valid_values_pass_and_unknown_variables_get_a_note():
    axes = parse_axes(
        [
            "NCCL_NTHREADS=64,128,256,512",
            "NCCL_ALGO=Ring,tree,^NVLS,allreduce:ring;allgather:tree",
            "NCCL_PROTO=LL128,Simple",
            "CUDA_DEVICE_MAX_CONNECTIONS=1,32",
            "TORCH_NCCL_HIGH_PRIORITY=0,1",
            "MY_OWN_KNOB=x,y",
        ],
        [],
    )
    assert check_env_axes(axes) == [
        "--grid MY_OWN_KNOB: not in aorta's table of known variables; passed as given"
    ]


@pytest.mark.parametrize(
    "cmd, ok",
    [
        (["pytest", "benchmarks/hw_queue"], True),
        (["/usr/bin/python3", "-m", "pytest", "benchmarks"], True),
        (["torchrun", "--nproc_per_node", "2", "-m", "pytest", "benchmarks/fsdp"], True),
        (["python3", "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "pytest", "x"], True),
        (["scripts/launch_cuda.sh", "-k", "baseline"], True),
        (["python3", "bench.py"], False),
        (["bash", "-c", "pytest x"], False),
    ],
)
def test_the_command_must_run_pytest(cmd, ok):
    assert runs_pytest(cmd) is ok
    if not ok:
        with pytest.raises(SweepUsageError, match="a sweep runs pytest"):
            check_command(cmd, [])


def test_the_command_leaves_result_paths_and_swept_overrides_to_the_sweep():
    axes = parse_axes([], ["training.steps=3,5"])
    with pytest.raises(SweepUsageError, match="command sets --benchmark-json: the sweep sets it"):
        check_command(["pytest", "--benchmark-json=x.json"], axes)
    with pytest.raises(SweepUsageError, match="command sets --aorta-artifacts"):
        check_command(["pytest", "--aorta-artifacts", "a"], axes)
    with pytest.raises(SweepUsageError, match="--override training.steps sweeps it"):
        check_command(["pytest", "--override", "training.steps=9"], axes)
    check_command(["pytest", "--override", "model.n_layers=2"], axes)  # another key is fine


def test_cell_command_appends_paths_and_overrides():
    cell = Cell(0, {"NCCL_NTHREADS": "256"}, {"training.steps": "5"})
    cmd = cell_command(["torchrun", "-m", "pytest", "b"], cell, Path("d/benchmark.json"), Path("d/artifacts"))
    assert cmd == [
        "torchrun",
        "-m",
        "pytest",
        "b",
        "--benchmark-json=d/benchmark.json",
        "--aorta-artifacts=d/artifacts",
        "--aorta-override=training.steps=5",
    ]


def test_overrides_are_checked_against_the_fsdp_config_schema():
    check_overrides(parse_axes([], ["training.steps=3,5", "fsdp.param_dtype=bf16,fp32"]), ["pytest"])
    with pytest.raises(SweepUsageError, match=r"--override training.stepz=3: unknown key 'training.stepz'"):
        check_overrides(parse_axes([], ["training.stepz=3"]), ["pytest"])
    with pytest.raises(SweepUsageError, match=r"--override training.steps=many: .*expected int"):
        check_overrides(parse_axes([], ["training.steps=5,many"]), ["pytest"])


def test_the_commands_own_overrides_are_checked_too():
    with pytest.raises(
        SweepUsageError, match=r"command: profiling.trace=3: allowed values are auto, on, off"
    ):
        check_overrides([], ["pytest", "--aorta-override", "profiling.trace=3"])
    check_overrides([], ["pytest", "--aorta-override", "profiling.trace=off"])  # YAML's false: off meant
    check_overrides([], ["pytest", "--aorta-override", "profiling.trace='off'"])
