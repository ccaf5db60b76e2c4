"""Plots from small data without Spark: heat maps where a layout is known."""

from __future__ import annotations

from pathlib import Path

from spark import plots
from spark.layout import positions


def test_positions_only_for_shipped_two_dimensional_layouts() -> None:
    grid = positions("grid-25")
    assert grid is not None and len(grid) == 25
    assert grid["g0"] == (0.0, 0.0) and grid["g6"] == (150.0, 150.0)
    assert positions("line-5") is None  # a line
    assert positions("hand") is None and positions("field") is None


def test_heat_map_of_two_policies_with_a_node_that_never_completed(tmp_path: Path) -> None:
    grid = positions("grid-25")
    assert grid is not None
    maps = []
    for policy, missing in (("default", {"g12"}), ("reference", set())):
        m = plots.NodeMap("grid-25", policy, 1)
        for node, (x, y) in grid.items():
            done = None if node in missing else 60.0 * (1 + x / 150 + y / 150)
            m.cells.append(plots.NodeCell(node, x, y, done, int(node in missing), 30.0 + x / 30))
        maps.append(m)
    out = tmp_path / "heat.png"
    plots.heatmap_plot(maps, out)
    assert out.read_bytes()[:4] == b"\x89PNG" and out.stat().st_size > 20_000


def test_policies_are_ordered_baseline_first_and_coloured_alike_everywhere() -> None:
    assert plots.policy_order(["default", "zeta", "reference", "default"]) == [
        "reference", "default", "zeta"]
