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
