"""The tables after the passes, computed on the driver from the two small aggregates.

The passes over the records run in Spark (:func:`spark.metrics.passes`); what they leave
is small: one row per item a node held (``items``) and one row per (run, node, kind,
direction, reason, duplicated entry) of traffic (``traffic``), however many records
there were. For campaigns of up to ``ONE_PARTITION_RUNS`` runs those rows are collected
once and every table is computed here with dictionaries: the same definitions, column
names and types as the Spark code of ``spark.metrics`` (which computes them for larger
campaigns; ``tests/spark/test_driver_tables.py`` holds the two equal), but without the
hundred small Spark jobs that cost more than the work on two local cores.

Null handling follows Spark SQL: aggregates ignore nulls, a condition that is null is
false, ``greatest`` skips nulls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import pyarrow as pa

from gateway.stats import percentile

from .dataset import RunInfo
from .schema import (
    COLLISION,
    DUTY_CYCLE,
    ENTRY_ITEM,
    NODE_REASONS,
    PAYLOAD_KINDS,
    TRAFFIC_SUMS,
)

__all__ = ["CATALOGUE_SCHEMA", "HELD_SCHEMA", "SCHEMAS", "SmallTables", "compute_small",
           "frame_catalogue", "held_items", "spark_percentile"]

Row = dict[str, Any]

_S, _L, _D, _B = pa.string(), pa.int64(), pa.float64(), pa.bool_()


def _schema(*cols: tuple[str, Any] | tuple[str, Any, bool]) -> pa.Schema:
    return pa.schema([pa.field(c[0], c[1], c[2] if len(c) > 2 else True)
                      for c in cols])

_SUM_TYPES = [(c, _D if c.endswith("_air") else _L) for c in TRAFFIC_SUMS]

# the tables' columns and types: what Spark wrote for the same tables
SCHEMAS: dict[str, pa.Schema] = {
    "runs": _schema(
        ("run", _S, False), ("scenario", _S), ("policy", _S), ("seed", _L), ("source", _S),
        ("files", _L), ("duration", _D), ("nodes", _L), ("entries", _L), ("converged", _B),
        ("convergence_t", _D), ("origin_t", _D), ("convergence_after", _D),
        ("last_publication_t", _D), ("share", _D), ("held_pairs", _L),
        ("nodes_complete", _L), ("entries_complete", _L), ("delivered", _L),
        ("spread_median", _D), ("spread_p95", _D), ("spread_max", _D),
        ("latency_median", _D), ("latency_p95", _D), ("latency_max", _D),
        ("tx_frames", _L), ("tx_bytes", _L), ("tx_air", _D, False),
        ("air_per_delivery", _D), ("air_bound", _D), ("efficiency", _D),
        ("rx_frames", _L), ("rx_bytes", _L), ("rx_air", _D, False),
        ("payload_received", _L), ("duplicates", _L), ("redundant", _L),
        ("redundancy", _D), ("lost", _L), ("collisions", _L), ("refused", _L),
        ("drops", _L), ("stalled_pairs", _L), ("start_t", _D), ("end_t", _D)),
    "groups": _schema(
        ("scenario", _S), ("policy", _S), ("runs", _L, False), ("converged_runs", _L),
        ("convergence_median", _D), ("convergence_mean", _D), ("convergence_max", _D),
        ("share_mean", _D), ("nodes_mean", _D), ("entries_mean", _D),
        ("tx_air_total", _D), ("tx_air_mean", _D), ("delivered", _L),
        ("duplicates_mean", _D), ("redundant_total", _L), ("collisions_mean", _D),
        ("stalled_pairs", _L), ("tx_frames_mean", _D), ("air_bound_mean", _D),
        ("latency_median", _D), ("latency_p95", _D), ("air_per_delivery", _D),
        ("redundancy", _D), ("efficiency", _D)),
    "entries": _schema(
        ("run", _S), ("feed", _S), ("seq", _L), ("published", _B, False),
        ("tracked", _B, False), ("author", _S), ("first_t", _D), ("items", _L),
        ("nodes", _L), ("held_by", _L), ("complete_all", _B), ("complete_all_t", _D),
        ("spread", _D), ("last_progress_t", _D), ("duplicates", _L, False),
        ("redundant", _L, False)),
    "deliveries": _schema(
        ("run", _S), ("node", _S), ("feed", _S), ("seq", _L), ("tracked", _B, False),
        ("own", _B), ("first_t", _D), ("entry_t", _D), ("complete_t", _D), ("latency", _D),
        ("items", _L), ("items_held", _L, False), ("complete", _B)),
    "curve": _schema(("run", _S), ("t", _D), ("held", _L), ("share", _D)),
    "nodes": _schema(
        ("run", _S), ("node", _S), ("entries", _L), ("held", _L),
        *[(c, t, False) if c.endswith("_air") else (c, t) for c, t in _SUM_TYPES],
        ("payload_received", _L), ("first_t", _D), ("last_t", _D), ("complete", _B),
        ("complete_t", _D), ("share", _D)),
    "node_kind": _schema(("run", _S), ("node", _S), ("kind", _S), *_SUM_TYPES),
    "drops": _schema(("run", _S), ("node", _S), ("reason", _S), ("kind", _S),
                     ("frames", _L), ("bytes", _L)),
    "stalls": _schema(
        ("run", _S), ("node", _S), ("feed", _S), ("seq", _L), ("first_t", _D),
        ("items", _L), ("items_held", _L, False), ("state", _S, False),
        ("entry_missing", _B, False),
        ("missing_chunks", pa.list_(pa.field("element", _L, False)), False),
        ("last_progress_t", _D), ("entry_last_progress_t", _D), ("end_t", _D)),
    "group_kind": _schema(
        ("scenario", _S), ("policy", _S), ("kind", _S), ("runs", _L, False),
        *[(f"{c}_per_run", _D) for c in ("tx_frames", "tx_bytes", "tx_air", "rx_frames",
                                         "duplicates", "collisions")]),
}


@dataclass(slots=True)
class SmallTables:
    """Every table of a report as rows (dicts), in the order of :data:`SCHEMAS`."""

    runs: list[Row]
    groups: list[Row]
    entries: list[Row]
    deliveries: list[Row]
    curve: list[Row]
    nodes: list[Row]
    node_kind: list[Row]
    drops: list[Row]
    stalls: list[Row]
    group_kind: list[Row]

    def items(self) -> list[tuple[str, list[Row]]]:
        return [(f.name, getattr(self, f.name)) for f in fields(self)]

    def arrow(self, name: str) -> pa.Table:
        return pa.Table.from_pylist(getattr(self, name), schema=SCHEMAS[name])


# --- Spark SQL's aggregates, null-aware --------------------------------------------------

def _min(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else min(a, b)


def _max(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else max(a, b)


def _sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def spark_percentile(values: Iterable[float | None], p: float) -> float | None:
    """Spark SQL's ``percentile`` (and ``median``, p = 0.5) over a column: nulls ignored,
    null when nothing is left; the project's one definition (:mod:`gateway.stats`)."""
    present = [float(v) for v in values if v is not None]
    return percentile(present, p) if present else None


def _avg(values: Sequence[Any]) -> float | None:
    """Spark's ``avg``: the sum in row order (as Spark adds, not ``math.fsum``) / count."""
    got = [v for v in values if v is not None]
    return _sum(got) / len(got) if got else None


def _sum(values: Iterable[Any]) -> Any:
    """Spark's ``sum``: added in row order; null when every value is null."""
    total = None
    for v in values:
        if v is not None:
            total = v if total is None else total + v
    return total


def _group(rows: Iterable[Row], key: Callable[[Row], Any]) -> dict[Any, list[Row]]:
    out: dict[Any, list[Row]] = {}
    for r in rows:
        out.setdefault(key(r), []).append(r)
    return out


def _hex(value: bytes | None) -> str | None:
    return None if value is None else value.hex()


def held_items(evidence: Iterable[Row]) -> list[Row]:
    """:func:`spark.metrics._items` on the driver: per (run, node, feed, seq, item) the
    first time held (``t``) and published (``own_t``), from pass 1's item evidence."""
    out: dict[tuple[Any, ...], Row] = {}
    for e in evidence:
        item = ENTRY_ITEM if e["cnr"] is None else e["cnr"]
        key = (e["run"], e["node"], e["feed"], e["seq"], item)
        row = out.get(key)
        if row is None:
            out[key] = {"run": e["run"], "node": e["node"], "feed": e["feed"], "seq": e["seq"],
                        "item": item, "t": e["t"], "own_t": e["own_t"]}
        else:
            row["t"], row["own_t"] = _min(row["t"], e["t"]), _min(row["own_t"], e["own_t"])
    return list(out.values())


# the broadcast sides of pass 2, built on the driver from pass 1's evidence: the items
# held (:func:`held_items`) and the catalogue of frames (:func:`frame_catalogue`), with
# the columns and types ``spark.metrics._items`` and ``spark.metrics._catalogue`` give
HELD_SCHEMA = _schema(("run", _S), ("node", _S), ("feed", pa.binary()), ("seq", _L),
                      ("item", _L), ("t", _D))
CATALOGUE_SCHEMA = _schema(("run", _S), ("fh", _L), ("c_kind", _S), ("c_feed", pa.binary()),
                           ("c_seq", _L), ("c_cnr", _L), ("c_air", _D))


def frame_catalogue(evidence: Iterable[Row]) -> list[Row]:
    """:func:`spark.metrics._catalogue` on the driver: per (run, frame hash) the decode
    of the frame (the largest of each field, as Spark's ``max``) and the mean airtime of
    its transmissions, from pass 1's catalogue evidence."""
    # [kind, feed, seq, cnr, air sum, transmissions] per frame
    out: dict[tuple[Any, ...], list[Any]] = {}
    for e in evidence:
        key = (e["run"], e["fh"])
        acc = out.get(key)
        if acc is None:
            out[key] = [e["kind"], e["feed"], e["seq"], e["cnr"], e["air"], e["sent"]]
            continue
        for i, col in enumerate(("kind", "feed", "seq", "cnr")):
            acc[i] = _max(acc[i], e[col])
        acc[4] = _sum((acc[4], e["air"]))
        acc[5] = _sum((acc[5], e["sent"]))
    return [{"run": run, "fh": fh, "c_kind": kind, "c_feed": feed, "c_seq": seq, "c_cnr": cnr,
             # Spark's sum(air) / sum(sent): null when either is null or nothing was sent
             "c_air": air / sent if air is not None and sent else None}
            for (run, fh), (kind, feed, seq, cnr, air, sent) in out.items()]


# --- the tables ---------------------------------------------------------------------------

def compute_small(items: list[Row], traffic: list[Row], runs: Sequence[RunInfo]) -> SmallTables:
    """Every table from the passes' aggregates: ``items`` rows (run, node, feed, seq, item,
    t, own_t) and ``traffic`` rows (run, node, kind, dir, reason, dup_feed, dup_seq,
    frames, bytes, air, dups, redundant, first_t, last_t); ``runs`` from the manifests."""
    node_entry, entries = _entries(items)
    run_nodes = _run_nodes(runs, traffic, items)
    pairs = _pairs(entries, node_entry, run_nodes)
    tracked = [p for p in pairs if p["tracked"]]
    node_kind = _node_kind(traffic)
    entries_t = _entries_table(entries, pairs, traffic)
    nodes = _nodes_table(run_nodes, tracked, node_kind, traffic, items)
    runs_t = _runs_table(runs, nodes, entries_t, tracked)
    groups = _groups(runs_t, tracked)
    deliveries = [{"run": p["run"], "node": p["node"], "feed": _hex(p["feed"]), "seq": p["seq"],
                   "tracked": p["tracked"], "own": p["own"], "first_t": p["first_t"],
                   "entry_t": p["entry_t"], "complete_t": p["complete_t"],
                   "latency": p["latency"], "items": p["items"],
                   "items_held": p["items_held"], "complete": p["complete"]} for p in pairs]
    drops = []
    for (run, node, reason, kind), rows in _group(
            (t for t in traffic if t["dir"] == "drop"),
            lambda t: (t["run"], t["node"], t["reason"], t["kind"])).items():
        drops.append({"run": run, "node": node, "reason": reason, "kind": kind,
                      "frames": _sum(r["frames"] for r in rows),
                      "bytes": _sum(r["bytes"] for r in rows)})
    return SmallTables(runs_t, groups, _sorted(entries_t, "run", "feed", "seq"),
                       _sorted(deliveries, "run", "node", "feed", "seq"),
                       _curve(tracked, runs_t), nodes, node_kind,
                       _sorted(drops, "run", "node", "reason", "kind"),
                       _stalls(tracked, entries, runs_t), _group_kind(node_kind, runs_t))


def _sorted(rows: list[Row], *keys: str) -> list[Row]:
    return sorted(rows, key=lambda r: tuple((r[k] is not None, r[k] or "") if not
                                            isinstance(r[k], int | float) else (True, r[k])
                                            for k in keys))


def _entries(items: list[Row]) -> tuple[dict[tuple[Any, ...], Row], list[Row]]:
    """Per (run, node, feed, seq) what the node held; per (run, feed, seq) the entry."""
    node_entry: dict[tuple[Any, ...], Row] = {}
    for it in items:
        key = (it["run"], it["node"], it["feed"], it["seq"])
        ne = node_entry.get(key)
        if ne is None:
            ne = node_entry[key] = {"items_held": 0, "first_item_t": None, "last_t": None,
                                    "entry_t": None, "held": set()}
        ne["items_held"] += 1
        ne["first_item_t"] = _min(ne["first_item_t"], it["t"])
        ne["last_t"] = _max(ne["last_t"], it["t"])
        if it["item"] == ENTRY_ITEM:
            ne["entry_t"] = _min(ne["entry_t"], it["t"])
        if it["item"] is not None:
            ne["held"].add(it["item"])
    for ne in node_entry.values():
        ne["held_set"] = sorted(ne.pop("held"))
    published: dict[tuple[Any, ...], Row] = {}
    for it in items:
        if it["own_t"] is None:
            continue
        pkey = (it["run"], it["feed"], it["seq"])
        pub = published.setdefault(pkey, {"pub_t": None, "pub_items": 0, "set": set(),
                                         "author": None})
        pub["pub_t"] = _min(pub["pub_t"], it["own_t"])
        pub["pub_items"] += 1
        if it["item"] is not None:
            pub["set"].add(it["item"])
        pub["author"] = _min(pub["author"], it["node"])
    seen: dict[tuple[Any, ...], Row] = {}
    for (run, node, feed, seq), ne in node_entry.items():
        s = seen.setdefault((run, feed, seq), {"first_store_t": None, "first": None,
                                               "last_store_t": None, "max_held": None,
                                               "set": set()})
        s["first_store_t"] = _min(s["first_store_t"], ne["first_item_t"])
        # min_by(node, (first_item_t, node)): structs order nulls first
        order = (ne["first_item_t"] is not None, ne["first_item_t"] or 0.0,
                 node is not None, node or "")
        if s["first"] is None or order < s["first"][0]:
            s["first"] = (order, node)
        s["last_store_t"] = _max(s["last_store_t"], ne["last_t"])
        s["max_held"] = _max(s["max_held"], ne["items_held"])
        s["set"].update(ne["held_set"])
    publishing = {k[0] for k in published}
    entries = []
    for (run, feed, seq), s in seen.items():
        pb = published.get((run, feed, seq))
        entries.append({
            "run": run, "feed": feed, "seq": seq, "published": pb is not None,
            "tracked": pb is not None or run not in publishing,
            "author": pb["author"] if pb is not None and pb["author"] is not None
            else s["first"][1],
            "pub_t": pb["pub_t"] if pb else None,
            "first_t": pb["pub_t"] if pb and pb["pub_t"] is not None else s["first_store_t"],
            "items": pb["pub_items"] if pb else s["max_held"],
            "item_set": sorted(pb["set"]) if pb else sorted(s["set"]),
            "last_store_t": s["last_store_t"]})
    return node_entry, entries


def _run_nodes(runs: Sequence[RunInfo], traffic: list[Row], items: list[Row]) -> list[tuple[str, Any]]:
    declared = {(r.id, n) for r in runs for n in r.nodes}
    declaring = {run for run, _ in declared}
    seen = {(t["run"], t["node"]) for t in traffic} | {(i["run"], i["node"]) for i in items}
    return sorted(declared | {rn for rn in seen if rn[0] not in declaring},
                  key=lambda rn: (rn[0], rn[1] is not None, rn[1] or ""))


def _pairs(entries: list[Row], node_entry: dict[tuple[Any, ...], Row],
           run_nodes: list[tuple[str, Any]]) -> list[Row]:
    """Every (run, node, entry): when the node held the entry, if it did."""
    nodes_of = _group(({"run": r, "node": n} for r, n in run_nodes), lambda r: r["run"])
    pairs = []
    for e in entries:
        for rn in nodes_of.get(e["run"], []):
            node = rn["node"]
            ne = node_entry.get((e["run"], node, e["feed"], e["seq"]))
            held = ne["items_held"] if ne else 0
            last_t = ne["last_t"] if ne else None
            complete = None if e["items"] is None else held >= e["items"]
            pairs.append({
                "run": e["run"], "node": node, "feed": e["feed"], "seq": e["seq"],
                "tracked": e["tracked"],
                "own": None if node is None else node == (e["author"] or ""),
                "first_t": e["first_t"], "entry_t": ne["entry_t"] if ne else None,
                "items": e["items"], "items_held": held, "complete": complete,
                "complete_t": last_t if complete else None,
                "latency": _sub(last_t, e["first_t"]) if complete else None,
                "last_progress_t": last_t, "held_set": ne["held_set"] if ne else None})
    return pairs


def _node_kind(traffic: list[Row]) -> list[Row]:
    out = []
    for (run, node, kind), rows in _group(traffic, lambda t: (t["run"], t["node"],
                                                              t["kind"])).items():
        acc: Row = {"run": run, "node": node, "kind": kind}
        sums: dict[str, list[Any]] = {c: [] for c in TRAFFIC_SUMS}
        for t in rows:
            d, r = t["dir"], t["reason"]
            node_reason = None if r is None else r in NODE_REASONS
            received = d == "rx" or (d == "drop" and node_reason is True)
            lost = d == "drop" and node_reason is False and r != DUTY_CYCLE
            for name, cond, col in (
                    ("tx_frames", d == "tx", "frames"), ("tx_bytes", d == "tx", "bytes"),
                    ("tx_air", d == "tx", "air"), ("rx_frames", received, "frames"),
                    ("rx_bytes", received, "bytes"), ("rx_air", received, "air"),
                    ("lost", lost, "frames"), ("collisions", r == COLLISION, "frames"),
                    ("refused", r == DUTY_CYCLE, "frames"), ("drops", d == "drop", "frames")):
                sums[name].append(t[col] if cond else 0)
            sums["duplicates"].append(t["dups"])
            sums["redundant"].append(t["redundant"])
        for c in TRAFFIC_SUMS:
            value = _sum(sums[c])
            acc[c] = float(value) if c.endswith("_air") and value is not None else value
        out.append(acc)
    return _sorted(out, "run", "node", "kind")


def _entries_table(entries: list[Row], pairs: list[Row], traffic: list[Row]) -> list[Row]:
    dup: dict[tuple[Any, ...], list[int]] = {}
    for t in traffic:
        if t["dup_feed"] is not None:
            acc = dup.setdefault((t["run"], t["dup_feed"], t["dup_seq"]), [0, 0])
            acc[0] += t["dups"] or 0
            acc[1] += t["redundant"] or 0
    status: dict[tuple[Any, ...], Row] = {}
    for p in pairs:
        s = status.setdefault((p["run"], p["feed"], p["seq"]),
                              {"nodes": 0, "held_by": 0, "last": None})
        s["nodes"] += 1
        s["held_by"] += 1 if p["complete"] else 0
        s["last"] = _max(s["last"], p["complete_t"])
    out = []
    for e in entries:
        key = (e["run"], e["feed"], e["seq"])
        st = status.get(key)
        complete_all = None if st is None else st["held_by"] == st["nodes"]
        complete_all_t = _max(st["last"], e["first_t"]) if st is not None and complete_all \
            else None
        d = dup.get(key, [0, 0])
        out.append({"run": e["run"], "feed": _hex(e["feed"]), "seq": e["seq"],
                    "published": e["published"], "tracked": e["tracked"],
                    "author": e["author"], "first_t": e["first_t"], "items": e["items"],
                    "nodes": st["nodes"] if st else None, "held_by": st["held_by"] if st else None,
                    "complete_all": complete_all, "complete_all_t": complete_all_t,
                    "spread": _sub(complete_all_t, e["first_t"]),
                    "last_progress_t": e["last_store_t"],
                    "duplicates": d[0], "redundant": d[1]})
    return out


def _nodes_table(run_nodes: list[tuple[str, Any]], tracked: list[Row], node_kind: list[Row],
                 traffic: list[Row], items: list[Row]) -> list[Row]:
    status: dict[tuple[Any, ...], Row] = {}
    for p in tracked:
        s = status.setdefault((p["run"], p["node"]), {"entries": 0, "held": 0, "done_t": None})
        s["entries"] += 1
        s["held"] += 1 if p["complete"] else 0
        s["done_t"] = _max(s["done_t"], p["complete_t"])
    sums: dict[tuple[Any, ...], dict[str, list[Any]]] = {}
    for nk in node_kind:
        acc = sums.setdefault((nk["run"], nk["node"]),
                              {c: [] for c in (*TRAFFIC_SUMS, "payload_received")})
        for c in TRAFFIC_SUMS:
            acc[c].append(nk[c])
        acc["payload_received"].append(nk["rx_frames"] if nk["kind"] in PAYLOAD_KINDS else 0)
    span: dict[tuple[Any, ...], list[Any]] = {}
    for t in traffic:
        sp = span.setdefault((t["run"], t["node"]), [None, None])
        sp[0], sp[1] = _min(sp[0], t["first_t"]), _max(sp[1], t["last_t"])
    for i in items:
        sp = span.setdefault((i["run"], i["node"]), [None, None])
        sp[0], sp[1] = _min(sp[0], i["t"]), _max(sp[1], i["t"])
    out = []
    for run, node in run_nodes:
        st = status.get((run, node), {"entries": 0, "held": 0, "done_t": None})
        got = sums.get((run, node))
        row: Row = {"run": run, "node": node, "entries": st["entries"], "held": st["held"]}
        for c in (*TRAFFIC_SUMS, "payload_received"):
            value = _sum(got[c]) if got is not None else None
            row[c] = value if value is not None else (0.0 if c.endswith("_air") else 0)
        row["first_t"], row["last_t"] = span.get((run, node), [None, None])
        row["complete"] = row["held"] == row["entries"]
        row["complete_t"] = st["done_t"] if row["complete"] else None
        row["share"] = row["held"] / row["entries"] if row["entries"] > 0 else 1.0
        out.append(row)
    return out


def _runs_table(runs: Sequence[RunInfo], nodes: list[Row], entries: list[Row],
                tracked: list[Row]) -> list[Row]:
    nodes_by = _group(nodes, lambda r: r["run"])
    entries_by = _group((e for e in entries if e["tracked"]), lambda r: r["run"])
    pairs_by = _group(tracked, lambda r: r["run"])
    out = []
    for info in runs:
        ns = nodes_by.get(info.id, [])
        es = entries_by.get(info.id, [])
        ps = pairs_by.get(info.id, [])
        r: Row = {"run": info.id, "scenario": info.scenario, "policy": info.policy,
                  "seed": info.seed, "source": info.source, "files": len(info.files),
                  "duration": float(info.duration) if info.duration is not None else None}
        n_nodes = len(ns)
        n_complete = sum(1 for n in ns if n["complete"])
        held_pairs = _sum(n["held"] for n in ns) or 0
        n_entries = len(es)
        delivered_rows = [p for p in ps if p["complete"] and p["own"] is False]
        delivered = len(delivered_rows)
        stalled = sum(1 for p in ps if p["complete"] is False)
        sums = {c: _sum(n[c] for n in ns) for c in (*TRAFFIC_SUMS, "payload_received")}
        for c, v in sums.items():
            sums[c] = v if v is not None else (0.0 if c.endswith("_air") else 0)
        spreads = [e["spread"] for e in es]
        latencies = [p["latency"] for p in delivered_rows]
        last_complete_t = None
        for e in es:
            last_complete_t = _max(last_complete_t, e["complete_all_t"])
        last_pub = None
        for e in es:
            if e["published"]:
                last_pub = _max(last_pub, e["first_t"])
        start_t = end_t = None
        for n in ns:
            start_t, end_t = _min(start_t, n["first_t"]), _max(end_t, n["last_t"])
        total = n_nodes * n_entries
        converged = n_nodes > 0 and n_complete == n_nodes
        conv_t = (last_complete_t if last_complete_t is not None else 0.0) if converged else None
        origin = 0.0 if info.source == "simulator" else start_t
        r.update({
            "nodes": n_nodes, "entries": n_entries, "converged": converged,
            "convergence_t": conv_t, "origin_t": origin,
            "convergence_after": _sub(conv_t, origin), "last_publication_t": last_pub,
            "share": held_pairs / total if total > 0 else 1.0, "held_pairs": held_pairs,
            "nodes_complete": n_complete,
            "entries_complete": sum(1 for e in es if e["complete_all"]),
            "delivered": delivered,
            "spread_median": spark_percentile(spreads, 0.5),
            "spread_p95": spark_percentile(spreads, 0.95),
            "spread_max": max((s for s in spreads if s is not None), default=None),
            "latency_median": spark_percentile(latencies, 0.5),
            "latency_p95": spark_percentile(latencies, 0.95),
            "latency_max": max((v for v in latencies if v is not None), default=None),
            "tx_frames": sums["tx_frames"], "tx_bytes": sums["tx_bytes"],
            "tx_air": sums["tx_air"],
            "air_per_delivery": sums["tx_air"] / delivered if delivered > 0 else None,
            "air_bound": info.air_bound,
            "efficiency": info.air_bound / sums["tx_air"]
            if info.air_bound is not None and sums["tx_air"] > 0 else None,
            "rx_frames": sums["rx_frames"], "rx_bytes": sums["rx_bytes"],
            "rx_air": sums["rx_air"], "payload_received": sums["payload_received"],
            "duplicates": sums["duplicates"], "redundant": sums["redundant"],
            "redundancy": sums["redundant"] / sums["payload_received"]
            if sums["payload_received"] > 0 else None,
            "lost": sums["lost"], "collisions": sums["collisions"],
            "refused": sums["refused"], "drops": sums["drops"], "stalled_pairs": stalled,
            "start_t": start_t, "end_t": end_t})
        out.append(r)
    return out


def _stalls(tracked: list[Row], entries: list[Row], runs_t: list[Row]) -> list[Row]:
    """Every tracked (node, entry) pair never held completely, and how far it got."""
    by_entry = {(e["run"], e["feed"], e["seq"]): e for e in entries}
    end = {r["run"]: r["end_t"] for r in runs_t}
    out = []
    for p in tracked:
        if p["complete"] is not False:
            continue
        e = by_entry.get((p["run"], p["feed"], p["seq"]))
        if e is None or p["run"] not in end:
            continue
        held = set(p["held_set"] or [])
        missing = [i for i in e["item_set"] if i not in held]
        state = ("nothing" if p["items_held"] == 0 else
                 "entry missing" if p["entry_t"] is None else "side chain incomplete")
        out.append({"run": p["run"], "node": p["node"], "feed": _hex(p["feed"]),
                    "seq": p["seq"], "first_t": p["first_t"], "items": p["items"],
                    "items_held": p["items_held"], "state": state,
                    "entry_missing": ENTRY_ITEM in missing,
                    "missing_chunks": sorted(i for i in missing if i >= 0),
                    "last_progress_t": p["last_progress_t"],
                    "entry_last_progress_t": e["last_store_t"], "end_t": end[p["run"]]})
    return _sorted(out, "run", "node", "feed", "seq")


def _group_kind(node_kind: list[Row], runs_t: list[Row]) -> list[Row]:
    """Per (scenario, policy, kind): frames and airtime per run of the group."""
    sums = ("tx_frames", "tx_bytes", "tx_air", "rx_frames", "duplicates", "collisions")
    keys = {r["run"]: (r["scenario"], r["policy"]) for r in runs_t}
    group_runs: dict[tuple[Any, Any], int] = {}
    for r in runs_t:
        group_runs[keys[r["run"]]] = group_runs.get(keys[r["run"]], 0) + 1
    acc: dict[tuple[Any, ...], dict[str, list[Any]]] = {}
    for nk in node_kind:
        if nk["run"] not in keys:
            continue
        s, p = keys[nk["run"]]
        a = acc.setdefault((s, p, nk["kind"]), {c: [] for c in sums})
        for c in sums:
            a[c].append(nk[c])
    out = []
    for (s, p, kind), a in acc.items():
        if s is None or p is None:  # a join on a null key matches nothing
            continue
        n = group_runs[(s, p)]
        row: Row = {"scenario": s, "policy": p, "kind": kind, "runs": n}
        for c in sums:
            value = _sum(a[c])
            row[f"{c}_per_run"] = None if value is None else value / n
        out.append(row)
    return _sorted(out, "scenario", "policy", "kind")


def _curve(tracked: list[Row], runs_t: list[Row]) -> list[Row]:
    """Per run and moment a pair completed: how many pairs were held then, and the share."""
    totals = {r["run"]: (r["nodes"], r["entries"]) for r in runs_t}
    steps: dict[tuple[str, Any], int] = {}
    for p in tracked:
        if p["complete"]:
            key = (p["run"], p["complete_t"])
            steps[key] = steps.get(key, 0) + 1
    out = []
    held: dict[str, int] = {}
    for (run, t), n in sorted(steps.items(), key=lambda kv: (kv[0][0], kv[0][1] is not None,
                                                              kv[0][1] or 0.0)):
        held[run] = held.get(run, 0) + n
        if run not in totals:
            continue
        nodes, entries = totals[run]
        total = (nodes or 0) * (entries or 0)
        out.append({"run": run, "t": t, "held": held[run],
                    "share": held[run] / total if total else None})
    return out


def _groups(runs_t: list[Row], tracked: list[Row]) -> list[Row]:
    """Per (scenario, policy): the runs side by side, pooled latencies."""
    keys = {r["run"]: (r["scenario"], r["policy"]) for r in runs_t}
    pooled = _group((p for p in tracked if p["complete"] and p["own"] is False
                     and p["run"] in keys), lambda p: keys[p["run"]])
    out = []
    for (s, p), rs in _group(runs_t, lambda r: (r["scenario"], r["policy"])).items():
        conv = [r["convergence_after"] if r["converged"] else None for r in rs]
        lat = [x["latency"] for x in pooled.get((s, p), [])] \
            if s is not None and p is not None else []
        delivered = _sum(r["delivered"] for r in rs)
        tx_air_total = _sum(r["tx_air"] for r in rs)
        redundant = _sum(r["redundant"] for r in rs)
        payload = _sum(r["payload_received"] for r in rs)
        bound_total = _sum(r["air_bound"] for r in rs)
        bounded_air = _sum(r["tx_air"] for r in rs if r["air_bound"] is not None)
        out.append({
            "scenario": s, "policy": p, "runs": len(rs),
            "converged_runs": sum(1 for r in rs if r["converged"]),
            "convergence_median": spark_percentile(conv, 0.5),
            "convergence_mean": _avg(conv),
            "convergence_max": max((c for c in conv if c is not None), default=None),
            "share_mean": _avg([r["share"] for r in rs]),
            "nodes_mean": _avg([r["nodes"] for r in rs]),
            "entries_mean": _avg([r["entries"] for r in rs]),
            "tx_air_total": tx_air_total, "tx_air_mean": _avg([r["tx_air"] for r in rs]),
            "delivered": delivered,
            "duplicates_mean": _avg([r["duplicates"] for r in rs]),
            "redundant_total": redundant,
            "collisions_mean": _avg([r["collisions"] for r in rs]),
            "stalled_pairs": _sum(r["stalled_pairs"] for r in rs),
            "tx_frames_mean": _avg([r["tx_frames"] for r in rs]),
            "air_bound_mean": _avg([r["air_bound"] for r in rs]),
            "latency_median": spark_percentile(lat, 0.5) if lat else None,
            "latency_p95": spark_percentile(lat, 0.95) if lat else None,
            "air_per_delivery": tx_air_total / delivered if delivered else None,
            "redundancy": redundant / payload if payload else None,
            "efficiency": bound_total / bounded_air
            if bound_total is not None and bounded_air is not None and bounded_air > 0
            else None})
    return _sorted(out, "scenario", "policy")
