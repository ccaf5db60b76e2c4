"""The time a node ran at its duty-cycle limit, as the summary counts it from its
transmissions (``firmware_sim.dutybound``)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmware_sim.dutybound import DutyTracker


def _bound_by_breakpoints(sends: list[tuple[float, float]], threshold: float, window: float,
                          end: float) -> float:
    """The same quantity, the slow way: the window's sum is constant between the
    instants where a transmission starts or leaves the window."""
    points = sorted({0.0, end, *(t for t, _ in sends), *(t + window for t, _ in sends)})
    points = [p for p in points if p <= end]
    total = 0.0
    for a, b in itertools.pairwise(points):
        used = sum(round(air * 1e6) for t, air in sends if t <= a < t + window)
        if used > round(threshold * 1e6):
            total += b - a
    return total


def test_a_node_over_the_threshold_counts_until_its_first_frame_leaves_the_window() -> None:
    tracker = DutyTracker(threshold=10.0, window=100.0)
    tracker.send(0.0, 6.0)
    tracker.send(10.0, 6.0)  # 12 s in the window from here
    tracker.advance(200.0)  # the first frame leaves at 100 s: 12 -> 6
    assert tracker.bound == pytest.approx(90.0)


def test_a_node_under_the_threshold_is_never_bound() -> None:
    tracker = DutyTracker(threshold=10.0, window=100.0)
    for t in range(0, 1000, 20):
        tracker.send(float(t), 1.0)
    tracker.advance(2000.0)
    assert tracker.bound == 0.0


def test_a_tracker_needs_a_threshold() -> None:
    with pytest.raises(ValueError, match="positive"):
        DutyTracker(threshold=0.0)


@given(st.lists(st.tuples(st.floats(0.0, 50.0), st.floats(0.01, 5.0)), max_size=40),
       st.floats(1.0, 20.0))
def test_the_tracker_agrees_with_the_breakpoints(gaps: list[tuple[float, float]],
                                                 threshold: float) -> None:
    window = 100.0
    tracker = DutyTracker(threshold, window)
    sends, t = [], 0.0
    for gap, air in gaps:
        t += gap
        tracker.send(t, air)
        sends.append((t, air))
    end = t + 2 * window
    tracker.advance(end)
    assert tracker.bound == pytest.approx(_bound_by_breakpoints(sends, threshold, window, end),
                                          abs=1e-6)
