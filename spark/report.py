"""Write a report: Parquet tables, ``summary.json``, PNG plots, ``index.html``.

::

    OUT/
      index.html        the report to open in a browser
      summary.json      runs, groups, comparisons, stalls, problems
      tables/NAME.parquet
      plots/convergence.png, latency_cdf.png, airtime_by_kind.png, heatmap-SCENARIO.png

Everything is written into a staging directory inside ``OUT`` first and moved into
place piece by piece when complete, so a report is never half written.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from . import plots
from .dataset import Dataset
from .layout import positions
from .metrics import Tables
from .page import render_page
from .small import SCHEMAS, SmallTables, spark_percentile
from .summary import comparisons, format_text

__all__ = ["Report", "write_report"]

log = logging.getLogger(__name__)

Step = Callable[[str], None]

CURVE_BINS = 400  # points of a convergence curve
EXACT_CDF = 20_000  # up to this many latencies a CDF is drawn from every value
STALLS_LISTED = 50  # stalls spelled out in summary.json and index.html


@dataclass(slots=True)
class Report:
    out: Path
    index: Path
    summary: dict[str, Any]
    text: str


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.collect()]


def _clean(value: Any) -> Any:
    """A value JSON can hold: no NaN or infinity."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def write_report(spark: SparkSession, tables: Tables | SmallTables, datasets: Sequence[Dataset], out: Path,
                 step: Step) -> Report:
    """Materialize ``tables`` and write the report into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    staging = out / f".staging-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        (staging / "plots").mkdir(parents=True)
        if isinstance(tables, SmallTables):
            step(f"writing {len(SCHEMAS)} tables, summary and plots")
            for name in SCHEMAS:
                _write_table(tables.arrow(name), staging / "tables" / f"{name}.parquet")
            summary = _small_summary(tables, datasets)
            summary["plots"] = _small_plots(tables, summary, staging / "plots")
        else:
            named = tables.items()
            for i, (name, df) in enumerate(named, 1):
                step(f"table {name} ({i}/{len(named)})")
                df.coalesce(1).write.parquet(str(staging / "tables" / f"{name}.parquet"))
            step("summary and plots")
            summary = _summary(tables, datasets)
            summary["plots"] = _plots(spark, tables, summary, staging / "plots")
        (staging / "summary.json").write_text(json.dumps(_clean(summary), indent=1) + "\n")
        (staging / "index.html").write_text(render_page(summary), encoding="utf-8")
        for item in ("tables", "plots", "summary.json", "index.html"):
            target = out / item
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
            os.replace(staging / item, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Report(out, out / "index.html", summary, format_text(summary, out / "index.html"))


def _write_table(table: pa.Table, target: Path) -> None:
    """One table as Spark writes it: a directory with one Parquet file and ``_SUCCESS``."""
    target.mkdir(parents=True)
    pq.write_table(table, target / "part-00000.snappy.parquet", compression="snappy")
    (target / "_SUCCESS").touch()


def _run_order(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["scenario"], plots.policy_key(r["policy"]), r["seed"] is None, r["seed"] or 0,
            r["run"])


def _summary(tables: Tables, datasets: Sequence[Dataset]) -> dict[str, Any]:
    runs = sorted(_rows(tables.runs), key=_run_order)
    groups = _rows(tables.groups.orderBy("scenario", "policy"))
    stall_count = tables.stalls.count()
    stalls = _rows(tables.stalls.orderBy("run", "node", "feed", "seq").limit(STALLS_LISTED))
    return _summary_doc(tables, datasets, runs, groups, stall_count, stalls)


def _small_summary(tables: SmallTables, datasets: Sequence[Dataset]) -> dict[str, Any]:
    runs = sorted((dict(r) for r in tables.runs), key=_run_order)
    groups = [dict(g) for g in tables.groups]  # sorted by scenario, policy
    stalls = [dict(s) for s in tables.stalls[:STALLS_LISTED]]  # sorted by run, node, entry
    return _summary_doc(tables, datasets, runs, groups, len(tables.stalls), stalls)


def _summary_doc(tables: Tables | SmallTables, datasets: Sequence[Dataset],
                 runs: list[dict[str, Any]], groups: list[dict[str, Any]], stall_count: int,
                 stalls: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "format": "tinyssb-analysis",
        "version": 1,
        "datasets": [str(ds.path) for ds in datasets],
        "records": sum(ds.records for ds in datasets),
        "runs": runs,
        "groups": groups,
        "comparisons": comparisons(groups),
        "stalls": {"count": stall_count, "listed": stalls},
        "problems": [str(p) for ds in datasets for p in ds.problems],
        "tables": {name: f"tables/{name}.parquet" for name, _ in tables.items()},
    }


def _plots(spark: SparkSession, tables: Tables, summary: dict[str, Any],
           where: Path) -> dict[str, str]:
    """Draw every plot; ``{name: relative path}``."""
    runs = summary["runs"]
    if not runs:
        return {}
    run_keys = tables.runs.select("run", "scenario", "policy", "origin_t")
    return _draw(where, runs, _curve_series(spark, tables, runs, run_keys),
                 _latency_series(tables, summary["groups"], run_keys),
                 _rows(tables.group_kind),
                 lambda scenario, nodes: _node_maps(tables, run_keys, scenario, nodes))


def _draw(where: Path, runs: list[dict[str, Any]], curve: list[plots.Series],
          latency: list[plots.Series], group_kind: list[dict[str, Any]],
          node_maps: Callable[[str, dict[str, tuple[float, float]]], list[plots.NodeMap]],
          ) -> dict[str, str]:
    """The plots of a report from their series, whichever way the tables were computed;
    ``{name: relative path}``."""
    made: dict[str, str] = {}
    plots.convergence_plot(curve, where / "convergence.png")
    made["convergence"] = "plots/convergence.png"
    plots.latency_plot(latency, where / "latency_cdf.png")
    made["latency_cdf"] = "plots/latency_cdf.png"
    bars = airtime_bars(group_kind)
    if bars:
        plots.airtime_plot(bars, where / "airtime_by_kind.png")
        made["airtime_by_kind"] = "plots/airtime_by_kind.png"
    for scenario in sorted({r["scenario"] for r in runs}):
        where_nodes = positions(scenario)
        if where_nodes is None:
            continue
        maps = node_maps(scenario, where_nodes)
        if maps:
            name = f"heatmap-{scenario}"
            plots.heatmap_plot(maps, where / f"{name}.png")
            made[name] = f"plots/{name}.png"
    return made


def _curve_groups(runs: list[dict[str, Any]]) -> tuple[dict[tuple[str, str], float],
                                                       dict[tuple[str, str], int],
                                                       dict[tuple[str, str], int]]:
    """Per (scenario, policy): the longest run's span, its runs' (node, entry) pairs and
    how many runs it has."""
    horizon: dict[tuple[str, str], float] = {}
    pairs: dict[tuple[str, str], int] = {}
    count: dict[tuple[str, str], int] = {}
    for r in runs:
        key = (r["scenario"], r["policy"])
        end = max((r["end_t"] or 0.0) - (r["origin_t"] or 0.0), r["duration"] or 0.0)
        horizon[key] = max(horizon.get(key, 0.0), end)
        pairs[key] = pairs.get(key, 0) + r["nodes"] * r["entries"]
        count[key] = count.get(key, 0) + 1
    return horizon, pairs, count


def _widths(horizon: dict[tuple[str, str], float]) -> dict[tuple[str, str], float]:
    """Per group: the width of one of the curve's ``CURVE_BINS`` time bins."""
    return {key: max(h, 1.0) / CURVE_BINS for key, h in horizon.items()}


def _curves(horizon: dict[tuple[str, str], float], pairs: dict[tuple[str, str], int],
            count: dict[tuple[str, str], int], bins: dict[tuple[str, str], dict[int, int]],
            ) -> list[plots.Series]:
    """The convergence curves from the pairs completed per time bin of each group."""
    widths = _widths(horizon)
    out = []
    for key, end in horizon.items():
        xs, ys = [0.0], [0.0]
        total = pairs[key]
        acc = 0
        for b, n in sorted(bins.get(key, {}).items()):
            acc += n
            xs.append(max(b, 0) * widths[key])
            ys.append(acc / total if total else 1.0)
        xs.append(max(end, xs[-1]))
        ys.append(ys[-1] if total else 1.0)
        runs_note = f" ({count[key]} runs)" if count[key] > 1 else ""
        out.append(plots.Series(key[0], key[1], xs, ys, f"{key[1]}{runs_note}"))
    return out


def _curve_series(spark: SparkSession, tables: Tables, runs: list[dict[str, Any]],
                  run_keys: DataFrame) -> list[plots.Series]:
    """Per (scenario, policy): share of all its runs' (node, entry) pairs held over time."""
    horizon, pairs, count = _curve_groups(runs)
    widths = spark.createDataFrame(
        [(s, p, w) for (s, p), w in _widths(horizon).items()],
        "scenario string, policy string, width double")
    held = (tables.deliveries.where(F.col("tracked") & F.col("complete"))
            .join(F.broadcast(run_keys), "run").join(F.broadcast(widths), ["scenario", "policy"])
            .groupBy("scenario", "policy",
                     F.ceil((F.col("complete_t") - F.col("origin_t")) / F.col("width"))
                     .alias("bin"))
            .agg(F.count("*").alias("n")))
    bins: dict[tuple[str, str], dict[int, int]] = {}
    for row in held.collect():
        bins.setdefault((row["scenario"], row["policy"]), {})[row["bin"]] = row["n"]
    return _curves(horizon, pairs, count, bins)


def _latency_series(tables: Tables, groups: list[dict[str, Any]],
                    run_keys: DataFrame) -> list[plots.Series]:
    delivered = (tables.deliveries.where(F.col("tracked") & F.col("complete") & ~F.col("own"))
                 .join(F.broadcast(run_keys), "run"))
    total = sum(g["delivered"] or 0 for g in groups)
    values: dict[tuple[str, str], list[float]] = {}
    if total <= EXACT_CDF:
        for r in delivered.select("scenario", "policy", "latency").collect():
            values.setdefault((r["scenario"], r["policy"]), []).append(r["latency"])
        series = []
        for (s, p), lat in values.items():
            lat.sort()
            series.append(plots.Series(s, p, [0.0, *lat],
                                       [0.0, *[(i + 1) / len(lat) for i in range(len(lat))]],
                                       f"{p} ({len(lat)} pairs)"))
        return series
    probs = [i / 100 for i in range(101)]
    q = (delivered.groupBy("scenario", "policy")
         .agg(F.percentile_approx("latency", probs, 10_000).alias("q"),
              F.count("*").alias("n")))
    return [plots.Series(r["scenario"], r["policy"], list(r["q"]), probs,
                         f"{r['policy']} ({r['n']} pairs)") for r in q.collect()]


def airtime_bars(group_kind: list[dict[str, Any]]) -> list[plots.KindBar]:
    """The airtime plot's bars, leaving out scenarios that spent no airtime at all (an
    IP-only gateway run would be an empty axis)."""
    bars = [plots.KindBar(r["scenario"], r["policy"], r["kind"], r["tx_air_per_run"] or 0.0,
                          r["tx_frames_per_run"] or 0.0) for r in group_kind]
    on_air = {b.scenario for b in bars if b.air > 0}
    return [b for b in bars if b.scenario in on_air]


def _node_maps(tables: Tables, run_keys: DataFrame, scenario: str,
               where: dict[str, tuple[float, float]]) -> list[plots.NodeMap]:
    rows = (tables.nodes.join(F.broadcast(run_keys.where(F.col("scenario") == scenario)), "run")
            .groupBy("policy", "node")
            .agg(F.avg(F.col("complete_t") - F.col("origin_t")).alias("complete_t"),
                 F.sum(F.when(~F.col("complete"), 1).otherwise(0)).alias("incomplete"),
                 F.count("*").alias("runs"), F.avg("tx_air").alias("tx_air"))
            .collect())
    maps: dict[str, plots.NodeMap] = {}
    for r in rows:
        if r["node"] not in where:
            continue
        m = maps.setdefault(r["policy"], plots.NodeMap(scenario, r["policy"], r["runs"]))
        m.runs = max(m.runs, r["runs"])
        x, y = where[r["node"]]
        m.cells.append(plots.NodeCell(r["node"], x, y, r["complete_t"], r["incomplete"],
                                      r["tx_air"] or 0.0))
    return [m for m in maps.values() if m.cells]


# --- the same plots from the tables computed on the driver ------------------------------

def _small_plots(tables: SmallTables, summary: dict[str, Any], where: Path) -> dict[str, str]:
    """Draw every plot from :class:`SmallTables` rows; ``{name: relative path}``."""
    runs = summary["runs"]
    if not runs:
        return {}
    keys = {r["run"]: (r["scenario"], r["policy"], r["origin_t"]) for r in runs}
    done = [d for d in tables.deliveries if d["tracked"] and d["complete"] and d["run"] in keys]
    latencies: dict[tuple[str, str], list[float]] = {}
    for d in done:
        if d["own"] is False and d["latency"] is not None:
            s, p, _ = keys[d["run"]]
            latencies.setdefault((s, p), []).append(d["latency"])
    return _draw(where, runs, _small_curve_series(runs, keys, done),
                 _small_latency_series(latencies), tables.group_kind,
                 lambda scenario, nodes: _small_node_maps(tables, keys, scenario, nodes))


def _small_curve_series(runs: list[dict[str, Any]], keys: dict[str, tuple[Any, Any, Any]],
                        done: list[dict[str, Any]]) -> list[plots.Series]:
    """As :func:`_curve_series`: share of a group's pairs held over time, in bins."""
    horizon, pairs, count = _curve_groups(runs)
    widths = _widths(horizon)
    bins: dict[tuple[str, str], dict[int, int]] = {}
    for d in done:
        s, p, origin = keys[d["run"]]
        if d["complete_t"] is None or origin is None:
            continue
        b = math.ceil((d["complete_t"] - origin) / widths[(s, p)])
        per = bins.setdefault((s, p), {})
        per[b] = per.get(b, 0) + 1
    return _curves(horizon, pairs, count, bins)


def _small_latency_series(values: dict[tuple[str, str], list[float]]) -> list[plots.Series]:
    """The CDF of every delivered pair's latency; beyond EXACT_CDF pairs, its percentiles."""
    series = []
    exact = sum(len(v) for v in values.values()) <= EXACT_CDF
    probs = [i / 100 for i in range(101)]
    for (s, p), lat in values.items():
        lat.sort()
        if exact:
            series.append(plots.Series(s, p, [0.0, *lat],
                                       [0.0, *[(i + 1) / len(lat) for i in range(len(lat))]],
                                       f"{p} ({len(lat)} pairs)"))
        else:
            q = [spark_percentile(lat, x) or 0.0 for x in probs]
            series.append(plots.Series(s, p, q, probs, f"{p} ({len(lat)} pairs)"))
    return series


def _small_node_maps(tables: SmallTables, keys: dict[str, tuple[Any, Any, Any]], scenario: str,
                     where: dict[str, tuple[float, float]]) -> list[plots.NodeMap]:
    acc: dict[tuple[str, str], dict[str, list[Any]]] = {}
    for n in tables.nodes:
        key = keys.get(n["run"])
        if key is None or key[0] != scenario:
            continue
        a = acc.setdefault((key[1], n["node"]), {"t": [], "incomplete": [], "air": []})
        a["t"].append(None if n["complete_t"] is None or key[2] is None
                      else n["complete_t"] - key[2])
        a["incomplete"].append(0 if n["complete"] else 1)
        a["air"].append(n["tx_air"])
    maps: dict[str, plots.NodeMap] = {}
    for (policy, node), a in sorted(acc.items()):
        if node not in where:
            continue
        runs = len(a["incomplete"])
        ts = [t for t in a["t"] if t is not None]
        airs = [x for x in a["air"] if x is not None]
        m = maps.setdefault(policy, plots.NodeMap(scenario, policy, runs))
        m.runs = max(m.runs, runs)
        x, y = where[node]
        m.cells.append(plots.NodeCell(node, x, y, sum(ts) / len(ts) if ts else None,
                                      sum(a["incomplete"]), sum(airs) / len(airs) if airs
                                      else 0.0))
    return [m for m in maps.values() if m.cells]
