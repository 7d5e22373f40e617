"""The plugin from the outside: a CPU run of the P0 benchmarks and what lands in the JSON."""

import json
from pathlib import Path

import pytest
from benchmark_run import output_tail, run_benchmarks
from run_once import once

from aorta import stats

pytestmark = pytest.mark.slow  # runs the P0 benchmarks and tiny benchmark files in pytest subprocesses

REPO = Path(__file__).resolve().parents[1]

P0_FIELDS = {
    "streams_requested",
    "distinct_streams",
    "issue_order",
    "sync_mode",
    "timing_method",
    "iterations_per_round",
    "per_stream_busy_ms",
    "effective_concurrency",
    "host_wall",
    "metrics",
    "headline_metric",
    "device_ms_per_iteration",
    "unavailable",
}


@pytest.fixture(scope="module")
def p0_run(pytestconfig, tmp_path_factory):
    """One CPU run of the P0 benchmarks at smoke size, both issue orders, 1 and 2 streams (one per session)."""
    return once(pytestconfig, tmp_path_factory, "p0", _p0_run)


def _p0_run(folder):
    out = folder / "run.json"
    proc = run_benchmarks(
        str(REPO / "benchmarks" / "hw_queue"),
        "-m",
        "p0",
        "--aorta-streams=1,2",
        "--aorta-issue-order=breadth,depth",
        "--aorta-rounds=3",
        "--aorta-warmup=1",
        root=REPO,
        json_out=out,
    )
    return proc, json.loads(out.read_text()) if out.exists() else None


def test_p0_benchmarks_pass_on_cpu(p0_run):
    proc, data = p0_run
    assert proc.returncode == 0, output_tail(proc)
    names = {b["name"].split("[")[0] for b in data["benchmarks"]}
    assert names == {
        "test_large_gemm_only",
        "test_tiny_kernel_stress",
        "test_hetero_kernels",
        "test_stream_concurrency",
    }


def test_json_holds_the_aorta_fields(p0_run):
    _, data = p0_run
    for bench in data["benchmarks"]:
        extra, name = bench["extra_info"], bench["name"]
        assert P0_FIELDS <= set(extra), name
        # the values are this benchmark's: its parameters, this run's options, CPU timing
        n = int(name.split("[streams")[1].split("-")[0])
        assert extra["streams_requested"] == bench["params"]["streams"] == n
        assert extra["issue_order"] == bench["params"].get(
            "issue_order", "breadth"
        )  # breadth where not swept
        assert extra["sync_mode"] == "per_round" and extra["clock"] == "host_clock"
        k = extra["iterations_per_round"]
        assert k >= 1 and extra["timing_method"] == ("events" if k == 1 else "events_k_batched")
        assert len(extra["device_ms_per_iteration"]) == 3 and min(extra["device_ms_per_iteration"]) > 0
        assert extra["host_wall"]["enqueue_ms_median"] > 0 and extra["host_wall"]["wall_ms_median"] > 0
        assert extra["distinct_streams"] is None and "distinct_streams" in extra["unavailable"]
        assert extra["per_stream_busy_ms"] is None and extra["effective_concurrency"] is None
        assert "CPU" in extra["unavailable"]["effective_concurrency"]
        # every stream asked for ran the work its workload declares (the launch log on CPU)
        (check,) = extra["stream_work"]["checks"]
        assert check["ok"] and check["streams_with_work"] == n, (name, check)
        if extra["headline_metric"] in extra["metrics"]:
            headline = extra["metrics"][extra["headline_metric"]]
            assert len(headline["samples"]) == 3 and headline["unit"]
            assert (
                headline["value"] == pytest.approx(stats.median(headline["samples"]))
                and headline["value"] > 0
            )
        else:  # a headline read from kernel timestamps (hetero_kernels): unavailable on CPU, with the reason
            assert "CPU" in extra["unavailable"][extra["headline_metric"]]


def test_stats_hold_device_time_per_round(p0_run):
    _, data = p0_run
    for bench in data["benchmarks"]:
        samples_ms = bench["extra_info"]["device_ms_per_iteration"]
        assert bench["stats"]["rounds"] == len(samples_ms) == 3
        assert bench["stats"]["median"] == pytest.approx(stats.median(samples_ms) / 1e3)


def test_machine_info_records_the_stack(p0_run):
    _, data = p0_run
    import torch

    info = data["machine_info"]["aorta"]
    assert info["backend"] == "cpu"
    assert {"torch", "cuda", "hip", "driver", "env", "hardware_queues"} <= set(info)
    assert info["torch"] == torch.__version__ and info["cuda"] == torch.version.cuda
    assert info["gpu_count"] == 0 and info["gpu_name"] is None


def test_terminal_summary_lists_every_benchmark(p0_run):
    proc, data = p0_run
    assert "aorta: device-timed results" in proc.stdout
    for bench in data["benchmarks"]:
        assert bench["name"] in proc.stdout
    assert "benchmark JSON:" in proc.stdout


def test_one_stream_figure_beside_tiny_kernels(p0_run):
    _, data = p0_run
    tiny = [b for b in data["benchmarks"] if b["name"].startswith("test_tiny_kernel_stress[streams2")]
    assert tiny
    for b in tiny:
        assert "one_stream_us_per_launch" in b["extra_info"]["metrics"]


def test_the_one_stream_reference_is_the_recorded_one_stream_run_not_a_second_run(p0_run):
    # The same configuration ran as its own benchmark (streams1): its result is the reference, so the figure
    # beside the two-stream run is exactly that benchmark's (a second run would differ in its last digits).
    # (One stream has no issue order: streams1-breadth and streams1-depth are the same configuration, and
    # the reference is the latest of them to run before.)
    _, data = p0_run
    tiny = [b for b in data["benchmarks"] if b["name"].startswith("test_tiny_kernel_stress")]
    ones = [b["extra_info"]["metrics"]["us_per_launch"] for b in tiny if "[streams1-" in b["name"]]
    for b in tiny:
        if "[streams2-" in b["name"]:
            beside = b["extra_info"]["metrics"]["one_stream_us_per_launch"]
            assert any(
                beside["value"] == one["value"] and beside["samples"] == one["samples"] for one in ones
            )


def test_hetero_reports_latency_alone_and_beside_gemms(p0_run):
    _, data = p0_run
    hetero = [b for b in data["benchmarks"] if b["name"].startswith("test_hetero_kernels")]
    assert len(hetero) == 2  # breadth and depth at 2 streams; 1 stream is below its minimum
    for bench in hetero:
        extra = bench["extra_info"]
        # kernel timestamps only: unavailable on CPU, with the reason (arithmetic: test_interval_figures_double.py)
        names = {"tiny_us_per_kernel", "tiny_us_per_kernel_alone", "convoy_slowdown"}
        assert not names & set(extra["metrics"])
        assert all("CPU backend" in extra["unavailable"][name] for name in names)
        assert extra["workload_info"]["with_gemms"] is True
        # The tiny kernels' run alone is recorded with this benchmark: its timed seconds and its phases.
        alone = extra["reference_phase_s"]
        assert {"setup", "check", "timed_rounds", "figures"} <= set(alone)
        assert alone["timed_rounds"] >= extra["reference_timed_s"] > 0


REFERENCE_FIRST = """
from aorta.hw_queue.workloads.hetero_kernels import HeteroKernels
from aorta.hw_queue.workloads.tiny_kernel_stress import TinyKernelStress


def test_two_streams_first(hw_queue):
    one = hw_queue(TinyKernelStress, 1, mode="eager", record=False)
    hw_queue(TinyKernelStress, 2, mode="eager", reference=one)


def test_one_stream_after(hw_queue):
    hw_queue(TinyKernelStress, 1, mode="eager")


def test_one_stream_again(hw_queue):
    hw_queue(TinyKernelStress, 1, mode="eager")


def test_hetero(hw_queue):
    alone = hw_queue(HeteroKernels, 2, with_gemms=False, record=False)
    hw_queue(HeteroKernels, 2, reference=alone)


def test_hetero_alone_recorded(hw_queue):
    hw_queue(HeteroKernels, 2, with_gemms=False)
"""


def test_a_benchmark_whose_configuration_ran_as_a_reference_records_that_run(run_pytest, pytester):
    # The one-stream configuration runs first as the two-stream benchmark's reference: the one-stream benchmark
    # after it records that run (the same samples the two-stream one reads), said in its record, and the run
    # ledger counts its timed seconds once (with the benchmark that read it).
    pytester.makepyfile(test_ref=REFERENCE_FIRST)
    out = pytester.path / "run.json"
    result = run_pytest("--aorta-rounds=3", "--aorta-warmup=1", f"--benchmark-json={out}")
    result.assert_outcomes(passed=5)
    by_name = {b["name"]: b["extra_info"] for b in json.loads(out.read_text())["benchmarks"]}
    two, one, again = (
        by_name[f"test_{n}"] for n in ("two_streams_first", "one_stream_after", "one_stream_again")
    )
    beside = two["metrics"]["one_stream_us_per_launch"]
    assert beside["samples"] == one["metrics"]["us_per_launch"]["samples"]
    assert "first as the reference of an earlier benchmark" in one["measured_as_reference"]
    assert "measured_as_reference" not in two
    # Once: a second benchmark of the configuration measures it again.
    assert "measured_as_reference" not in again
    assert again["metrics"]["us_per_launch"]["samples"] != one["metrics"]["us_per_launch"]["samples"]
    # Only a reference that timed the plan's rounds: hetero_kernels' alone run times one, so the benchmark of
    # that configuration measures its own 3.
    alone = by_name["test_hetero_alone_recorded"]
    assert "measured_as_reference" not in alone
    assert len(alone["device_ms_per_iteration"]) == 3  # one per round (one iteration a round at smoke size)
    assert two["reference_timed_s"] == one["timed_s"] > 0

    from aorta.gate.session.wall_record import WallRecorder

    wall = WallRecorder(None).record([{"extra_info": two}, {"extra_info": one}])  # type: ignore[arg-type]
    assert wall["timed_s"] == pytest.approx(two["timed_s"] + two["reference_timed_s"], abs=2e-3)


BROKEN = """
import torch
import pytest
from aorta.hw_queue.workloads.large_gemm_only import LargeGemmOnly


class SkipsLastStream(LargeGemmOnly):
    def step(self, rec):
        for i in range(self.n_streams - 1 if rec.n_streams > 1 and rec.streams[0] is not rec.streams[-1] else self.n_streams):
            with rec.on(i):
                torch.matmul(self.a[i], self.b[i], out=self.c[i])


class RunsOutOfMemory(LargeGemmOnly):
    def setup(self):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 512.00 GiB")


def test_wrong_result_fails(hw_queue):
    hw_queue(SkipsLastStream, 2)


def test_oom_fails_naming_the_size(hw_queue):
    hw_queue(RunsOutOfMemory, 2)


def test_the_run_goes_on(hw_queue):
    hw_queue(LargeGemmOnly, 2)


def test_above_the_maximum_skips(hw_queue):
    hw_queue(LargeGemmOnly, 200)
"""


def test_wrong_result_and_oom_fail_that_test_only(run_pytest, pytester):
    pytester.makepyfile(test_broken=BROKEN)
    result = run_pytest("--aorta-rounds=2", "--aorta-warmup=0", "-rA")
    result.assert_outcomes(passed=1, failed=2, skipped=1)
    out = result.stdout.str()
    assert "large_gemm_only output check failed, nothing timed" in out
    assert "out of memory at size 2 x bf16 GEMM 96x96x96" in out
    assert "large_gemm_only supports at most 128 streams (asked for 200)" in out


def test_xdist_says_benchmarks_are_disabled(run_pytest, pytester):
    pytest.importorskip("xdist")
    pytester.makepyfile(
        test_x="from aorta.hw_queue.workloads.large_gemm_only import LargeGemmOnly\n\n"
        "def test_g(hw_queue):\n    hw_queue(LargeGemmOnly, 1)\n"
    )
    result = run_pytest("-n", "2", "-rs")
    out = result.stdout.str()
    assert "pytest-xdist (-n) disables pytest-benchmark" in out


@pytest.mark.parametrize("autoload", ["entry point", "checkout fallback"])
def test_a_run_from_the_repository_root_loads_the_plugin_once(autoload):
    """From the repository root the plugin comes from the installed entry point (the root conftest then
    stands aside) or, where no entry point loads (a checkout never installed; simulated here by turning
    entry points off), from the root conftest's one fallback: either way once, under the name ``aorta``."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    extra = []
    if autoload == "checkout fallback":
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        extra = ["-p", "benchmark"]  # pytest-benchmark's own entry point, which the fallback does not replace
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "benchmarks/hw_queue/test_large_gemm_only.py",
            "-k",
            "streams1 and fp32",
            "--aorta-streams=1",
            "--aorta-rounds=2",
            "--aorta-warmup=0",
            "-p",
            "no:cacheprovider",
            "--trace-config",
            *extra,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, output_tail(proc)
    # --trace-config lists the active plugins as "name : path", one a line
    registered = [
        name.strip()
        for name, _, path in (line.partition(":") for line in proc.stdout.splitlines())
        if name.strip().startswith("aorta") and path.strip().startswith(str(REPO / "aorta"))
    ]
    assert registered == [
        "aorta",
        "aorta.record.redact_plugin",
        "aorta.telemetry.plugin",
        "aorta.report.plugin",
        "aorta.gate.plugin",
        "aorta.fsdp.plugin",
        "aorta.history.plugin",
    ], proc.stdout[:4000]
    assert "aorta: device-timed results" in proc.stdout
