"""Which kernels moved between the baseline's runs and the candidate's, on hand-made kernel summaries whose
answers can be read off (pure: no torch): a kernel only one side lists appeared or disappeared, unless the
other side's "other" bucket is large enough to hide it."""

from aorta.gate.causes.kernel_diff import kernel_diff


def summary(kernels: dict[str, float], other_ms: float = 0.0) -> dict:
    """One run's kernel summary: ``kernels`` name -> device ms per iteration (one launch each)."""
    total = sum(kernels.values()) + other_ms
    return {
        "kernels": [{"name": n, "family": n, "launches": 1.0, "device_ms": ms} for n, ms in kernels.items()],
        "other": {"device_ms": other_ms},
        "total": {"device_ms": total, "launches": float(len(kernels))},
    }


def names(rows) -> list[str]:
    return [r["name"] for r in rows]


def test_a_new_kernel_appeared_when_the_baselines_bucket_is_too_small_to_have_hidden_it():
    # The candidate buckets 5 ms of small kernels of its own; the baseline's bucket holds 0.1 ms, under half
    # of gemm_new's 2 ms: the baseline cannot have run it unlisted
    ref = [summary({"gemm": 10.0}, other_ms=0.1)] * 3
    cand = [summary({"gemm": 10.0, "gemm_new": 2.0}, other_ms=5.0)] * 3
    d = kernel_diff(ref, cand)
    assert names(d["appeared"]) == ["gemm_new"] and d["unsure"] == 0
    assert d["appeared"][0]["device_ms"] == [0.0, 2.0]


def test_a_kernel_the_baselines_bucket_could_hide_is_unsure_not_appeared():
    ref = [summary({"gemm": 10.0}, other_ms=1.5)] * 3  # 1.5 ms bucket >= half of 2 ms
    cand = [summary({"gemm": 10.0, "gemm_new": 2.0}, other_ms=0.0)] * 3
    d = kernel_diff(ref, cand)
    assert d["appeared"] == [] and d["unsure"] == 1


def test_a_gone_kernel_disappeared_when_the_candidates_bucket_is_too_small_to_hide_it():
    ref = [summary({"gemm": 10.0, "gemm_old": 2.0}, other_ms=5.0)] * 3
    cand = [summary({"gemm": 10.0}, other_ms=0.1)] * 3
    d = kernel_diff(ref, cand, slower=False)
    assert names(d["disappeared"]) == ["gemm_old"] and d["unsure"] == 0
    assert names(d["top"]) == ["gemm_old"]  # FASTER: the removed time leads
    hidden = kernel_diff(cand, [summary({"gemm": 10.0}, other_ms=1.5)] * 3)
    assert hidden["disappeared"] == [] and hidden["unsure"] == 0  # nothing to hide: nothing gone


def test_a_kernel_the_candidates_bucket_could_hide_is_unsure_not_disappeared():
    ref = [summary({"gemm": 10.0, "gemm_old": 2.0}, other_ms=0.0)] * 3
    cand = [summary({"gemm": 10.0}, other_ms=1.5)] * 3
    d = kernel_diff(ref, cand)
    assert d["disappeared"] == [] and d["unsure"] == 1
