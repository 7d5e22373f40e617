"""Every interval figure's arithmetic, on CPU, from a kernel timeline built from known intervals.

On CPU the runner records these figures as unavailable (no kernel timestamps); on a GPU they come from the
profiler's trace. Here ``tests/kernel_trace_double.py`` writes the trace a GPU would have produced for
intervals chosen by hand, it is parsed by the library's own path, and each workload's ``extra_metrics``
(and the runner's per-stream figures) must give the answer worked out beside each test.
"""

from __future__ import annotations

import pytest
import torch
from kernel_trace_double import PretendGpu, blocks_from_plan, traced_run

from aorta import stats
from aorta.device import Device
from aorta.hw_queue import runner
from aorta.hw_queue.workloads.async_dataload import AsyncDataload
from aorta.hw_queue.workloads.continuous_batch import ContinuousBatch
from aorta.hw_queue.workloads.copy_compute_overlap import COPY_BESIDE_THRESHOLD, CopyComputeOverlap
from aorta.hw_queue.workloads.fsdp_tp import FsdpTp
from aorta.hw_queue.workloads.grad_accum import GradAccum
from aorta.hw_queue.workloads.hetero_kernels import HeteroKernels
from aorta.hw_queue.workloads.moe import Moe
from aorta.hw_queue.workloads.rag_pipeline import RagPipeline
from aorta.hw_queue.workloads.speculative_decode import SpeculativeDecode
from aorta.hw_queue.workloads.zero_offload import ZeroOffload
from aorta.timing import TimingPlan

PLAN = TimingPlan(warmup_rounds=0, rounds=1, iterations_per_round=1)


@pytest.fixture(scope="module")
def cpu():
    torch.set_num_threads(1)
    return Device.open("cpu")


def figures(metrics):
    return {m.name: m.value for m in metrics}


def set_up(cpu, cls, n, gpu=False, **kw):
    w = cls(cpu, n, size="smoke", **kw)
    w.setup()
    if gpu:
        w.device = PretendGpu(cpu)  # the overlap figures are GPU-only; the double stands in for the trace
    return w


def stepped(cpu, cls, n, **kw):
    """Set up and run the step once through the runner (plans and host-read counts exist after it)."""
    w = cls(cpu, n, size="smoke", **kw)
    runner.run_workload(cpu, w, cpu.streams(n), PLAN)
    return w


# -- the runner's per-stream figures ----------------------------------------------------------------
def test_runner_stream_figures_from_kernel_timestamps():
    # round 0: s0 [0,4], s1 [2,6]: span 6, busy 4 + 4 -> concurrency 8/6, GPU busy |[0,6]| / 6 = 1
    # round 1: s0 [0,1], s1 [3,4]: span 4, busy 1 + 1 -> concurrency 0.5, GPU busy 2/4 = 0.5
    run = traced_run(
        [[(0, None, 0, 4), (1, None, 2, 6)], [(0, None, 0, 1), (1, None, 3, 4)]], iterations_per_round=2
    )
    unavailable: dict = {}
    out = runner._kernel_figures(run, [0.5, 0.5], None, unavailable)
    assert unavailable == {}
    assert out["effective_concurrency"] == pytest.approx((8 / 6 + 0.5) / 2)
    assert out["effective_concurrency_samples"] == pytest.approx([8 / 6, 0.5])
    assert out["gpu_busy_share"] == pytest.approx(0.75) and out["reading_notes"] == []
    assert out["per_stream_busy_ms"] == pytest.approx([(4 / 2 + 1 / 2) / 2] * 2)  # per iteration: / K = 2
    assert out["distinct_streams"] == out["streams_with_work"] == 2
    assert out["kernel_pass"]["kernel_span_ms_per_iteration"] == pytest.approx((6 / 2 + 4 / 2) / 2)
    assert out["kernel_pass"]["ratio_to_timed"] == pytest.approx(
        1.0 / 2 / 0.5
    )  # traced 1 ms / K vs timed 0.5


def test_runner_notes_a_host_bound_round():
    run = traced_run([[(0, None, 0, 1), (1, None, 3, 4)]])  # GPU busy 2 of 4 ms
    out = runner._kernel_figures(run, [4.0], None, {})
    assert out["gpu_busy_share"] == pytest.approx(0.5)
    assert out["reading_notes"] == [
        "host-bound: GPU busy 50% of the round; the host's launch path is what is measured"
    ]


def test_runner_says_why_without_kernel_timestamps():
    unavailable: dict = {}
    out = runner._kernel_figures(None, [1.0], "CPU backend: no kernels", unavailable)
    assert out["effective_concurrency"] is None and unavailable["gpu_busy_share"] == "CPU backend: no kernels"


# -- the workloads' own figures ---------------------------------------------------------------------
def test_moe_expert_concurrency(cpu):
    # expert kernels: s0 [1,3]; s1 [1,3] and [3,4] -> busy 2 + 3 over the experts' span [1,4] = 5/3
    blocks = [
        (0, "gate", 0, 1),
        (0, "expert", 1, 3),
        (1, "expert", 1, 3),
        (1, "expert", 3, 4),
        (0, "combine", 4, 5),
    ]
    metrics, unavailable = Moe(cpu, 2, size="smoke").extra_metrics(traced_run([blocks, blocks]))
    assert figures(metrics) == {"expert_concurrency": pytest.approx(5 / 3)} and unavailable == {}


def test_fsdp_tp_comm_overlap(cpu):
    # compute s0 [0,4]; comm s1 [2,6], s2 [5,7]: comm |[2,7]| = 5, hidden [2,4] = 2 -> 0.4, exposed 3 ms
    w = set_up(cpu, FsdpTp, 3)
    metrics, unavailable = w.extra_metrics(traced_run([[(0, None, 0, 4), (1, None, 2, 6), (2, None, 5, 7)]]))
    assert figures(metrics) == {
        "comm_overlap_ratio": pytest.approx(0.4),
        "exposed_comm_ms": pytest.approx(3.0),
    }
    assert "device-to-device copies" in unavailable["collective_busbw_gbps"]


def test_fsdp_tp_exposed_comm_is_per_iteration_with_one_sample_per_round(cpu):
    # two iterations in a round, each as in the test above: compute [0,4] and [7,11], comm [2,7] and
    # [9,14] -> 3 ms exposed per iteration (6 in the round), 4 of 10 ms hidden -> 0.4
    w = set_up(cpu, FsdpTp, 3)
    one = [(0, None, 0, 4), (1, None, 2, 6), (2, None, 5, 7)]
    two = one + [(i, None, a + 7, b + 7) for i, _, a, b in one]
    metrics, _ = w.extra_metrics(traced_run([two, two, one + one], iterations_per_round=2))
    by_name = {m.name: m for m in metrics}
    assert by_name["exposed_comm_ms"].value == pytest.approx(3.0)
    assert by_name["comm_overlap_ratio"].value == pytest.approx(0.4)
    # the third round's iterations lie on top of each other: 3 ms exposed in the round, 1.5 per iteration
    assert by_name["exposed_comm_ms"].samples == pytest.approx((3.0, 3.0, 1.5))


def test_stage_figures_from_the_labelled_pass_are_one_value_per_run_and_say_so(cpu):
    # Beside a graph replay, stage figures come from one labelled round: one value per run, which the gate
    # judges as the run's figure against the between-run noise, and the figure's source says so.
    assert runner.LABELLED_PASS_ROUNDS == 1
    w = set_up(cpu, FsdpTp, 3)
    busy = traced_run([[(0, None, 0, 4), (1, None, 2, 6), (2, None, 5, 7)]])  # GPU busy 7 of 7 ms
    metrics, _ = runner._stage_figures(w, busy, from_labelled_pass=True)
    assert {m.name for m in metrics} == {"comm_overlap_ratio", "exposed_comm_ms"}
    assert all(m.source == runner.LABELLED_SOURCE and len(m.samples) == 1 for m in metrics)
    # the same round trickled onto the GPU (busy 4 of 10 ms): the figures would describe the host's pace
    idle = traced_run([[(0, None, 0, 1), (1, None, 4, 5), (2, None, 8, 10)]])
    metrics, unavailable = runner._stage_figures(w, idle, from_labelled_pass=True)
    assert metrics == [] and "kept the GPU busy only 0.4" in unavailable["exposed_comm_ms"]


def test_figures_of_a_kernel_pass_are_marked_from_the_pass_and_so_are_those_read_from_them(cpu):
    # A gate's kernel pass profiles 2 rounds: its figures are the run's figure (their median), never
    # "too few samples" (aorta.record.run_samples.per_round_figures); so is the convoy slowdown read from them.
    w = set_up(cpu, HeteroKernels, 4)
    blocks = [(0, None, 0, 8), (1, None, 0, 8)]
    blocks += [(s, None, j * 0.02, j * 0.02 + 0.005) for s in (2, 3) for j in range(16)]
    metrics, _ = runner._stage_figures(w, traced_run([blocks, blocks]), from_labelled_pass=False)
    assert {m.name: (m.from_pass, len(m.samples)) for m in metrics} == {
        "tiny_us_per_kernel": (True, 2),
        "gemm_tflops": (True, 2),
    }
    alone = set_up(cpu, HeteroKernels, 4, with_gemms=False)
    alone_metrics, _ = runner._stage_figures(
        alone, traced_run([blocks[2:], blocks[2:]]), from_labelled_pass=False
    )
    relative, _ = w.reference_metrics({m.name: m for m in metrics}, {m.name: m for m in alone_metrics})
    assert {m.name: m.from_pass for m in relative} == {
        "tiny_us_per_kernel_alone": True,
        "convoy_slowdown": True,
    }
    assert all(m.as_dict()["from_pass"] is True for m in relative)


def test_grad_accum_reduce_overlap(cpu):
    # compute s0 [0,10], reduction s1 [8,12]: 2 of 4 ms hidden -> 0.5, exposed 2 ms
    w = set_up(cpu, GradAccum, 2)
    metrics, _ = w.extra_metrics(traced_run([[(0, None, 0, 10), (1, None, 8, 12)]]))
    assert figures(metrics) == {
        "reduce_overlap_ratio": pytest.approx(0.5),
        "exposed_reduce_ms": pytest.approx(2.0),
    }
    one = set_up(cpu, GradAccum, 1)
    metrics, unavailable = one.extra_metrics(traced_run([[(0, None, 0, 10)]]))
    assert metrics == [] and "one stream" in unavailable["reduce_overlap_ratio"]


def test_hetero_tiny_latency_and_gemm_rate(cpu):
    # 4 streams: GEMMs on s0, s1 over [0,8]; 16 tiny kernels on s2 of 5 us and on s3 of 10 us each
    w = set_up(cpu, HeteroKernels, 4)
    assert w.tiny_per_stream == 16
    blocks = [(0, None, 0, 8), (1, None, 0, 8)]
    blocks += [(2, None, j * 0.02, j * 0.02 + 0.005) for j in range(16)]
    blocks += [(3, None, j * 0.02, j * 0.02 + 0.010) for j in range(16)]
    metrics, _ = w.extra_metrics(traced_run([blocks]))
    flops = 2 * 64**3 * 2  # two 64^3 GEMMs
    assert figures(metrics) == {
        "tiny_us_per_kernel": pytest.approx((5 + 10) / 2),
        "gemm_tflops": pytest.approx(flops / 8e-3 / 1e12),
    }


def test_async_dataload_roles_copy_rate_and_overlap(cpu):
    # copy [0,2], preprocess [2,3], compute [1,5]: copy hidden behind compute on [1,2] -> 1/2
    w = set_up(cpu, AsyncDataload, 3, gpu=True)
    run = traced_run([[(0, "copy", 0, 2), (1, "preprocess", 2, 3), (2, "compute", 1, 5)]])
    metrics, unavailable = w.extra_metrics(run)
    nbytes = w.host[0].numel() * w.cfg["NB"]
    assert figures(metrics) == {
        "copy_busy_ms": 2,
        "preprocess_busy_ms": 1,
        "compute_busy_ms": 4,
        "h2d_gbps": pytest.approx(nbytes / 2e-3 / 1e9),
        "copy_compute_overlap_ratio": pytest.approx(0.5),
    }
    assert unavailable == {}


def test_zero_offload_copy_rates_and_overlap(cpu):
    # prefetch [0,2], forward [2,4], backward [4,6], offload [5,7]: copies 4 ms, 1 of them beside compute
    w = set_up(cpu, ZeroOffload, 3, gpu=True)
    blocks = [(0, "prefetch", 0, 2), (1, "forward", 2, 4), (1, "backward", 4, 6), (2, "offload", 5, 7)]
    metrics, _ = w.extra_metrics(traced_run([blocks]))
    half = w.copy_bytes_per_iteration() / 2
    assert figures(metrics) == {
        "copy_gbps": pytest.approx(2 * half / 4e-3 / 1e9),
        "h2d_gbps": pytest.approx(half / 2e-3 / 1e9),
        "d2h_gbps": pytest.approx(half / 2e-3 / 1e9),
        "compute_busy_ms": 4,
        "copy_compute_overlap_ratio": pytest.approx(0.25),
    }


def test_rag_pipeline_stage_busy_and_overlap(cpu):
    # embed [0,2] s0, retrieve [2,3] s1, rerank [3,4] s2, generate [1,6] s3: embed hidden on [1,2] -> 1/2
    w = set_up(cpu, RagPipeline, 4, gpu=True)
    blocks = [(0, "embed", 0, 2), (1, "retrieve", 2, 3), (2, "rerank", 3, 4), (3, "generate", 1, 6)]
    metrics, _ = w.extra_metrics(traced_run([blocks], iterations_per_round=1))
    assert figures(metrics) == {
        "embed_busy_ms": 2,
        "retrieve_busy_ms": 1,
        "rerank_busy_ms": 1,
        "generate_busy_ms": 5,
        "embed_generate_overlap_ratio": pytest.approx(0.5),
    }


def test_copy_compute_overlap_serial_rates(cpu):
    # serial, one stream: gemm [0,4], h2d [4,5], d2h [5,7], d2d [7,8]
    w = set_up(cpu, CopyComputeOverlap, 1, mode="serial", work_streams=4, copy_mb=0.25)
    blocks = [(0, "gemm", 0, 4), (0, "h2d", 4, 5), (0, "d2h", 5, 7), (0, "d2d", 7, 8)]
    metrics, unavailable = w.extra_metrics(traced_run([blocks]))
    nb = w.copy_bytes
    assert figures(metrics) == {
        "copy_busy_ms": 4,
        "compute_busy_ms": 4,
        "copy_gbps": pytest.approx(3 * nb / 4e-3 / 1e9),
        "h2d_gbps": pytest.approx(nb / 1e-3 / 1e9),
        "d2h_gbps": pytest.approx(nb / 2e-3 / 1e9),
        "d2d_gbps": pytest.approx(nb / 1e-3 / 1e9),
    }
    assert "serial variant" in unavailable["copy_compute_overlap_ratio"]


def test_copy_compute_overlap_streams_overlap(cpu):
    # 4 streams: GEMMs on s0-s2 over [2,6], copies on s3 over [0,4]: 2 of 4 copy ms hidden -> 0.5
    w = set_up(cpu, CopyComputeOverlap, 4, gpu=True, copy_mb=0.25)
    blocks = [(3, None, 0, 4)] + [(i, None, 2, 6) for i in range(3)]
    metrics, unavailable = w.extra_metrics(traced_run([blocks]))
    got = figures(metrics)
    assert got["copy_compute_overlap_ratio"] == pytest.approx(0.5) and got["copy_busy_ms"] == 4
    assert got["compute_busy_ms"] == 4
    assert "saving_ms" in w.reference_metrics({m.name: m for m in metrics}, None)[1]  # no serial twin given
    assert w.info()["copy_ran_beside_compute"] is (0.5 > COPY_BESIDE_THRESHOLD)


def test_continuous_batch_decode_step_percentiles(cpu):
    # decode block of group g, iteration j: (1 + 0.1 g + 2 j) ms, twice that in the second round; every reset /
    # prefill block 30 ms: only decode blocks are decode steps, pooled over both rounds
    w = stepped(cpu, ContinuousBatch, 3)

    def span(scale):
        def of(i, label):
            kind, g, j = label
            return (0.0, scale * (1.0 + 0.1 * g + 2.0 * j)) if kind == "decode" else (0.0, 30.0)

        return of

    rounds = [blocks_from_plan(w.plan, span(1.0)), blocks_from_plan(w.plan, span(2.0))]
    metrics, _ = w.extra_metrics(traced_run(rounds))
    decode = [
        1.0 + 0.1 * g + 2.0 * j
        for i in w.plan.stream_indices()
        for k, g, j in w.plan.labels(i)
        if k == "decode"
    ]
    pooled = decode + [2 * d for d in decode]
    assert len(set(decode)) > 4 and max(pooled) < 30.0  # varied, and no reset / prefill block among them
    assert figures(metrics) == {
        "decode_step_p99_ms": pytest.approx(stats.percentile(pooled, 99)),
        "decode_step_p50_ms": pytest.approx(stats.percentile(pooled, 50)),
    }
    by_name = {m.name: m for m in metrics}
    assert by_name["decode_step_p50_ms"].samples == pytest.approx(
        (stats.percentile(decode, 50), 2 * stats.percentile(decode, 50))
    )
    assert stats.percentile(pooled, 99) != stats.percentile(pooled, 50)


def test_speculative_decode_per_token_latency(cpu):
    # window w: draft [10w, 10w+4], verify [10w+5, 10w+9]. Window 0 lasts 9 ms (first draft's start to the
    # verify's end), later ones 10 ms (verify end to verify end); a sequence's latency is that / (accepted + 1).
    w = stepped(cpu, SpeculativeDecode, 3)

    def span(i, label):
        return (
            (10 * label[2], 10 * label[2] + 4)
            if label[0] == "draft"
            else (10 * label[2] + 5, 10 * label[2] + 9)
        )

    metrics, _ = w.extra_metrics(traced_run([blocks_from_plan(w.plan, span)]))
    expected = [
        (9.0 if win == 0 else 10.0) / (int(a) + 1)
        for acc in w._accepted_host()
        for win in range(w.cfg["windows"])
        for a in acc[:, win]
    ]
    assert figures(metrics) == {
        "per_token_p50_ms": pytest.approx(stats.percentile(expected, 50)),
        "per_token_p99_ms": pytest.approx(stats.percentile(expected, 99)),
    }
    assert len(set(expected)) > 1  # acceptance varies, so the percentiles test the division
