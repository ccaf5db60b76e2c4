"""Where nodes stand: line, grid, random geometric and explicit layouts, and connectivity.

Layouts return ``(name, x, y)`` in metres. :func:`components` groups node names by the
links between them, which is how a scenario finds nodes nobody can reach.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence

__all__ = ["Point", "components", "grid", "line", "nearest", "random_geometric"]

Point = tuple[str, float, float]


def line(prefix: str, count: int, spacing: float, origin: tuple[float, float] = (0.0, 0.0)
         ) -> list[Point]:
    """``count`` nodes along the x axis, ``spacing`` metres apart."""
    x0, y0 = origin
    return [(f"{prefix}{i}", x0 + i * spacing, y0) for i in range(count)]


def grid(prefix: str, rows: int, cols: int, spacing: float,
         origin: tuple[float, float] = (0.0, 0.0)) -> list[Point]:
    """``rows`` x ``cols`` nodes on a square grid, numbered row by row."""
    x0, y0 = origin
    return [(f"{prefix}{r * cols + c}", x0 + c * spacing, y0 + r * spacing)
            for r in range(rows) for c in range(cols)]


def random_geometric(prefix: str, count: int, width: float, height: float, seed: int,
                     origin: tuple[float, float] = (0.0, 0.0)) -> list[Point]:
    """``count`` nodes placed uniformly at random in a ``width`` x ``height`` rectangle."""
    rng = random.Random(seed)
    x0, y0 = origin
    return [(f"{prefix}{i}", round(x0 + rng.uniform(0.0, width), 1),
             round(y0 + rng.uniform(0.0, height), 1)) for i in range(count)]


def components(names: Sequence[str], edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """Connected components, largest first (ties: by first name), names in input order."""
    parent = {n: n for n in names}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for a, b in edges:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[rb] = ra
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(root(n), []).append(n)
    order = {n: i for i, n in enumerate(names)}
    return sorted(groups.values(), key=lambda g: (-len(g), order[g[0]]))


def nearest(points: Sequence[Point], name: str, among: Iterable[str]) -> tuple[str, float]:
    """The node of ``among`` closest to ``name`` and its distance in metres."""
    where = {p[0]: (p[1], p[2]) for p in points}
    x, y = where[name]
    best, best_d = "", math.inf
    for other in among:
        if other == name:
            continue
        ox, oy = where[other]
        d = math.hypot(ox - x, oy - y)
        if d < best_d:
            best, best_d = other, d
    return best, best_d
