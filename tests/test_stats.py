"""The one percentile definition (gateway.stats) against its textbook cases."""

from __future__ import annotations

import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.stats import percentile


def test_linear_interpolation_between_the_closest_ranks() -> None:
    # the hand-made capture of tests/spark/captures.py: p95 = 4.2 + 0.85 * 1.0
    assert percentile([4.2, 5.2, 1.2, 1.2], 0.95) == pytest.approx(5.05)
    assert percentile([4.2, 5.2, 1.2, 1.2], 0.5) == pytest.approx(2.7)
    # nearest rank (what the simulator printed before) would say 20 here, not 19.05
    assert percentile([float(i) for i in range(1, 21)], 0.95) == pytest.approx(19.05)
    assert percentile([3.0], 0.95) == 3.0
    with pytest.raises(ValueError, match="no values"):
        percentile([], 0.5)


@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=50))
def test_agrees_with_pythons_inclusive_quantiles_and_median(values: list[float]) -> None:
    assert percentile(values, 0.5) == pytest.approx(statistics.median(values), abs=1e-6)
    cuts = statistics.quantiles(values, n=20, method="inclusive")
    assert percentile(values, 0.95) == pytest.approx(cuts[18], abs=1e-6)
