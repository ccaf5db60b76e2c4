"""Where the nodes of a run stand, for the per-node heat maps.

Captures do not record positions; a simulator run names its scenario, and a shipped
scenario of that name knows them. Only two-dimensional layouts (grid, random,
explicit) get a map: a line reads better as a table.
"""

from __future__ import annotations

import logging

__all__ = ["positions"]

log = logging.getLogger(__name__)


def positions(scenario: str) -> dict[str, tuple[float, float]] | None:
    """``{node: (x, y)}`` of a two-dimensional scenario layout, or None."""
    from firmware_sim.scenario import ScenarioError, load_scenario, shipped_scenarios

    if scenario not in shipped_scenarios():
        return None
    try:
        spec = load_scenario(scenario)
    except (ScenarioError, OSError, ValueError) as exc:
        log.debug("no layout for scenario %s: %s", scenario, exc)
        return None
    where = {n.name: (n.x, n.y) for n in spec.nodes}
    xs = {x for x, _ in where.values()}
    ys = {y for _, y in where.values()}
    if len(xs) < 2 or len(ys) < 2:
        return None
    return where
