"""rag_pipeline, graph_subgraphs, async_dataload, zero_offload, torch_compile and copy_compute_overlap on CPU.

Each runs at smoke size through the runner (setup -> one-stream check -> timing loop -> figures) with a
tiny timing plan; the tests read what lands in extra_info.
"""

import pytest

from aorta.device import Device
from aorta.hw_queue.runner import run_workload
from aorta.hw_queue.workload import WorkloadCheckError, WorkloadUnavailable
from aorta.hw_queue.workloads import REGISTRY
from aorta.hw_queue.workloads.async_dataload import AsyncDataload, role_streams
from aorta.hw_queue.workloads.copy_compute_overlap import CopyComputeOverlap, split_streams
from aorta.hw_queue.workloads.graph_subgraphs import GraphSubgraphs
from aorta.hw_queue.workloads.rag_pipeline import RagPipeline
from aorta.hw_queue.workloads.torch_compile import TorchCompile
from aorta.hw_queue.workloads.zero_offload import ZeroOffload, copy_roles
from aorta.timeline.kernel_timeline import NO_KERNELS_ON_CPU
from aorta.timing import TimingPlan

PLAN = TimingPlan(warmup_rounds=1, rounds=2, iterations_per_round=1)
MINE = (RagPipeline, GraphSubgraphs, AsyncDataload, ZeroOffload, TorchCompile, CopyComputeOverlap)


@pytest.fixture(scope="module")
def cpu():
    return Device.open("cpu")


def run(device, cls, n, plan=PLAN, reference=None, **kw):
    w = cls(device, n, size="smoke", **kw)
    return w, run_workload(device, w, w.make_streams(), plan, reference_run=reference)


def metric(extra, name):
    return extra["metrics"][name]


def test_all_six_are_registered_with_a_priority_category_and_range():
    for cls in MINE:
        spec = REGISTRY[cls.spec.name].spec
        assert spec.priority in ("p1", "p2", "p3") and spec.category
        assert spec.min_streams == 1 and spec.max_streams >= 16  # 1, 4 and 16 streams all run


@pytest.mark.parametrize(
    "cls",
    [
        RagPipeline,
        GraphSubgraphs,
        AsyncDataload,
        ZeroOffload,
        pytest.param(TorchCompile, marks=pytest.mark.slow),  # compiles: seconds
        CopyComputeOverlap,
    ],
    ids=lambda c: c.spec.name,
)
def test_every_stream_given_gets_work(cpu, cls):
    _, res = run(cpu, cls, 4)
    assert res.traced is None  # CPU: no kernel timestamps, so no second pass and no interval figures
    assert all(r.stream_intervals_ms == {} for r in res.run.rounds)  # device time: rounds without events
    extra = res.extra_info
    assert extra["unavailable"]["interval_metrics"] == NO_KERNELS_ON_CPU
    assert (
        extra["per_stream_busy_ms"] is None
        and extra["unavailable"]["effective_concurrency"] == NO_KERNELS_ON_CPU
    )
    assert extra["workload"] == cls.spec.name and extra["headline_metric"] in extra["metrics"]
    assert extra["dtype"] == "bf16"
    assert len(extra["device_ms_per_iteration"]) == 2
    # Each of the four streams ran work: the launch log of one iteration saw ops in every stream's blocks, at
    # least what the workload declares for each (aorta/hw_queue/stream_work.py).
    (check,) = extra["stream_work"]["checks"]
    assert check["ok"] and check["by_stream"] and check["streams_with_work"] == 4
    assert extra["stream_work"]["declared"]["streams_declared"] == 4
    assert all(ms > 0 for ms in extra["device_ms_per_iteration"])


def test_rag_pipeline_reports_queries_and_stage_busy(cpu):
    w, res = run(cpu, RagPipeline, 4)
    extra = res.extra_info
    qps = metric(extra, "queries_per_s")
    assert qps["unit"] == "queries/s" and qps["higher_is_better"] and len(qps["samples"]) == 2
    assert not any(name.endswith("_busy_ms") for name in extra["metrics"])  # CPU: no kernel timestamps
    info = extra["workload_info"]
    assert info["query_batches"] == 4 and info["stages"] == ["embed", "retrieve", "rerank", "generate"]
    assert w.out_tokens.shape == (4, 2, 3)  # (Q, B, S) greedy tokens


def test_rag_pipeline_depth_issue_gives_the_same_answer(cpu):
    breadth, _ = run(cpu, RagPipeline, 3)
    depth, _ = run(cpu, RagPipeline, 3, issue_order="depth")
    assert (breadth.out_tokens == depth.out_tokens).all()


def test_graph_subgraphs_eager_and_graph_mode_on_cpu(cpu):
    _, res = run(cpu, GraphSubgraphs, 2)
    extra = res.extra_info
    assert metric(extra, "samples_per_s")["value"] > 0
    assert extra["workload_info"]["mode"] == "eager" and extra["workload_info"]["subgraphs"] == 4
    with pytest.raises(WorkloadUnavailable, match="CUDA/HIP graphs need a GPU"):
        run(cpu, GraphSubgraphs, 2, mode="graph")
    with pytest.raises(ValueError, match="mode must be one of"):
        GraphSubgraphs(cpu, 2, mode="lazy")


def test_async_dataload_reports_images_and_copy_rate(cpu):
    _, res = run(cpu, AsyncDataload, 3)
    extra = res.extra_info
    assert metric(extra, "images_per_s")["unit"] == "images/s"
    assert set(extra["metrics"]) == {"images_per_s"}  # copy rate and busy need kernel timestamps (GPU)
    info = extra["workload_info"]
    assert info["role_streams"] == {"copy": [0], "preprocess": [1], "compute": [2]}
    assert info["slots"] == 2 and info["pinned_host"] is False


def test_dataload_and_offload_roles_cover_every_stream():
    assert role_streams(1) == {"copy": [0], "preprocess": [0], "compute": [0]}
    assert role_streams(2) == {"copy": [0], "preprocess": [1], "compute": [0]}
    assert copy_roles(2) == {"compute": [0], "prefetch": [1], "offload": [1]}
    roles = copy_roles(6)
    assert sorted(i for v in roles.values() for i in v) == list(range(6))


def test_zero_offload_headline_comes_from_the_timed_rounds(cpu):
    w, res = run(cpu, ZeroOffload, 5)
    extra = res.extra_info
    assert extra["headline_metric"] == "tokens_per_s"
    assert metric(extra, "tokens_per_s")["samples"] == [
        w.cfg["T"] / (ms * 1e-3) for ms in extra["device_ms_per_iteration"]
    ]
    assert "copy_gbps" not in extra["metrics"]  # bytes / copy kernel time: GPU only
    D, L = w.cfg["D"], w.cfg["L"]
    assert extra["workload_info"]["copy_bytes_per_iteration"] == 2 * L * D * D * 2  # bf16 in and out


@pytest.mark.slow  # compiles: seconds
def test_torch_compile_reports_compile_time_apart(cpu):
    _, res = run(cpu, TorchCompile, 2)
    extra = res.extra_info
    compile_s = metric(extra, "compile_s")
    assert compile_s["unit"] == "s" and compile_s["higher_is_better"] is False and compile_s["value"] > 0
    assert (
        "host clock" in compile_s["source"] and "one value per run" in compile_s["source"]
    )  # one value per run, and how it is judged
    assert metric(extra, "steady_state_ms")["samples"] == extra["device_ms_per_iteration"]
    info = extra["workload_info"]
    assert info["backend"] == "aot_eager" and "smoke size" in info["backend_reason"]


def test_torch_compile_without_a_usable_backend_is_unavailable(cpu):
    w = TorchCompile(cpu, 1, size="smoke", backend="no_such_backend")
    with pytest.raises(WorkloadUnavailable, match="no_such_backend"):
        w.setup()


def test_copy_compute_overlap_saving_against_its_serial_twin(cpu):
    _, serial = run(cpu, CopyComputeOverlap, 1, mode="serial", work_streams=4)
    for name in ("h2d_gbps", "d2h_gbps", "d2d_gbps", "copy_gbps", "copy_busy_ms", "compute_busy_ms"):
        assert name not in serial.extra_info["metrics"]  # copy kernel times: GPU only
    w, res = run(cpu, CopyComputeOverlap, 4, reference=serial)
    extra = res.extra_info
    s, o = metric(extra, "serial_ms")["value"], metric(extra, "iteration_ms")["value"]
    assert metric(extra, "saving_ms")["value"] == pytest.approx(s - o)
    assert metric(extra, "saving_ratio")["value"] == pytest.approx((s - o) / s)
    for name in ("h2d", "d2h", "d2d"):
        assert (
            "GPU only" in extra["unavailable"][f"serial_{name}_gbps"]
        )  # the serial run had no copy kernel times
    assert extra["unavailable"]["interval_metrics"] == NO_KERNELS_ON_CPU  # overlap and copy rates: GPU only
    assert not {"copy_compute_overlap_ratio", "copy_gbps"} & set(extra["metrics"])
    info = extra["workload_info"]
    assert info["copy_ran_beside_compute"] is None and info["copy_streams"] == [3]
    assert serial.extra_info["workload_info"]["gemms_per_iteration"] == info["gemms_per_iteration"]
    assert serial.extra_info["workload_info"]["copy_bytes"] == info["copy_bytes"] == 1 << 20


def test_copy_compute_overlap_without_serial_run_says_why(cpu):
    _, res = run(cpu, CopyComputeOverlap, 2, copy_mb=0.25)
    assert "saving_ms" in res.extra_info["unavailable"]
    assert res.extra_info["workload_info"]["copy_bytes"] == 1 << 18
    assert split_streams(16) == (list(range(12)), [12, 13, 14, 15])


class BrokenDataload(AsyncDataload):
    """Skips the CNN for batches whose compute stream is not stream 0: outputs left unwritten."""

    def _cnn(self, x):
        out = super()._cnn(x)
        return out if self._stream_is_first else out * float("nan")

    def step(self, rec):
        self._stream_is_first = all(s is rec.stream(0) for s in rec.streams)
        super().step(rec)


def test_a_workload_that_differs_across_streams_fails_the_check(cpu):
    with pytest.raises(WorkloadCheckError, match="non-finite|differs"):
        run(cpu, BrokenDataload, 3)
