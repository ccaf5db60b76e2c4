"""``index.html``: the report on one static page (no scripts, no external files)."""

from __future__ import annotations

from html import escape
from typing import Any

from .summary import counted, format_value

__all__ = ["render_page"]

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1300px;
       padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 1.8em; border-bottom: 1px solid #ddd; }
.table { max-width: 100%; overflow-x: auto; margin: 0.6em 0 1em; }
table { border-collapse: collapse; font-size: 0.88em; }
th, td { padding: 0.25em 0.5em; border-bottom: 1px solid #eee; text-align: right;
         white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f4f4f4; white-space: normal; vertical-align: bottom;
           min-width: 4em; }
td:first-child { white-space: normal; overflow-wrap: anywhere; min-width: 8em; }
.plots { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr));
         gap: 1em; }
.plots .wide { grid-column: 1 / -1; }
figure { margin: 0; }
img { width: 100%; border: 1px solid #eee; }
.note { color: #666; font-size: 0.9em; }
.problem { color: #a40000; }
code { background: #f4f4f4; padding: 0 0.25em; }
"""

RUN_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("run", "run", "text"), ("policy", "policy", "text"), ("seed", "seed", "text"),
    ("nodes", "nodes", "n"), ("entries", "entries", "n"),
    ("convergence_after", "converged after", "s"), ("share", "pairs held", "%"),
    ("latency_median", "latency median", "s"), ("tx_air", "airtime", "s"),
    ("air_per_delivery", "air per pair", "s"), ("air_bound", "lower bound", "s"),
    ("efficiency", "efficiency", "%"), ("duplicates", "duplicates", "n"),
    ("redundancy", "redundancy", "%"), ("collisions", "collisions", "n"),
    ("stalled_pairs", "stalled", "n"),
)


def _cell(kind: str, value: Any) -> str:
    if kind == "text":
        return escape("-" if value is None else str(value))
    return escape(format_value(kind, value))


def _table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (f"<div class='table'><table><thead><tr>{th}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>")


def _comparison(comp: dict[str, Any]) -> str:
    policies = comp["policies"]
    rows = [[escape(r["label"]), *(escape(r["shown"][p]) for p in policies)]
            for r in comp["rows"]]
    return (f"<h2>{escape(comp['scenario'])}</h2>"
            f"<p>{counted(comp['nodes'], 'node')}, {counted(comp['entries'], 'entry')}; "
            + ", ".join(f"{escape(p)}: {counted(comp['runs'][p], 'run')}" for p in policies)
            + "</p>" + _table(["", *(escape(p) for p in policies)], rows))


def _figure(summary: dict[str, Any], name: str, caption: str, wide: bool = False) -> str:
    path = summary["plots"].get(name)
    if path is None:
        return ""
    attr = ' class="wide"' if wide else ""
    return (f'<figure{attr}><img src="{escape(path)}" alt="{escape(caption)}">'
            f'<figcaption class="note">{escape(caption)}</figcaption></figure>')


def render_page(summary: dict[str, Any]) -> str:
    runs = summary["runs"]
    parts = [f"<h1>tinySSB capture analysis</h1><p class='note'>{counted(len(runs), 'run')}, "
             f"{summary['records']:,} capture records, from "
             + ", ".join(f"<code>{escape(d)}</code>" for d in summary["datasets"]) + "</p>"]
    if summary["problems"]:
        items = "".join(f"<li>{escape(p)}</li>" for p in summary["problems"])
        parts.append(f"<h2>Input problems</h2><ul class='problem'>{items}</ul>")
    parts.extend(_comparison(c) for c in summary["comparisons"])
    figures = [
        _figure(summary, "convergence", "Share of (node, entry) pairs held completely (entry "
                "and side chain) over time, all runs of a policy pooled."),
        _figure(summary, "latency_cdf", "Dissemination latency: from publication until a "
                "node held the entry completely, authors left out."),
        _figure(summary, "airtime_by_kind", "Seconds on air per run by frame kind."),
        *(_figure(summary, name, f"{name[8:]}: per node, when it held every entry and how "
                  "much airtime it sent (mean over runs).", wide=True)
          for name in sorted(summary["plots"]) if name.startswith("heatmap-"))]
    parts.append("<h2>Plots</h2><div class='plots'>" + "".join(figures) + "</div>")
    parts.append("<h2>Runs</h2>")
    parts.append(_table([h for _, h, _ in RUN_COLUMNS],
                        [[_cell(kind, r.get(key)) for key, _, kind in RUN_COLUMNS]
                         for r in runs]))
    stalls = summary["stalls"]
    parts.append(f"<h2>Stalls ({stalls['count']})</h2>")
    if stalls["count"]:
        rows = [[escape(s["run"]), escape(s["node"]), f"<code>{escape(s['feed'][:16])}</code>",
                 str(s["seq"]), escape(s["state"]),
                 escape(", ".join(str(c) for c in s["missing_chunks"]) or "-"),
                 f"{s['items_held']}/{s['items']}",
                 _cell("s", s["last_progress_t"])]
                for s in stalls["listed"]]
        parts.append(_table(["run", "node", "feed", "seq", "state", "chunks missing", "items",
                             "last progress at"], rows))
        if stalls["count"] > len(stalls["listed"]):
            parts.append(f"<p class='note'>The first {len(stalls['listed'])}; "
                         "<code>tables/stalls.parquet</code> has all.</p>")
    else:
        parts.append("<p>Every node held every entry completely in every run.</p>")
    links = "".join(f"<li><code>{escape(p)}</code></li>" for p in summary["tables"].values())
    parts.append("<h2>Tables</h2><p>Parquet, one directory each (read with "
                 "<code>spark.read.parquet</code> or <code>pyarrow.parquet.read_table</code>); "
                 "<a href='summary.json'>summary.json</a> holds the numbers above.</p>"
                 f"<ul>{links}</ul>")
    body = "\n".join(p for p in parts if p)
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<title>tinySSB capture analysis</title>"
            f"<style>{STYLE}</style></head><body>\n{body}\n</body></html>\n")
