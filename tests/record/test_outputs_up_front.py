"""A bad output place or size is an error before any benchmark runs (or, for a size only the workload knows,
a failed test with aorta's own message), never a finished run lost at the end."""

import json
from pathlib import Path

import pytest

from aorta.environment import versions
from aorta.environment.stack_label import stack_label
from aorta.record.output_paths import OutputPathError, check_output_dir, check_output_file

REPO = Path(__file__).resolve().parents[2]
BENCH = str(REPO / "benchmarks" / "hw_queue" / "test_tiny_kernel_stress.py")
QUICK = ("--aorta-streams=1", "--aorta-rounds=2", "--aorta-warmup=0")


@pytest.fixture
def a_file(tmp_path) -> Path:
    """A regular file: nothing can ever be created under it (read-only for root too)."""
    f = tmp_path / "a_file"
    f.write_text("not a folder\n")
    return f


# ------------------------------------------------------------------------------------- pure checks
def test_a_missing_folder_that_can_be_created_is_fine(tmp_path):
    assert check_output_dir("--x", tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    assert not (tmp_path / "new").exists()  # checked, not created


def test_a_folder_under_a_file_is_refused_naming_option_and_path(a_file):
    with pytest.raises(OutputPathError, match=rf"--x {a_file}/out: cannot be created: {a_file} is a file"):
        check_output_dir("--x", a_file / "out")


def test_a_file_output_refuses_a_folder_and_a_missing_folder_when_the_writer_will_not_create_it(tmp_path):
    with pytest.raises(OutputPathError, match="is a folder; give a file name"):
        check_output_file("--x", tmp_path)
    with pytest.raises(OutputPathError, match="its folder .*missing does not exist; create it first"):
        check_output_file("--x", tmp_path / "missing" / "run.json", create_parent=False)
    assert check_output_file("--x", tmp_path / "missing" / "run.json") == tmp_path / "missing" / "run.json"


def test_pytest_benchmark_5_2_on_pytest_9_2_is_refused_with_the_fix():
    problem = versions.incompatibility((9, 2, 0), (5, 2, 3))
    assert "pytest-benchmark 5.2.3 does not run on pytest 9.2.0" in problem
    assert "install pytest-benchmark>=5.3" in problem
    assert versions.incompatibility((9, 1, 1), (5, 2, 3)) is None
    assert versions.incompatibility((9, 2, 0), (5, 3, 1)) is None


def test_stack_label_names_gpu_runtime_and_torch():
    assert (
        stack_label("NVIDIA H100 80GB HBM3", 1, {"torch": "2.11.0+cu130", "cuda": "13.0"})
        == "nvidia-h100-80gb-hbm3-x1-cuda13.0-torch2.11.0"
    )
    assert (
        stack_label("AMD Instinct MI300X", 8, {"torch": "2.9.0+rocm7.0", "cuda": None, "hip": "7.0.5"})
        == "amd-instinct-mi300x-x8-hip7.0.5-torch2.9.0"
    )
    assert stack_label(None, 0, {"torch": "2.13.0+cpu"}) == "cpu-torch2.13.0"


# ------------------------------------------------------------------------------- pytest, end to end
@pytest.mark.slow
@pytest.mark.parametrize("where", ["missing", "under_a_file"])
def test_benchmark_json_in_a_place_that_cannot_take_it_stops_before_any_benchmark(
    run_pytest, tmp_path, a_file, where
):
    target = (tmp_path / "missing" / "run.json") if where == "missing" else (a_file / "run.json")
    result = run_pytest(BENCH, *QUICK, f"--benchmark-json={target}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "--benchmark-json" in err and str(target.parent) in err, err
    assert "Traceback" not in err + result.stdout.str()
    assert "passed" not in result.stdout.str()  # no benchmark ran


@pytest.mark.slow
def test_the_json_path_is_printed_as_given(run_pytest, pytester):
    (pytester.path / "out").mkdir()
    result = run_pytest(BENCH, *QUICK, "--benchmark-json=out/run.json")
    assert result.ret == 0, result.stdout.str()[-2000:]
    assert "benchmark JSON: out/run.json" in result.stdout.lines
    assert json.loads((pytester.path / "out" / "run.json").read_text())["benchmarks"]


@pytest.mark.slow
def test_an_out_of_memory_copy_size_fails_that_test_naming_the_size(run_pytest):
    bench = str(REPO / "benchmarks" / "hw_queue" / "test_copy_compute_overlap.py")
    result = run_pytest(bench, *QUICK, "--aorta-copy-mb=65536")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "out of memory at size" in out and "65536 MiB copies: needs" in out, out[-3000:]
    assert "Traceback" not in out


# ------------------------------------------------------------------------------------ offline tools
def test_report_output_under_a_file_is_refused_before_reading_runs(a_file, tmp_path, aorta_cli):
    proc = aorta_cli(
        "report",
        "--run",
        str(tmp_path / "no_such.json"),
        "--label",
        "a",
        "--output",
        str(a_file / "report"),
        cwd=REPO,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"aorta report: error: --output {a_file}/report: {a_file} is a file"), (
        proc.stderr
    )
    assert "Traceback" not in proc.stderr


def test_trace_merge_output_under_a_file_is_refused_before_reading_traces(a_file, tmp_path, aorta_cli):
    proc = aorta_cli(
        "trace", "merge", str(tmp_path / "rank0.json"), "--output", str(a_file / "merged.json"), cwd=REPO
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        f"aorta trace merge: error: --output {a_file}/merged.json: {a_file} is a file"
    ), proc.stderr


@pytest.mark.parametrize("where", ["in_process", pytest.param("child_process", marks=pytest.mark.slow)])
def test_a_usage_error_leaves_an_existing_benchmark_json_as_it_was(run_pytest, pytester, where):
    """Issue 24, case 12: pytest-benchmark 5.2 (the oldest supported, with pytest 9.0) opened the file while
    parsing the options, so a usage error left it empty; aorta makes the option a path again (the options are
    parsed alike in a pytest of this process and in a child: the child in the slow tier)."""
    pytester.makepyfile("def test_x():\n    pass\n")
    earlier = pytester.path / "run.json"
    earlier.write_text('{"an earlier": "result"}')
    args = ("--benchmark-json", str(earlier), "--aorta-rounds=bogus")
    r = run_pytest(*args) if where == "child_process" else pytester.runpytest("-p", "no:cacheprovider", *args)
    assert r.ret == 4
    assert earlier.read_text() == '{"an earlier": "result"}'


def test_the_benchmark_json_option_is_made_a_path_where_it_would_open_the_file():
    import argparse

    from aorta.record.benchmark_json_option import as_path_option

    class Parser:
        optparser = argparse.ArgumentParser()

    action = Parser.optparser.add_argument("--benchmark-json", type=argparse.FileType("wb"))
    assert as_path_option(Parser()) and action.type is Path
    assert not as_path_option(Parser())  # already a path: left alone
