import pytest

from aorta import stats


def test_percentiles_interpolate_like_numpy():
    data = [1.0, 2.0, 3.0, 4.0]
    assert stats.median(data) == 2.5
    assert stats.percentile(data, 0) == 1.0
    assert stats.percentile(data, 100) == 4.0
    assert stats.percentile(data, 90) == pytest.approx(1.0 + 0.9 * 3)


def test_empty_samples_are_an_error():
    with pytest.raises(ValueError):
        stats.median([])


def test_percentile_refusals_say_why():
    with pytest.raises(ValueError) as e:
        stats.percentile([], 50)
    assert str(e.value) == "percentile of no samples"
    for q in (-0.5, 100.5):
        with pytest.raises(ValueError) as e:
            stats.percentile([1.0], q)
        assert str(e.value) == f"percentile q must be in [0, 100], got {q}"
