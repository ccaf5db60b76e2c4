"""Summary statistics shared by the simulator's summary and the Spark analysis.

One definition of a percentile for the whole project: linear interpolation between the
two closest ranks (Hyndman and Fan's type 7; numpy's default, Python's
``statistics.quantiles(method="inclusive")`` and Spark SQL's ``percentile``). For sorted
values ``x[0..n-1]`` the ``p`` percentile lies at rank ``h = (n - 1) * p``:
``x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)])``. The median is the
0.5 percentile. ``spark.metrics`` computes the same with ``F.percentile`` (tests hold
the two equal), so a p95 printed by ``tinyssb sim run`` and one in the report agree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["percentile"]


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p`` percentile (0 <= p <= 1) of ``values`` (any order, at least one)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"a percentile is 0..1, got {p}")
    ordered = sorted(values)
    h = (len(ordered) - 1) * p
    low, high = math.floor(h), math.ceil(h)
    lo, hi = float(ordered[low]), float(ordered[high])
    if high == low or lo == hi:
        return lo
    # weighted as Spark SQL's percentile weighs them, so that both give the same float to
    # the last bit, not merely the same value
    return (high - h) * lo + (h - low) * hi
