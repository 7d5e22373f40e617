"""Why a verdict moved: kernel summaries stored with each run, the kernel diff and the named causes, from
recorded-style kernel names (NVIDIA cuBLAS / nvjet / NCCL, as the profiler writes them) through the gate's
own compare, storage and rendering. Each cause has a case where it holds and the others stay silent."""

import json
import random

import pytest

from aorta.gate.baselines import baseline as bl
from aorta.gate.causes.causes import (
    COLLECTIVE_CONFIG,
    ENVIRONMENT,
    KERNEL_SELECTION,
    LAUNCH_PATH,
    PEER_WAIT,
    QUEUE_CONCURRENCY,
    THROTTLE,
    UNEXPLAINED,
)
from aorta.gate.comparison.compare import compare_runs
from aorta.gate.outputs.render import markdown, terminal_lines, verdict_document
from aorta.gate.verdicts.verdict import FASTER, SLOWER
from aorta.timeline import kernel_summary
from aorta.timeline.device_op import DeviceOp
from aorta.timeline.kernel_timeline import KernelRound

H100 = {
    "backend": "cuda",
    "gpu_name": "NVIDIA H100 80GB HBM3",
    "gpu_count": 1,
    "torch": "2.11.0+cu130",
    "env": {"NCCL_NVLS_ENABLE": "0"},
}
GEMM_CUBLAS = (
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
    "kernel__5x_cublas"
)
GEMM_NVJET = "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT"
ADD = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
    "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
)
SPIN = "at::cuda::(anonymous namespace)::spin_kernel(long)"
AR_LL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
AR_SIMPLE = "ncclDevKernel_AllReduce_Sum_bf16_RING_SIMPLE(ncclDevKernelArgsStorage<4096ul>)"
NAME = "benchmarks/hw_queue/test_large_gemm_only.py::test_large_gemm_only[bf16-streams4]"


def summary(kernels, k: int = 2, rounds: int = 5):
    """A kernel summary built the runner's way, from rounds of device ops: ``kernels`` is
    ``(raw name, launches per iteration, µs each, grid)``; each launch on its own stream, round-robin."""
    out = []
    for n in range(rounds):
        ops, t = [], n * 1e6
        for raw, launches, us, grid in kernels:
            for i in range(launches * k):
                ops.append(DeviceOp(raw, 7 + i % 4, t, us, "kernel", grid, (256, 1, 1) if grid else None))
                t += us
        out.append(KernelRound(n, ops))
    return kernel_summary.summarize(out, k)


def bench(device_ms, seed, kernels, **details):
    rng = random.Random(seed)
    ms = [device_ms * (1 + rng.gauss(0, 0.003)) for _ in range(20)]
    extra = {"aorta_schema": 3, "device_ms_per_iteration": ms, "kernel_summary": summary(kernels), **details}
    return {"fullname": NAME, "name": NAME.split("::")[-1], "extra_info": extra, "stats": {}}


def side(centers, kernels, seed=0, machine=None, **details):
    """Several fresh-process runs of one stack, combined as the gate combines them (run_entry keeps evidence)."""
    docs = [
        {
            "machine_info": {"python_version": "3.12.3", "aorta": {**H100, **(machine or {})}},
            "benchmarks": [bench(c, seed + i, kernels, **details)],
        }
        for i, c in enumerate(centers)
    ]
    return bl.combine_runs(docs, [f"run{i + 1}" for i in range(len(docs))])


BASE = [10.0, 10.03, 9.97, 10.01]
SLOW = [10.6, 10.63, 10.58]
SAME_TIME = [10.02, 9.98, 10.0]
KERNELS = [(GEMM_CUBLAS, 1, 4500.0, None), (ADD, 2, 200.0, None)]
HOST = {"host_enqueue_ms_per_iteration": 0.08, "effective_concurrency": 3.9, "gpu_busy_share": 0.98}


def why(ref, cand):
    comp = compare_runs(ref, cand)
    return comp, comp.why[NAME]


def causes(w):
    return [c["cause"] for c in w["causes"]]


def test_a_gemm_kernel_swap_names_both_kernels_and_kernel_selection():
    swapped = [(GEMM_NVJET, 1, 4800.0, None), (ADD, 2, 200.0, None)]
    comp, w = why(side(BASE, KERNELS, **HOST), side(SLOW, swapped, seed=10, **HOST))
    assert w["outcome"] == SLOWER and causes(w) == [KERNEL_SELECTION]
    ev = w["causes"][0]["evidence"]
    assert ev["op"] == "gemm"
    assert ev["baseline_kernels"] == [GEMM_CUBLAS] and ev["candidate_kernels"] == [GEMM_NVJET]
    assert ev["device_ms"] == [4.5, 4.8]  # ms per iteration: one 4500 µs launch each
    diff = w["kernels"]
    assert [r["name"] for r in diff["top"]] == [GEMM_NVJET]  # the only kernel that added time
    assert [r["name"] for r in diff["appeared"]] == [GEMM_NVJET]
    assert [r["name"] for r in diff["disappeared"]] == [GEMM_CUBLAS]
    assert diff["device_ms"] == [4.9, 5.2]  # 4.5 + 2 x 0.2, then 4.8 + 0.4
    text = "\n".join(terminal_lines(comp))
    assert f"cause kernel_selection: gemm: {GEMM_CUBLAS} -> {GEMM_NVJET}" in text
    assert f"new     {GEMM_NVJET}: 0 -> 4.8 ms/iter (+4.8)" in text
    assert "kernel_selection" in markdown([comp])
    doc = json.loads(json.dumps(verdict_document([comp], comp.exit_code)))
    assert doc["comparisons"][0]["why"][NAME]["causes"][0]["cause"] == KERNEL_SELECTION


def test_the_same_swap_the_other_way_is_faster_with_the_same_cause_and_removed_time_on_top():
    swapped = [(GEMM_NVJET, 1, 4800.0, None), (ADD, 2, 200.0, None)]
    _, w = why(side(SLOW, swapped, **HOST), side(BASE, KERNELS, seed=10, **HOST))
    assert w["outcome"] == FASTER and causes(w) == [KERNEL_SELECTION]
    assert [r["name"] for r in w["kernels"]["top"]] == [GEMM_NVJET]  # it lost 4.8 ms, the most


def test_a_calibrated_slowdown_adds_a_kernel_but_swaps_none_and_is_unexplained():
    padded = [
        *KERNELS,
        (SPIN, 1, 600.0, None),
    ]  # aorta/timing/slowdown.py pads each iteration with a spin kernel
    _, w = why(side(BASE, KERNELS, **HOST), side(SLOW, padded, seed=10, **HOST))
    assert KERNEL_SELECTION not in causes(w)
    assert causes(w) == [UNEXPLAINED]
    assert w["causes"][0]["evidence"]["not_recorded"] == ["telemetry"]
    assert [r["name"] for r in w["kernels"]["appeared"]] == ["at::cuda::spin_kernel"]
    assert w["kernels"]["disappeared"] == []


def telemetry(throttled, rounds=20, clock=1980.0):
    return {
        "telemetry": {
            "source": "nvml",
            "rounds": rounds,
            "throttled_rounds": throttled,
            "throttle_causes": {"sw_power_cap": throttled} if throttled else {},
            "figures": {"sm_clock_mhz": {"min": clock, "median": clock, "max": clock}},
        }
    }


def test_power_capped_rounds_in_the_candidate_only_name_throttle_with_the_clocks():
    slow_gemm = [(GEMM_CUBLAS, 1, 4800.0, None), (ADD, 2, 200.0, None)]
    _, w = why(
        side(BASE, KERNELS, **HOST, **telemetry(0)),
        side(SLOW, slow_gemm, seed=10, **HOST, **telemetry(12, clock=1400.0)),
    )
    assert causes(w) == [THROTTLE]
    ev = w["causes"][0]["evidence"]
    assert ev["throttled_rounds"] == [0, 36] and ev["rounds"] == [80, 60]  # 4 runs of 20, 3 runs of 12 of 20
    assert ev["throttle_causes"] == {"sw_power_cap": 36}
    assert ev["sm_clock_mhz_median"] == [1980.0, 1400.0]
    assert [r["name"] for r in w["kernels"]["top"]] == [GEMM_CUBLAS]


@pytest.mark.parametrize(
    "ref_rounds,cand_rounds,named",
    [
        ((0, 20), (5, 20), True),  # 0% -> 25%: at the edge
        ((0, 20), (4, 20), False),  # 0% -> 20%
        ((10, 30), (10, 20), False),  # 33% -> 50%: the calibrated slowdown on an H100, both sides capped
        ((10, 30), (12, 20), True),  # 33% -> 60%
    ],
)
def test_throttle_is_named_where_the_throttled_share_rose_by_a_quarter_of_the_rounds(
    ref_rounds, cand_rounds, named
):
    slow_gemm = [(GEMM_CUBLAS, 1, 4800.0, None), (ADD, 2, 200.0, None)]
    (hit_a, n_a), (hit_b, n_b) = ref_rounds, cand_rounds
    _, w = why(
        side(BASE, KERNELS, **HOST, **telemetry(hit_a, rounds=n_a)),
        side(SLOW, slow_gemm, seed=10, **HOST, **telemetry(hit_b, rounds=n_b)),
    )
    assert (THROTTLE in causes(w)) is named


def test_throttling_on_both_sides_alike_is_no_cause():
    slow_gemm = [(GEMM_CUBLAS, 1, 4800.0, None), (ADD, 2, 200.0, None)]
    _, w = why(
        side(BASE, KERNELS, **HOST, **telemetry(5)), side(SLOW, slow_gemm, seed=10, **HOST, **telemetry(5))
    )
    assert causes(w) == [UNEXPLAINED]
    assert w["causes"][0]["evidence"]["not_recorded"] == []


def test_host_enqueue_that_grew_while_kernel_time_did_not_is_the_launch_path():
    slow_host = {**HOST, "host_enqueue_ms_per_iteration": 0.11, "gpu_busy_share": 0.7}
    _, w = why(side(BASE, KERNELS, **HOST), side(SLOW, KERNELS, seed=10, **slow_host))
    assert causes(w) == [LAUNCH_PATH]
    ev = w["causes"][0]["evidence"]
    assert ev["host_enqueue_ms_per_iteration"] == [0.08, 0.11]
    assert ev["kernel_device_ms_per_iteration"] == [4.9, 4.9]
    assert ev["gpu_busy_share"] == [0.98, 0.7]


def test_same_kernels_at_lower_concurrency_is_queue_concurrency():
    lower = {**HOST, "effective_concurrency": 2.1}
    _, w = why(side(BASE, KERNELS, **HOST), side(SLOW, KERNELS, seed=10, **lower))
    assert causes(w) == [QUEUE_CONCURRENCY]
    assert w["causes"][0]["evidence"]["effective_concurrency"] == [3.9, 2.1]
    assert w["streams"]["effective_concurrency"] == [3.9, 2.1]


def test_a_collective_that_changed_protocol_or_channels_is_collective_config():
    ll = [(AR_LL, 1, 900.0, (16, 1, 1)), (ADD, 2, 200.0, None)]
    simple = [(AR_SIMPLE, 1, 1000.0, (16, 1, 1)), (ADD, 2, 200.0, None)]
    _, w = why(side(BASE, ll, **HOST), side(SLOW, simple, seed=10, **HOST))
    assert causes(w) == [COLLECTIVE_CONFIG]  # not kernel_selection: collectives are their own cause
    ev = w["causes"][0]["evidence"]
    assert ev["op"] == "collective:all_reduce"
    assert ev["baseline_kernels"] == [
        {
            "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
            "grid": [16, 1, 1],
            "algorithm": "RING",
            "protocol": "LL",
        }
    ]
    assert ev["candidate_kernels"][0]["protocol"] == "SIMPLE"
    fewer_channels = [(AR_LL, 1, 1000.0, (4, 1, 1)), (ADD, 2, 200.0, None)]
    _, w = why(side(BASE, ll, **HOST), side(SLOW, fewer_channels, seed=10, **HOST))
    assert causes(w) == [COLLECTIVE_CONFIG]
    assert w["causes"][0]["evidence"]["grid"] == [[16, 1, 1], [4, 1, 1]]


def fsdp(comm, wait, transfer):
    def metric(v):
        return {"value": v, "unit": "ms/step", "higher_is_better": False, "judged": False}

    return {
        "metrics": {
            "exposed_comm_ms_worst_rank": metric(comm),
            "exposed_wait_ms_worst_rank": metric(wait),
            "exposed_transfer_ms_worst_rank": metric(transfer),
        }
    }


def test_exposed_communication_that_grew_as_waiting_is_peer_wait_and_as_transfer_is_not():
    _, w = why(
        side(BASE, KERNELS, **HOST, **fsdp(5.0, 1.0, 4.0)),
        side(SLOW, KERNELS, seed=10, **HOST, **fsdp(8.0, 3.8, 4.2)),
    )
    assert causes(w) == [PEER_WAIT]
    assert w["causes"][0]["evidence"] == {
        "exposed_comm_ms": [5.0, 8.0],
        "exposed_wait_ms": [1.0, 3.8],
        "exposed_transfer_ms": [4.0, 4.2],
    }
    _, w = why(
        side(BASE, KERNELS, **HOST, **fsdp(5.0, 1.0, 4.0)),
        side(SLOW, KERNELS, seed=10, **HOST, **fsdp(8.0, 1.2, 6.8)),
    )
    assert PEER_WAIT not in causes(w)


def test_a_setting_that_differs_between_the_runs_is_named_as_environment():
    _, w = why(
        side(BASE, KERNELS, **HOST),
        side(
            SLOW,
            KERNELS,
            seed=10,
            machine={"env": {"NCCL_NVLS_ENABLE": "0", "CUDA_DEVICE_MAX_CONNECTIONS": "1"}},
            **HOST,
        ),
    )
    assert causes(w) == [ENVIRONMENT]
    assert w["causes"][0]["evidence"]["differences"] == [
        {"group": "settings", "name": "CUDA_DEVICE_MAX_CONNECTIONS", "baseline": "unset", "candidate": "1"}
    ]


def test_a_version_change_alone_is_not_an_environment_cause():
    _, w = why(side(BASE, KERNELS, **HOST), side(SLOW, KERNELS, seed=10, machine={"torch": "2.12.0"}, **HOST))
    assert causes(w) == [UNEXPLAINED]


def test_runs_without_kernel_summaries_say_so_and_stay_unexplained():
    ref, cand = side(BASE, KERNELS), side(SLOW, KERNELS, seed=10)
    for doc in (ref, cand):
        for e in doc["aorta_runs"]:
            e.pop("evidence")
        for b in doc["benchmarks"]:
            b["extra_info"].pop("kernel_summary")
    comp, w = why(ref, cand)
    assert w["kernels"] is None and causes(w) == [UNEXPLAINED]
    assert "kernel summaries" in w["causes"][0]["evidence"]["not_recorded"]
    assert "no kernel summary on one side" in "\n".join(terminal_lines(comp))


def test_an_unchanged_benchmark_gets_no_why():
    comp = compare_runs(side(BASE, KERNELS, **HOST), side(SAME_TIME, KERNELS, seed=10, **HOST))
    assert comp.why == {}


def test_each_saved_run_keeps_its_evidence_and_a_baseline_holds_it(tmp_path):
    doc = side(BASE, KERNELS, **HOST)
    path, n = bl.save_baseline(doc, tmp_path, "old", {})
    saved = json.loads(path.read_text())
    runs = saved["aorta_baseline"]["runs"]
    assert n == 4 and all(NAME in r["evidence"] for r in runs)
    ev = runs[0]["evidence"][NAME]
    assert ev["host_enqueue_ms_per_iteration"] == 0.08
    assert [k["name"] for k in ev["kernels"]["kernels"]] == [
        GEMM_CUBLAS,
        "at::native::vectorized_elementwise_kernel<4,at::native::CUDAFunctor_add<float>,Array<char*,3>>",
    ]
    _, w = why(saved, side(SLOW, [(GEMM_NVJET, 1, 4800.0, None), (ADD, 2, 200.0, None)], seed=10, **HOST))
    assert causes(w) == [KERNEL_SELECTION] and w["kernels"]["runs"] == [4, 3]


@pytest.mark.parametrize("n_kernels", [3, 40])
def test_a_summary_stays_small_however_many_kernels_ran(n_kernels):
    many = [(f"void k{i}<float>(float*, int)", 1, 10.0 + i, (128, 1, 1)) for i in range(n_kernels)]
    s = summary(many)
    assert len(s["kernels"]) == min(n_kernels, kernel_summary.TOP_N)
    assert s["other"]["kernels"] == max(0, n_kernels - kernel_summary.TOP_N)
    assert s["total"]["device_ms"] == pytest.approx(sum(10.0 + i for i in range(n_kernels)) / 1e3)
    assert kernel_summary.summary_bytes(s) < 2000


def test_report_html_shows_the_why_of_each_moved_benchmark_from_the_verdict_file(tmp_path):
    from aorta.report.html_page import _verdicts_section
    from aorta.report.verdicts import load_verdict_file

    swapped = [(GEMM_NVJET, 1, 4800.0, None), (ADD, 2, 200.0, None)]
    comp = compare_runs(side(BASE, KERNELS, **HOST), side(SLOW, swapped, seed=10, **HOST))
    path = tmp_path / "v.json"
    path.write_text(json.dumps(verdict_document([comp], comp.exit_code)))
    verdicts = load_verdict_file(path)
    assert verdicts[0]["verdict"] == SLOWER and verdicts[0]["why"]["causes"][0]["cause"] == KERNEL_SELECTION
    page = _verdicts_section({"verdicts": verdicts}, "")
    assert f"why {NAME} is SLOWER: kernel_selection</summary>" in page
    assert f"new     {GEMM_NVJET}: 0 -&gt; 4.8 ms/iter" in page  # escaped, in a <pre>


def test_a_library_that_moves_some_calls_to_another_kernel_is_kernel_selection_too():
    # three GEMMs per iteration: the baseline runs all on cuBLAS's kernel, the candidate moves two to nvjet
    base = [(GEMM_CUBLAS, 3, 1500.0, None), (ADD, 2, 200.0, None)]
    moved = [(GEMM_CUBLAS, 1, 1500.0, None), (GEMM_NVJET, 2, 1650.0, None), (ADD, 2, 200.0, None)]
    _, w = why(side(BASE, base, **HOST), side(SLOW, moved, seed=10, **HOST))
    assert causes(w) == [KERNEL_SELECTION]
    ev = w["causes"][0]["evidence"]
    assert ev["baseline_kernels"] == [GEMM_CUBLAS] and ev["candidate_kernels"] == [GEMM_NVJET]
    assert ev["kernels"][0] == {"name": GEMM_CUBLAS, "launches": [3.0, 1.0], "device_ms": [4.5, 1.5]}


def test_more_launches_of_a_kernel_alone_swap_nothing():
    base = [(SPIN, 1, 1000.0, None), (ADD, 2, 200.0, None)]
    more = [(SPIN, 2, 1000.0, None), (ADD, 2, 200.0, None)]  # a slowdown's spin on a spin workload
    _, w = why(side(BASE, base, **HOST), side(SLOW, more, seed=10, **HOST))
    assert KERNEL_SELECTION not in causes(w)
    assert [r["name"] for r in w["kernels"]["launch_changes"]] == ["at::cuda::spin_kernel"]


@pytest.mark.parametrize(
    "module",
    [
        "aorta.timeline.kernel_names",
        "aorta.timeline.kernel_summary",
        "aorta.gate.causes.run_evidence",
        "aorta.gate.causes.kernel_diff",
        "aorta.gate.causes.causes",
        "aorta.gate.causes.why",
        "aorta.gate.causes.why_text",
        "aorta.sweep.knob_evidence",
    ],
)
def test_each_module_imports_on_its_own_and_without_torch(module):
    import subprocess
    import sys
    from pathlib import Path

    code = f"import sys; import {module}; assert 'torch' not in sys.modules, 'torch imported'"
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True, env={"PYTHONPATH": str(root)})


def test_the_throttle_cause_says_which_side_word_for_word():
    slow_gemm = [(GEMM_CUBLAS, 1, 4800.0, None), (ADD, 2, 200.0, None)]
    _, w = why(
        side(BASE, KERNELS, **HOST, **telemetry(0)),
        side(SLOW, slow_gemm, seed=10, **HOST, **telemetry(12, clock=1400.0)),
    )
    assert (
        w["causes"][0]["summary"]
        == "the candidate was throttled in 36 rounds (sw_power_cap); throttled share 0% -> 60%"
    )
    assert w["causes"][0]["evidence"]["throttled_share"] == [0.0, 0.6]
    # the other way round: the baseline throttled, the candidate faster
    _, w = why(
        side(SLOW, slow_gemm, seed=10, **HOST, **telemetry(12, clock=1400.0)),
        side(BASE, KERNELS, **HOST, **telemetry(0)),
    )
    assert causes(w) == [THROTTLE]
    assert (
        w["causes"][0]["summary"]
        == "the baseline was throttled in 36 rounds (sw_power_cap); throttled share 60% -> 0%"
    )
    assert w["causes"][0]["evidence"]["throttled_share"] == [0.6, 0.0]
