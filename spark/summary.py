"""The words of a report: policies compared side by side, and the terminal summary."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .plots import policy_key

__all__ = ["COMPARED", "comparisons", "counted", "format_text", "format_value"]


def _seconds(v: float) -> str:
    if v >= 3600:
        return f"{v:.0f} s ({v / 3600:.2f} h)"
    return f"{v:.1f} s"


# (key in a groups row, label, kind of value): the metrics compared across policies
COMPARED: tuple[tuple[str, str, str], ...] = (
    ("converged_runs", "runs converged", "runs"),
    ("convergence_median", "convergence time (median)", "s"),
    ("share_mean", "(node, entry) pairs held", "%"),
    ("latency_median", "latency median", "s"),
    ("latency_p95", "latency p95", "s"),
    ("tx_air_mean", "airtime per run", "s"),
    ("air_per_delivery", "airtime per delivered pair", "s"),
    ("air_bound_mean", "airtime lower bound per run", "s"),
    ("efficiency", "efficiency (bound / airtime)", "%"),
    ("tx_frames_mean", "frames sent per run", "n"),
    ("duplicates_mean", "duplicates per run", "n"),
    ("redundancy", "redundancy", "%"),
    ("collisions_mean", "collisions per run", "n"),
    ("stalled_pairs", "stalled (node, entry) pairs", "n"),
)

_FORMAT: dict[str, Callable[[Any], str]] = {
    "s": _seconds,
    "%": lambda v: f"{100 * v:.1f}%",
    "n": lambda v: f"{v:,.0f}" if float(v).is_integer() or abs(v) >= 100 else f"{v:,.1f}",
    "runs": str,
}


def format_value(kind: str, value: Any, group: dict[str, Any] | None = None) -> str:
    if value is None:
        return "-"
    if kind == "runs" and group is not None:
        return f"{value}/{group['runs']}"
    return _FORMAT[kind](value)


def comparisons(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per scenario, each compared metric with one value per policy."""
    out = []
    for scenario in sorted({g["scenario"] for g in groups}):
        mine = sorted((g for g in groups if g["scenario"] == scenario),
                      key=lambda g: policy_key(g["policy"]))
        rows = [{"key": key, "label": label, "kind": kind,
                 "values": {g["policy"]: g.get(key) for g in mine},
                 "shown": {g["policy"]: format_value(kind, g.get(key), g) for g in mine}}
                for key, label, kind in COMPARED]
        out.append({"scenario": scenario, "policies": [g["policy"] for g in mine],
                    "runs": {g["policy"]: g["runs"] for g in mine},
                    "nodes": max(g["nodes_mean"] or 0 for g in mine),
                    "entries": max(g["entries_mean"] or 0 for g in mine),
                    "rows": rows})
    return out


def counted(n: float, noun: str) -> str:
    """``1 entry``, ``8 entries``, ``25 nodes``."""
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{n:.0f} {noun if round(n) == 1 else plural}"


def format_text(summary: dict[str, Any], index: Path) -> str:
    """What ``tinyssb analyze`` prints when it is done."""
    runs = summary["runs"]
    plural = "s" if len(runs) != 1 else ""
    lines = [f"analysis of {len(runs)} run{plural}, {summary['records']:,} capture records"]
    for comp in summary["comparisons"]:
        policies = comp["policies"]
        lines.append("")
        lines.append(f"{comp['scenario']}: {counted(comp['nodes'], 'node')}, "
                     f"{counted(comp['entries'], 'entry')}")
        width = 2 + max(12, *(len(p) for p in policies),
                        *(len(v) for row in comp["rows"] for v in row["shown"].values()))
        lines.append(f"  {'':<30}" + "".join(f"{p:>{width}}" for p in policies))
        for row in comp["rows"]:
            lines.append(f"  {row['label']:<30}"
                         + "".join(f"{row['shown'][p]:>{width}}" for p in policies))
    stalls = summary["stalls"]
    if stalls["count"]:
        lines.append("")
        lines.append(f"stalled: {stalls['count']} (node, entry) pairs never held completely")
        for s in stalls["listed"][:5]:
            missing = ", ".join(str(c) for c in s["missing_chunks"])
            what = s["state"]
            if s["state"] == "side chain incomplete" and missing:
                what += f" (chunk{'s' if len(s['missing_chunks']) > 1 else ''} {missing} missing)"
            last = ("no progress" if s["last_progress_t"] is None
                    else f"last progress at {s['last_progress_t']:.1f}")
            lines.append(f"  {s['run']} {s['node']} {s['feed'][:8]}#{s['seq']}: {what}; {last}")
        if stalls["count"] > 5:
            lines.append(f"  ... (tables/stalls.parquet lists all {stalls['count']})")
    if summary["problems"]:
        lines.append("")
        lines.append(f"input problems ({len(summary['problems'])}):")
        lines.extend(f"  {p}" for p in summary["problems"])
    lines.append("")
    lines.append(f"report: {index}")
    return "\n".join(lines)
