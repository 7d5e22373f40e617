"""Kernel names normalised to one name per kernel, and grouped by op: on real names from NVIDIA (cuBLAS,
nvjet, CUTLASS, NCCL, aten) and AMD traces (Tensile, MIOpen, RCCL, rocclr; read in place from $AORTA_AMD_TRACES or ../shared/amd_traces beside the
checkout: tests/amd_traces.py)."""

from collections import Counter

import amd_traces
import pytest

from aorta.timeline.kernel_names import GEMM, MAX_NAME_CHARS, family, normalise
from aorta.timeline.trace_events import load_trace


@pytest.mark.parametrize(
    "raw, name",
    [
        # aten: the parameter list repeats the template; the array helper and literal suffixes are toolchain noise
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
            "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
            "at::native::vectorized_elementwise_kernel<4,at::native::CUDAFunctor_add<float>,Array<char*,3>>",
        ),
        (  # the same kernel from an older torch (MI250 trace): one name
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
            "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
            "at::native::vectorized_elementwise_kernel<4,at::native::CUDAFunctor_add<float>,Array<char*,3>>",
        ),
        ("at::cuda::(anonymous namespace)::spin_kernel(long)", "at::cuda::spin_kernel"),
        (
            "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "ncclDevKernel_AllGather_RING_LL",
        ),
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "ncclKernel_AllReduce_RING_LL_Sum_float"),
        ("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", "ncclDevKernel_Generic_4"),
        (  # cuBLAS: the generated name is the selection (tile sizes): kept whole
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
            "kernel__5x_cublas",
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
            "kernel__5x_cublas",
        ),
        ("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT", "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT"),
        (  # CUTLASS: the template argument names the configuration; its Params argument repeats it
            "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>"
            "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::Params)",
            "cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>",
        ),
        ("__amd_rocclr_fillBufferAligned.kd", "__amd_rocclr_fillBufferAligned"),
        (
            "Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI32x32x8x1_SN_1LDSB0_GRVW8_K1_MIWT4_4_WG64_4_1",
            "Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI32x32x8x1_SN_1LDSB0_GRVW8_K1_MIWT4_4_WG64_4_1",
        ),
    ],
)
def test_normalise_keeps_the_kernel_and_drops_the_noise(raw, name):
    assert normalise(raw) == name


def test_numbered_lambdas_are_one_kernel():
    a = "void at::native::elementwise_kernel<128, 2, at::native::foo(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda(float)#2}>(int, X)"
    b = a.replace("#1", "#3").replace("#2", "#7")
    assert normalise(a) == normalise(b) and "{lambda}" in normalise(a) and "#" not in normalise(a)


def test_long_names_keep_their_head_and_stay_apart():
    head = (
        "Cijk_Ailk_Bljk_S_B_Bias_HA_S_SAV_UserArgs_MT64x64x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_"
        * 2
    )
    a, b = normalise(head + "WG32"), normalise(head + "WG64")
    assert len(a) <= MAX_NAME_CHARS and a != b and a[:100] == b[:100] and a.startswith(head[:100])
    assert normalise(head + "WG32") == a  # stable


@pytest.mark.parametrize(
    "raw, fam",
    [
        ("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT", GEMM),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_kernel__5x_cublas", GEMM),
        ("Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI32x32x8x1_SN_1LDSB0", GEMM),
        ("igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt256x64x8_wt64x16x4", GEMM),
        (
            "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "collective:reduce_scatter",
        ),
        ("ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)", "collective:other_comm"),
        ("__amd_rocclr_fillBufferAligned.kd", "memory"),
        (
            "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int)",
            "vectorized_elementwise_kernel[CUDAFunctor_add]",
        ),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::launch_clamp_scalar(at::TensorIteratorBase&, "
            "c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const>(int)",
            "vectorized_elementwise_kernel[launch_clamp_scalar]",
        ),
    ],
)
def test_family_groups_kernels_of_one_op(raw, fam):
    assert family(raw) == fam


def test_a_vector_width_change_is_another_kernel_of_the_same_op():
    v4 = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int)"
    v8 = v4.replace("<4,", "<8,")
    assert normalise(v4) != normalise(v8) and family(v4) == family(v8)


def test_rccl_generic_kernels_take_their_op_from_the_profilers_collective_arg():
    assert family("ncclDevKernel_Generic_4(x)", "kernel", "_allgather_base") == "collective:all_gather"
    assert family("anything", "gpu_memcpy") == "memory"


@pytest.mark.parametrize(
    "trace, events, kernels, names, gemm, families",
    [
        # (file, as written or without host ops, kernel events, distinct raw names = normalised names, GEMM names,
        # families)
        *amd_traces.tiers("hta_mi250_minitoy_train_ROCm6_2_kineto.json.gz", 14, 12, 2, 10),
        *amd_traces.tiers(
            "rocm_aorta_smci350-zts-gtu-c6-25_200691.1758927066581847260.pt.trace.json", 20, 9, 3, 7
        ),
        *amd_traces.tiers("tracelens_mi300_resnet_act_checkpoint.json.gz", 2995, 55, None, 30),
    ],
)
def test_real_amd_traces_keep_one_name_per_kernel(trace, events, kernels, names, gemm, families, amd_trace):
    path = amd_trace(trace, events)
    if not path.is_file():
        pytest.skip(amd_traces.absent(path))
    events = [e for e in load_trace(path)["traceEvents"] if e.get("cat") == "kernel"]
    assert len(events) == kernels
    raw = Counter(e["name"] for e in events)
    norm = Counter(normalise(e["name"]) for e in events)
    assert len(raw) == names and len(norm) == names  # no kernel merged with another, none split
    fams = {family(e["name"], "kernel", (e.get("args") or {}).get("Collective name")) for e in events}
    assert len(fams) == families
    if gemm is not None:
        assert sum(family(n) == GEMM for n in raw) == gemm
    assert all(len(n) <= MAX_NAME_CHARS for n in norm)
