"""PNG plots of a report, drawn with matplotlib from small, already collected data.

One panel per scenario; within a panel one colour per policy, the same colour for a
policy in every plot, so runs of one scenario under two policies sit side by side.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .schema import KINDS

__all__ = ["KindBar", "NodeCell", "NodeMap", "Series", "airtime_plot", "convergence_plot",
           "heatmap_plot", "latency_plot", "policy_key", "policy_order"]

DPI = 110
LABELLED_NODES = 36  # heat maps of up to this many nodes name each node and its value


@dataclass(slots=True)
class Series:
    """A curve of one (scenario, policy): x in seconds."""

    scenario: str
    policy: str
    x: list[float]
    y: list[float]
    label: str  # the legend entry


@dataclass(slots=True)
class KindBar:
    scenario: str
    policy: str
    kind: str
    air: float  # seconds on air per run
    frames: float  # frames per run


@dataclass(slots=True)
class NodeCell:
    node: str
    x: float
    y: float
    complete_t: float | None  # mean over the runs in which the node held everything
    incomplete_runs: int
    tx_air: float  # seconds on air per run


@dataclass(slots=True)
class NodeMap:
    scenario: str
    policy: str
    runs: int
    cells: list[NodeCell] = field(default_factory=list)


def policy_key(policy: str) -> tuple[bool, str]:
    """Sort key: ``reference`` first (the baseline), then the others by name."""
    return policy != "reference", policy


def policy_order(policies: Sequence[str]) -> list[str]:
    return sorted(set(policies), key=policy_key)


def preload() -> threading.Thread:
    """Import matplotlib on a thread of its own: half a second of a cold process that the
    driver, idle while Spark runs the passes over the records, spends then rather than
    after them, when the plots are drawn."""
    def load() -> None:
        with contextlib.suppress(ImportError):  # the plots themselves report it
            _pyplot()

    thread = threading.Thread(target=load, name="plots-preload", daemon=True)
    thread.start()
    return thread


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "axes.grid": True,
                         "grid.alpha": 0.3, "axes.spines.top": False,
                         "axes.spines.right": False})
    return plt


def _colors(policies: Sequence[str]) -> dict[str, Any]:
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]
    return {p: palette[i % len(palette)] for i, p in enumerate(policy_order(policies))}


def _time_unit(seconds: float) -> tuple[str, float]:
    if seconds >= 3 * 3600:
        return "h", 3600.0
    if seconds >= 600:
        return "min", 60.0
    return "s", 1.0


def _panels(plt: Any, n: int, width: float = 6.4, height: float = 4.2) -> tuple[Any, list[Any]]:
    cols = min(n, 2)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _scenarios(items: Sequence[Any]) -> list[str]:
    return sorted({i.scenario for i in items})


def _save(fig: Any, plt: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _step_plot(series: Sequence[Series], path: Path, what: str, xlabel: str,
               ylabel: str) -> None:
    """Step curves in percent, one panel per scenario, one colour per policy."""
    plt = _pyplot()
    colors = _colors([s.policy for s in series])
    scenarios = _scenarios(series)
    fig, axes = _panels(plt, len(scenarios))
    for ax, scenario in zip(axes, scenarios, strict=True):
        mine = sorted((s for s in series if s.scenario == scenario and s.x),
                      key=lambda s: policy_key(s.policy))
        unit, scale = _time_unit(max((max(s.x) for s in mine), default=0.0))
        for s in mine:
            ax.step([x / scale for x in s.x], [100 * y for y in s.y], where="post",
                    color=colors[s.policy], linewidth=2, label=s.label)
        ax.set_ylim(0, 102)
        ax.set_xlim(left=0)
        ax.set_xlabel(f"{xlabel} ({unit})")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{scenario}: {what}")
        if mine:
            ax.legend(loc="lower right")
    _save(fig, plt, path)


def convergence_plot(series: Sequence[Series], path: Path) -> None:
    """Share of (node, entry) pairs held over time, per scenario and policy."""
    _step_plot(series, path, "convergence", "time since start", "(node, entry) pairs held (%)")


def latency_plot(series: Sequence[Series], path: Path) -> None:
    """CDF of dissemination latency (publication to a node holding the entry)."""
    _step_plot(series, path, "latency CDF", "latency from publication",
               "delivered (node, entry) pairs (%)")


def airtime_plot(bars: Sequence[KindBar], path: Path) -> None:
    """Seconds on air per run by frame kind, the policies side by side."""
    plt = _pyplot()
    colors = _colors([b.policy for b in bars])
    scenarios = _scenarios(bars)
    fig, axes = _panels(plt, len(scenarios))
    for ax, scenario in zip(axes, scenarios, strict=True):
        mine = [b for b in bars if b.scenario == scenario]
        kinds = [k for k in KINDS if any(b.kind == k and b.air > 0 for b in mine)]
        policies = policy_order([b.policy for b in mine])
        width = 0.8 / max(len(policies), 1)
        for i, policy in enumerate(policies):
            values = {b.kind: b.air for b in mine if b.policy == policy}
            xs = [k + (i - (len(policies) - 1) / 2) * width for k in range(len(kinds))]
            heights = [values.get(k, 0.0) for k in kinds]
            rects = ax.bar(xs, heights, width, color=colors[policy],
                           label=f"{policy}: {sum(values.values()):.0f} s in all")
            ax.bar_label(rects, fmt="%.0f", fontsize=8, padding=2)
        ax.set_xticks(range(len(kinds)), kinds)
        ax.set_ylabel("airtime per run (s)")
        ax.set_title(f"{scenario}: airtime by frame kind")
        ax.margins(y=0.1)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=min(len(policies), 3),
                  frameon=False)
    _save(fig, plt, path)


def _ink(cmap: Any, norm: Any, value: float) -> str:
    """Black or white text, whichever reads better on the colour of ``value``."""
    if math.isnan(value):
        return "black"
    r, g, b, _ = cmap(norm(value))
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def heatmap_plot(maps: Sequence[NodeMap], path: Path) -> None:
    """Per node, where it stands: when it held everything (top), airtime it sent (bottom)."""
    plt = _pyplot()
    import matplotlib
    from matplotlib.colors import Normalize

    maps = sorted(maps, key=lambda m: policy_key(m.policy))
    n = len(maps)
    fig, axes = plt.subplots(2, n, figsize=(5.2 * n + 1.0, 9.2), squeeze=False)
    done = [c.complete_t for m in maps for c in m.cells if c.complete_t is not None]
    air = [c.tx_air for m in maps for c in m.cells]
    unit, scale = _time_unit(max(done, default=0.0))
    norms = (Normalize(min(done, default=0.0) / scale, max(done, default=1.0) / scale),
             Normalize(0.0, max(air, default=1.0) or 1.0))
    for col, m in enumerate(maps):
        xs = [c.x for c in m.cells]
        ys = [c.y for c in m.cells]
        span = max(max(xs) - min(xs), max(ys) - min(ys), 1.0)
        labelled = len(m.cells) <= LABELLED_NODES  # a denser map: colour only
        marker, size = ("s", 52000 / max(len(m.cells), 1)) if labelled else ("o", 90.0)
        for row, (label, cmap) in enumerate((("held everything at", "viridis"),
                                             ("airtime sent per run (s)", "YlOrRd"))):
            ax = axes[row][col]
            if row == 0:
                values = [c.complete_t / scale if c.complete_t is not None else math.nan
                          for c in m.cells]
            else:
                values = [c.tx_air for c in m.cells]
            colours = matplotlib.colormaps[cmap].with_extremes(bad="#bbbbbb")
            sc = ax.scatter(xs, ys, c=values, cmap=colours, norm=norms[row], marker=marker,
                            s=size, edgecolors="white" if labelled else "#555555",
                            linewidths=0.5, plotnonfinite=True)
            for c, v in zip(m.cells, values, strict=True):
                if not labelled:
                    break
                text = c.node if math.isnan(v) else f"{c.node}\n{v:.0f}"
                if row == 0 and c.incomplete_runs:
                    text = f"{c.node}\nnever" if math.isnan(v) else text + "*"
                ax.annotate(text, (c.x, c.y), ha="center", va="center", fontsize=7,
                            color=_ink(sc.cmap, norms[row], v))
            pad = span * 0.08
            ax.set_xlim(min(xs) - pad, max(xs) + pad)
            ax.set_ylim(min(ys) - pad, max(ys) + pad)
            ax.set_aspect("equal")
            ax.grid(False)
            for spine in ax.spines.values():
                spine.set_visible(False)
            ax.set_xticks([])
            ax.set_yticks([])
            runs = f", {m.runs} runs" if m.runs > 1 else ""
            what = f"{label} ({unit})" if row == 0 else label
            ax.set_title(f"{m.policy}{runs}\n{what}")
            fig.colorbar(sc, ax=ax, shrink=0.8)
    fig.suptitle(f"{maps[0].scenario}: per node (grey: never held everything; "
                 "*: not in every run)")
    _save(fig, plt, path)
