"""Trace analysis on small committed traces: expected values written as arithmetic over the kernel times."""

from pathlib import Path

import pytest

from aorta.fsdp import trace_analysis as ta
from aorta.timeline.device_op import DeviceOp
from aorta.timeline.trace_events import classify_kernel

DATA = Path(__file__).parents[1] / "data"


def kernel(name: str, start_us: float, dur_us: float, *, stream: int = 0) -> DeviceOp:
    return DeviceOp(name, stream, start_us, dur_us)


@pytest.mark.parametrize(
    "name, collective, kind",
    [
        ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", None, "all_gather"),
        (
            "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            None,
            "reduce_scatter",
        ),
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", None, "all_reduce"),
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", None, "all_reduce"),
        ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", None, "other_comm"),
        # RCCL's generic kernel: the collective comes from the profiler's "Collective name" arg
        ("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", "_allgather_base", "all_gather"),
        (
            "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)",
            "reduce_scatter_tensor_coalesced",
            "reduce_scatter",
        ),
        ("rcclGenericKernel<1>(ncclDevComm*, unsigned long, ncclWork*)", "allreduce", "all_reduce"),
        ("ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)", None, "other_comm"),
        # the kernel's own name wins over an arg
        ("ncclDevKernel_AllGather_RING_LL(x)", "allreduce", "all_gather"),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >",
            None,
            "compute",
        ),
        ("Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI32x32x8x1_SN", None, "compute"),
        ("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_TNT", None, "compute"),
    ],
)
def test_kernels_are_classified_by_name_then_by_collective_arg(name, collective, kind):
    assert classify_kernel(name, collective) == kind


def test_busbw_factors_are_those_of_nccl_tests():
    assert ta.busbw_factor("all_reduce", 8) == 2 * 7 / 8
    assert ta.busbw_factor("all_gather", 8) == 7 / 8
    assert ta.busbw_factor("reduce_scatter", 2) == 1 / 2
    assert ta.busbw_factor("other_comm", 2) is None


def test_kernels_and_copies_are_parsed_cpu_ops_are_not():
    kernels = ta.parse_chrome_trace(DATA / "trace_nccl_2ranks.json")
    assert len(kernels) == 6 and [k.kind for k in kernels].count("memory") == 1  # the DtoH copy
    assert [k.start_us for k in kernels] == sorted(k.start_us for k in kernels)
    assert kernels[1].stream == 20 and kernels[1].message_bytes == 2097152 * 2 and kernels[1].group_size == 2


def test_nccl_trace_overlap_figures():
    s = ta.analyze(ta.parse_chrome_trace(DATA / "trace_nccl_2ranks.json"), steps=2)
    # compute: gemm 1000-1400, add 1500-1600; comm: AG 1100-1300, RS 1550-1700, AR 1800-1900 (µs)
    assert s.compute_busy_ms == pytest.approx((400 + 100) / 1e3)
    assert s.comm_busy_ms == pytest.approx((200 + 150 + 100) / 1e3)
    assert s.busy_ms_by_kind == pytest.approx(
        {"all_gather": 0.2, "reduce_scatter": 0.15, "all_reduce": 0.1}
        | {k: 0.0 for k in ("broadcast", "reduce", "all_to_all", "other_comm")}
    )
    # AG wholly under the GEMM (200), RS under the add for 1550-1600 (50), AR alone
    assert s.overlapped_ms == pytest.approx((200 + 50) / 1e3)
    assert s.exposed_comm_ms == pytest.approx((100 + 100) / 1e3)
    assert s.exposed_comm_ms_per_step == pytest.approx(0.2 / 2)
    assert s.overlap_ratio == pytest.approx(250 / 450)
    assert s.window_ms == pytest.approx((1950 - 1000) / 1e3)  # to the DtoH copy's end
    # no kernel runs 1400-1500 and 1700-1800; the copy 1900-1950 is copy time, not idle
    assert s.idle_ms == pytest.approx(200 / 1e3) and s.as_dict()["idle_ms"] == s.idle_ms
    assert (s.copy_busy_ms, s.copy_count) == (pytest.approx(50 / 1e3), 1)
    assert s.copy_only_ms == pytest.approx(50 / 1e3)  # after the all-reduce, beside no kernel
    # busbw: bytes / kernel time x factor, n = 2
    assert s.algbw_gbps["all_gather"] == pytest.approx(2097152 * 2 / 200e-6 / 1e9)
    assert s.busbw_gbps["all_gather"] == pytest.approx(2097152 * 2 / 200e-6 / 1e9 * 1 / 2)
    assert s.busbw_gbps["reduce_scatter"] == pytest.approx(2097152 * 4 / 150e-6 / 1e9 * 1 / 2)
    assert s.busbw_gbps["all_reduce"] == pytest.approx(1024 * 4 / 100e-6 / 1e9 * 2 * 1 / 2)
    assert s.unavailable == {}


def test_rccl_trace_with_generic_kernels_overlap_figures():
    kernels = ta.parse_chrome_trace(DATA / "trace_rccl_4ranks.json")
    assert [k.kind for k in kernels] == [
        "compute",
        "all_gather",
        "reduce_scatter",
        "compute",
        "other_comm",
        "memory",  # the memset
    ]
    s = ta.analyze(kernels, steps=1)
    # compute: GEMM 5000-6000, fill 6250-6350; comm: AG 5200-5700, RS 5800-6200, generic 6300-6400
    assert s.compute_busy_ms == pytest.approx((1000 + 100) / 1e3)
    assert s.comm_busy_ms == pytest.approx((500 + 400 + 100) / 1e3)
    assert s.overlapped_ms == pytest.approx((500 + 200 + 50) / 1e3)
    assert s.exposed_comm_ms_per_step == pytest.approx((200 + 50) / 1e3)
    assert s.overlap_ratio == pytest.approx(750 / 1000)
    # n = 4 from the "Group size" arg: all-gather and reduce-scatter factor 3/4
    assert s.busbw_gbps["all_gather"] == pytest.approx(4_000_000 * 2 / 500e-6 / 1e9 * 3 / 4)
    assert s.busbw_gbps["reduce_scatter"] == pytest.approx(4_000_000 * 4 / 400e-6 / 1e9 * 3 / 4)
    assert s.busbw_gbps["all_reduce"] is None
    assert "no all_reduce kernels" in s.unavailable["busbw_gbps.all_reduce"]


def test_memset_and_copy_kernels_hide_no_communication():
    # ROCm 7's runtime fill kernel runs beside an all-reduce: device work, but no compute to hide it behind.
    # compute [0,100), fill [100,200), all-reduce [50,250): overlapped = [50,100) only
    s = ta.analyze(
        [
            kernel("Cijk_gemm", 0.0, 100.0),
            kernel("__amd_rocclr_fillBufferAligned.kd", 100.0, 100.0, stream=1),
            kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(x)", 50.0, 200.0, stream=2),
        ],
        steps=1,
    )
    assert (s.compute_busy_ms, s.overlapped_ms, s.exposed_comm_ms) == pytest.approx((0.1, 0.05, 0.15))
    assert s.overlap_ratio == pytest.approx(0.25)
    assert s.kernel_count_by_kind["memory"] == 1


def test_no_comm_kernels_leave_ratio_unavailable_not_zero():
    s = ta.analyze([DeviceOp("gemm", 0, 0.0, 10.0)], steps=1)
    assert s.overlap_ratio is None and "no communication" in s.unavailable["overlap_ratio"]
    assert s.exposed_comm_ms == 0.0


def test_busbw_without_message_size_is_unavailable_with_reason():
    k = DeviceOp("ncclDevKernel_AllGather_RING_LL", 0, 0.0, 10.0)
    s = ta.analyze([k], steps=1, n_ranks=2)
    assert s.busbw_gbps["all_gather"] is None
    assert "no message size" in s.unavailable["busbw_gbps.all_gather"]


def test_timeline_segments_are_absolute_microseconds():
    seg = ta.timeline_segments(ta.parse_chrome_trace(DATA / "trace_nccl_2ranks.json"))
    assert seg["overlap_us"] == [(1100.0, 1300.0), (1550.0, 1600.0)]
    assert seg["comm_us"][0] == (1100.0, 1300.0)
    assert seg["active_segments_us"][:3] == [
        [1000.0, 1100.0, ["compute"]],
        [1100.0, 1300.0, ["all_gather", "compute"]],
        [1300.0, 1400.0, ["compute"]],
    ]


@pytest.mark.parametrize("module", ["trace_analysis", "figures", "metrics_log", "config", "scenarios"])
def test_pure_modules_do_not_import_torch(module):
    import subprocess
    import sys

    code = f"import sys; import aorta.fsdp.{module}; assert 'torch' not in sys.modules, 'torch imported'"
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True, env={"PYTHONPATH": str(root)})


def test_compute_slowdown_weights_mean_duration_ratios_by_reference_time():
    K = kernel
    ref = [K("gemm", 0, 10), K("gemm", 20, 10), K("add", 40, 5)]
    run = [K("gemm", 0, 12), K("gemm", 30, 14), K("add", 50, 5), K("ncclDevKernel_AllGather_RING_LL", 0, 30)]
    value, reason = ta.compute_slowdown(run, ref)
    # gemm: ref 20 µs, mean 13 / 10; add: ref 5 µs, mean 5 / 5
    assert reason is None
    assert value == pytest.approx((20 * 13 / 10 + 5 * 5 / 5) / 25)


def test_compute_slowdown_unavailable_when_names_do_not_match():
    K = kernel
    value, reason = ta.compute_slowdown([K("triton_poi_fused_0", 0, 10)], [K("gemm", 0, 10)])
    assert value is None and "0%" in reason


def test_stream_busy_is_a_union_per_stream():
    K = kernel
    busy = ta.stream_busy_ms(
        [K("a", 0, 1000, stream=7), K("b", 500, 1000, stream=7), K("c", 0, 250, stream=20)]
    )
    assert busy == pytest.approx({"7": 1.5, "20": 0.25})


def test_active_segments_sweep_matches_the_definition_and_scales():
    import random

    from aorta.timeline import overlap

    def by_definition(groups):  # cut at every boundary, ask each piece's midpoint who runs
        unions = {k: overlap.union(v) for k, v in groups.items()}
        cuts = sorted({t for ivs in unions.values() for iv in ivs for t in iv})
        out = []
        for s, e in zip(cuts, cuts[1:]):
            on = tuple(sorted(k for k, ivs in unions.items() if any(a <= (s + e) / 2 < b for a, b in ivs)))
            if on and out and out[-1][1] == s and out[-1][2] == on:
                out[-1] = (out[-1][0], e, on)
            elif on:
                out.append((s, e, on))
        return out

    rng = random.Random(0)
    groups = {
        k: [(t := rng.uniform(0, 1000), t + rng.uniform(0, 20)) for _ in range(40)]
        for k in ("compute", "all_gather", "reduce_scatter")
    }
    assert overlap.active_segments(groups) == by_definition(groups)
    big = {
        "compute": [(i * 3.0, i * 3.0 + 2.0) for i in range(20000)],
        "all_gather": [(i * 7.0, i * 7.0 + 5.0) for i in range(8000)],
    }
    assert len(overlap.active_segments(big)) > 20000  # one sweep: fast even at this size
