"""Plots from small data without Spark: heat maps where a layout is known."""

from __future__ import annotations

from pathlib import Path

from spark import plots
from spark.layout import positions
from spark.report import airtime_bars


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


def test_scenarios_without_airtime_get_no_empty_airtime_panel() -> None:
    """Issue 18: the airtime plot of an IP-only gateway run was an empty axis."""
    rows = [{"scenario": "field", "policy": "ip", "kind": k, "tx_air_per_run": 0.0,
             "tx_frames_per_run": 40.0} for k in ("goset", "want")]
    assert airtime_bars(rows) == []
    rows.append({"scenario": "line-5", "policy": "default", "kind": "dmx",
                 "tx_air_per_run": 12.5, "tx_frames_per_run": 61.0})
    assert [(b.scenario, b.air) for b in airtime_bars(rows)] == [("line-5", 12.5)]
