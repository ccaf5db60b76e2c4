"""The analysis as DataFrame jobs: convergence, latency, airtime, duplicates, stalls.

Input: the records of a campaign (``dataset.load_records``: one row per capture record,
partition column ``run``) and one row per run (``dataset.runs_frame``). Output: the
tables of :class:`Tables`, all plain DataFrames; ``docs/spark.md`` defines every column.

Words used below, as in ``firmware_sim/summary.py``:

- an *item* is an entry (item number -1) or one of its side-chain chunks (its ``cnr``);
- an entry is *published* where its author records ``store`` records without a face;
- a node *holds* an entry once it has stored (or sent) every item of it; for an entry
  published in the run the items are those its author stored, otherwise those of the
  node that held the most of it;
- the *tracked* entries of a run are the ones published in it (or, in a run that records
  no publication at all, such as gateway captures, every entry held, its author taken
  to be the node that held it first);
- the *nodes* of a run are those its headers declare, else those that recorded anything.

Frames heard but dropped carry no decode (the Node could not match them, or the channel
lost them). Such a frame is identified by its bytes: the run's *catalogue* maps the hash
of every frame sent (``tx``) or decoded (``rx``) in the run to its kind, feed, seq,
chunk number and airtime. Duplicates are entry/chunk frames that reached a Node and
stored nothing (``drop``, reason ``no_match``); *redundant* receptions are those whose
item the node held already.

All joins on big inputs are broadcast joins against small, aggregated sides (the
catalogue has one row per distinct frame, the held items one per stored item), so the
records are read twice (pass 1: items held and the catalogue, in one aggregation; pass
2: the traffic) and shuffled only after aggregation. No Python UDFs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from .dataset import RunInfo
from .schema import (
    COLLISION,
    DUTY_CYCLE,
    ENTRY_ITEM,
    NO_MATCH,
    NODE_REASONS,
    PAYLOAD_KINDS,
    TRAFFIC_SUMS,
)
from .small import (
    CATALOGUE_SCHEMA,
    HELD_SCHEMA,
    SmallTables,
    compute_small,
    frame_catalogue,
    held_items,
)

__all__ = ["Tables", "compute", "compute_on_driver"]


@dataclass(slots=True)
class Tables:
    """Every table of a report; names as in ``docs/spark.md``."""

    runs: DataFrame        # one row per run: convergence, airtime, duplicates, stalls
    groups: DataFrame      # one row per (scenario, policy): the runs aggregated
    entries: DataFrame     # one row per (run, feed, seq)
    deliveries: DataFrame  # one row per (run, node, feed, seq): when the node held it
    curve: DataFrame       # per run: share of (node, entry) pairs held over time
    nodes: DataFrame       # one row per (run, node)
    node_kind: DataFrame   # one row per (run, node, kind): frames, bytes, airtime
    drops: DataFrame       # one row per (run, node, reason, kind)
    stalls: DataFrame      # one row per (run, node, feed, seq) never held completely
    group_kind: DataFrame  # one row per (scenario, policy, kind): mean per run


    def items(self) -> list[tuple[str, DataFrame]]:
        return [(f.name, getattr(self, f.name)) for f in fields(self)]


def _i(cond: Column) -> Column:
    return F.when(cond, 1).otherwise(0)


def _hex(col: str) -> Column:
    return F.lower(F.hex(F.col(col)))


# --- pass 1: who held which item when, and what every frame sent or decoded was -------

def _evidence(records: DataFrame) -> DataFrame:
    """One pass over the records for what two small tables need, aggregated map-side.

    A record is *item evidence* (a store record, or an entry or chunk sent: the node
    held it) and/or *catalogue evidence* (a frame sent or decoded, with its kind). The
    key keeps of each record only what its tables read (the node only for item
    evidence), so the records collapse into a few rows per item and per distinct frame
    before anything is shuffled. :func:`_items` and :func:`_catalogue` read the result.
    """
    d = F.col("dir")
    is_item = (((d == "store") | ((d == "tx") & F.col("kind").isin(*PAYLOAD_KINDS)))
               & F.col("feed").isNotNull() & F.col("seq").isNotNull())
    is_cat = (d.isin("tx", "rx") & F.col("frame").isNotNull() & F.col("kind").isNotNull()
              & (F.col("kind") != "unknown"))
    both = records.select(
        "run", "node", "dir", "face", "kind", "feed", "seq", "cnr", "t", "air", "frame",
        is_item.alias("is_item"), is_cat.alias("is_cat")).where("is_item OR is_cat")
    cat = F.col("is_cat")
    return (both.groupBy(
        "run", "is_item", "is_cat",
        F.when(F.col("is_item"), F.col("node")).alias("node"),
        "feed", "seq", "cnr",
        F.when(cat, F.col("kind")).alias("kind"),
        F.when(cat, _frame_hash()).alias("fh"))
        .agg(F.min(F.when(F.col("is_item"), F.col("t"))).alias("t"),
             F.min(F.when((d == "store") & F.col("face").isNull(), F.col("t")))
             .alias("own_t"),
             F.sum(F.when(cat & (d == "tx"), F.col("air"))).alias("air"),
             F.sum(_i(cat & (d == "tx") & F.col("air").isNotNull())).alias("sent")))


def _items(evidence: DataFrame) -> DataFrame:
    """(run, node, feed, seq, item): since when the node held it; ``own_t``: published.

    A node holds an item from its first store record of it, or from the first time it
    sent it (only what is held can be sent: this covers a gateway whose capture began
    after it had the entry; in a simulation every send comes after the store).
    """
    return (evidence.where("is_item")
            .groupBy("run", "node", "feed", "seq",
                     F.coalesce(F.col("cnr"), F.lit(ENTRY_ITEM)).alias("item"))
            .agg(F.min("t").alias("t"), F.min("own_t").alias("own_t")))


def _entries(items: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Per (run, node, feed, seq) what the node held; per (run, feed, seq) the entry."""
    node_entry = (items.groupBy("run", "node", "feed", "seq")
                  .agg(F.count("*").alias("items_held"),
                       F.min("t").alias("first_item_t"),
                       F.max("t").alias("last_t"),
                       F.min(F.when(F.col("item") == ENTRY_ITEM, F.col("t"))).alias("entry_t"),
                       F.array_sort(F.collect_set("item")).alias("held_set")))
    published = (items.where(F.col("own_t").isNotNull())
                 .groupBy("run", "feed", "seq")
                 .agg(F.min("own_t").alias("pub_t"),
                      F.count("*").alias("pub_items"),
                      F.array_sort(F.collect_set("item")).alias("pub_set"),
                      F.min("node").alias("author")))
    seen = (node_entry.groupBy("run", "feed", "seq")
            .agg(F.min("first_item_t").alias("first_store_t"),
                 F.min_by("node", F.struct("first_item_t", "node")).alias("first_holder"),
                 F.max("last_t").alias("last_store_t"),
                 F.max("items_held").alias("max_held"),
                 F.array_sort(F.array_distinct(F.flatten(F.collect_list("held_set"))))
                 .alias("seen_set")))
    runs_publishing = published.select("run").distinct().withColumn("publishing", F.lit(True))
    entries = (seen.join(published, ["run", "feed", "seq"], "left")
               .join(F.broadcast(runs_publishing), "run", "left")
               .select("run", "feed", "seq",
                       F.col("pub_t").isNotNull().alias("published"),
                       (F.col("pub_t").isNotNull() | F.col("publishing").isNull())
                       .alias("tracked"),
                       F.coalesce("author", "first_holder").alias("author"), "pub_t",
                       F.coalesce("pub_t", "first_store_t").alias("first_t"),
                       F.coalesce("pub_items", "max_held").alias("items"),
                       F.coalesce("pub_set", "seen_set").alias("item_set"),
                       "last_store_t"))
    return node_entry, entries


# --- traffic: frames, bytes, airtime, duplicates ---------------------------------------

def _frame_hash() -> Column:
    return F.when(F.col("frame").isNotNull(), F.xxhash64("frame"))


def _catalogue(evidence: DataFrame) -> DataFrame:
    """(run, fh) of every frame sent or decoded: its kind, item and airtime."""
    # decode fields as keys first (a hash aggregation: max over strings and bytes would
    # sort), then one row per frame from the few variants left
    variants = (evidence.where("is_cat")
                .groupBy("run", "fh", "kind", "feed", "seq", "cnr")
                .agg(F.sum("air").alias("air"), F.sum("sent").alias("sent")))
    return (variants.groupBy("run", "fh")
            .agg(F.max("kind").alias("c_kind"), F.max("feed").alias("c_feed"),
                 F.max("seq").alias("c_seq"), F.max("cnr").alias("c_cnr"),
                 (F.sum("air") / F.sum("sent")).alias("c_air")))


def _traffic(records: DataFrame, items: DataFrame, catalogue: DataFrame) -> DataFrame:
    """Frames, bytes, airtime, duplicates per (run, node, kind, dir, reason, dup entry)."""
    held = items.select(F.col("run").alias("h_run"), F.col("node").alias("h_node"),
                        F.col("feed").alias("h_feed"), F.col("seq").alias("h_seq"),
                        F.col("item").alias("h_item"), F.col("t").alias("h_t"))
    frames = (records.where(F.col("dir") != "store")
              .select("run", "node", "dir", "kind", "reason", "feed", "seq", "cnr", "air",
                      "t", _frame_hash().alias("fh"),
                      F.coalesce(F.length("frame"), F.lit(0)).alias("bytes"))
              .join(F.broadcast(catalogue), ["run", "fh"], "left"))
    known = F.col("kind").isNotNull() & (F.col("kind") != "unknown")
    kind = F.when(known, F.col("kind")).otherwise(F.coalesce("c_kind", "kind", F.lit("unknown")))
    frames = frames.select(
        "run", "node", "dir", "reason", "t", "bytes", kind.alias("kind_i"),
        F.coalesce("feed", "c_feed").alias("feed_i"), F.coalesce("seq", "c_seq").alias("seq_i"),
        F.coalesce("cnr", "c_cnr").alias("cnr_i"),
        F.when(F.col("dir") == "tx", F.col("air")).otherwise(F.col("c_air")).alias("air_i"))
    dup = ((F.col("dir") == "drop") & (F.col("reason") == NO_MATCH)
           & F.col("kind_i").isin(*PAYLOAD_KINDS))
    item = F.when(F.col("kind_i") == "chunk", F.col("cnr_i")).otherwise(F.lit(ENTRY_ITEM))
    frames = (frames.withColumn("dup", dup)
              .withColumn("dup_feed", F.when(F.col("dup"), F.col("feed_i")))
              .withColumn("dup_seq", F.when(F.col("dup"), F.col("seq_i")))
              .withColumn("dup_item", F.when(F.col("dup"), item)))
    cond = [frames.run == held.h_run, frames.node == held.h_node,
            frames.dup_feed == held.h_feed, frames.dup_seq == held.h_seq,
            frames.dup_item == held.h_item]
    frames = frames.join(F.broadcast(held), cond, "left")
    redundant = F.col("dup") & F.col("h_t").isNotNull() & (F.col("h_t") <= F.col("t"))
    return (frames
            .groupBy("run", "node", F.col("kind_i").alias("kind"), "dir", "reason",
                     "dup_feed", "dup_seq")
            .agg(F.count("*").alias("frames"), F.sum("bytes").alias("bytes"),
                 F.sum(F.coalesce("air_i", F.lit(0.0))).alias("air"),
                 F.sum(_i(F.col("dup"))).alias("dups"),
                 F.sum(_i(redundant)).alias("redundant"),
                 F.min("t").alias("first_t"), F.max("t").alias("last_t")))


def _node_kind(traffic: DataFrame) -> DataFrame:
    d, r = F.col("dir"), F.col("reason")
    received = (d == "rx") | ((d == "drop") & r.isin(*NODE_REASONS))
    lost = (d == "drop") & ~r.isin(*NODE_REASONS) & (r != DUTY_CYCLE)

    def total(cond: Column, col: str = "frames") -> Column:
        return F.sum(F.when(cond, F.col(col)).otherwise(0))

    return (traffic.groupBy("run", "node", "kind")
            .agg(total(d == "tx").alias("tx_frames"), total(d == "tx", "bytes").alias("tx_bytes"),
                 total(d == "tx", "air").alias("tx_air"),
                 total(received).alias("rx_frames"), total(received, "bytes").alias("rx_bytes"),
                 total(received, "air").alias("rx_air"),
                 F.sum("dups").alias("duplicates"), F.sum("redundant").alias("redundant"),
                 total(lost).alias("lost"), total(r == COLLISION).alias("collisions"),
                 total(r == DUTY_CYCLE).alias("refused"), total(d == "drop").alias("drops"))
            .withColumn("tx_air", F.col("tx_air").cast("double"))
            .withColumn("rx_air", F.col("rx_air").cast("double")))


# --- the tables -------------------------------------------------------------------------

def _run_nodes(runs: DataFrame, traffic: DataFrame, items: DataFrame) -> DataFrame:
    declared = runs.select("run", F.explode("declared_nodes").alias("node"))
    seen = traffic.select("run", "node").union(items.select("run", "node")).distinct()
    undeclared = seen.join(F.broadcast(declared.select("run").distinct()), "run", "left_anti")
    return declared.union(undeclared).distinct()


def _pairs(entries: DataFrame, node_entry: DataFrame, run_nodes: DataFrame) -> DataFrame:
    """Every (run, node, entry): when the node held the entry, if it did."""
    complete = F.col("items_held") >= F.col("items")
    return (entries.select("run", "feed", "seq", "tracked", "author", "first_t", "items")
            .join(F.broadcast(run_nodes), "run")
            .join(node_entry, ["run", "node", "feed", "seq"], "left")
            .withColumn("items_held", F.coalesce("items_held", F.lit(0)))
            .select("run", "node", "feed", "seq", "tracked",
                    (F.col("node") == F.coalesce("author", F.lit(""))).alias("own"),
                    "first_t", "entry_t", "items", "items_held", complete.alias("complete"),
                    F.when(complete, F.col("last_t")).alias("complete_t"),
                    F.when(complete, F.col("last_t") - F.col("first_t")).alias("latency"),
                    F.col("last_t").alias("last_progress_t"), "held_set"))


def _pct(col: str | Column, p: float) -> Column:
    """The ``p`` percentile as :func:`gateway.stats.percentile` defines it (linear
    interpolation between the closest ranks, which is Spark's ``percentile``)."""
    return F.percentile(F.col(col) if isinstance(col, str) else col, F.lit(p))


def compute_on_driver(records: DataFrame, runs: Sequence[RunInfo],
                      step: Callable[[str], None] | None = None) -> SmallTables:
    """Every table of a campaign of up to a hundred runs or so: the two passes over the
    records in Spark, their small aggregates collected once each, the tables computed
    from them on the driver (:mod:`spark.small`).

    Pass 1's evidence (a few rows per item held and per distinct frame) comes to the
    driver whole; the items held and the catalogue of frames are folded from it here
    and go back to Spark as local tables, broadcast to pass 2 without a Spark job of
    their own (computing them in Spark cost a checkpoint and five small jobs, each
    planned and compiled on a fresh JVM for a few thousand rows)."""
    if step is not None:
        step("pass 1/2 over the records: items stored and frames sent or decoded")
    evidence = _evidence(records).toArrow().to_pylist()
    item_rows = held_items(e for e in evidence if e["is_item"])
    catalogue = frame_catalogue(e for e in evidence if e["is_cat"])
    spark = records.sparkSession
    held = spark.createDataFrame(pa.Table.from_pylist(item_rows, schema=HELD_SCHEMA))
    frames = spark.createDataFrame(pa.Table.from_pylist(catalogue, schema=CATALOGUE_SCHEMA))
    if step is not None:
        step("pass 2/2: frames, bytes, airtime and duplicates by node and kind")
    traffic_rows = _traffic(records, held, frames).toArrow().to_pylist()
    if step is not None:
        step(f"tables from {len(item_rows):,} items held and {len(traffic_rows):,} "
             "traffic rows, on the driver")
    return compute_small(item_rows, traffic_rows, runs)


def compute(records: DataFrame, runs: DataFrame,
            step: Callable[[str], None] | None = None, one_partition: bool = True) -> Tables:
    """Every table of a campaign; ``step`` hears what is being computed.

    Two passes over the records, each aggregated map-side before anything is shuffled.
    Every intermediate result is materialized once (``localCheckpoint``: the plans
    built on it stay short, and Spark plans them quickly); with ``one_partition``
    (campaigns of up to a hundred runs or so) coalesced into one partition first: no
    shuffle, and one task per stage where many tiny ones would cost more than they split.
    """
    def keep(df: DataFrame, what: str | None = None) -> DataFrame:
        if what is not None and step is not None:
            step(what)
        return (df.coalesce(1) if one_partition else df).localCheckpoint()

    evidence = keep(_evidence(records),
                    "pass 1/2 over the records: items stored and frames sent or decoded")
    items = keep(_items(evidence))
    catalogue = _catalogue(evidence)  # read once, broadcast to pass 2
    node_entry, entries = _entries(items)
    entries = keep(entries)
    traffic = keep(_traffic(records, items, catalogue),
                   "pass 2/2: frames, bytes, airtime and duplicates by node and kind")
    if step is not None:
        step("deliveries, entries, nodes and runs")
    run_nodes = keep(_run_nodes(runs, traffic, items))
    pairs = keep(_pairs(entries, node_entry, run_nodes))
    tracked = pairs.where("tracked")
    node_kind = keep(_node_kind(traffic))
    entries_t = keep(_entries_table(entries, pairs, traffic))
    nodes = keep(_nodes_table(run_nodes, tracked, node_kind, traffic, items))
    runs_t = keep(_runs_table(runs, nodes, entries_t, tracked))
    groups = keep(_groups(runs_t, tracked))
    deliveries = pairs.select("run", "node", _hex("feed").alias("feed"), "seq", "tracked", "own",
                              "first_t", "entry_t", "complete_t", "latency", "items",
                              "items_held", "complete")
    drops = (traffic.where(F.col("dir") == "drop")
             .groupBy("run", "node", "reason", "kind")
             .agg(F.sum("frames").alias("frames"), F.sum("bytes").alias("bytes")))
    return Tables(runs_t, groups, entries_t, deliveries, _curve(tracked, runs_t), nodes,
                  node_kind, drops, _stalls(tracked, entries, runs_t),
                  _group_kind(node_kind, runs_t))


def _entries_table(entries: DataFrame, pairs: DataFrame, traffic: DataFrame) -> DataFrame:
    dup_per_entry = (traffic.where(F.col("dup_feed").isNotNull())
                     .groupBy("run", F.col("dup_feed").alias("feed"),
                              F.col("dup_seq").alias("seq"))
                     .agg(F.sum("dups").alias("duplicates"),
                          F.sum("redundant").alias("redundant")))
    status = (pairs.groupBy("run", "feed", "seq")
              .agg(F.count("*").alias("nodes"), F.sum(_i(F.col("complete"))).alias("held_by"),
                   F.max("complete_t").alias("last_complete_t")))
    complete_all = F.col("held_by") == F.col("nodes")
    complete_all_t = F.when(complete_all, F.greatest("last_complete_t", "first_t"))
    return (entries.join(status, ["run", "feed", "seq"], "left")
            .join(dup_per_entry, ["run", "feed", "seq"], "left")
            .select("run", _hex("feed").alias("feed"), "seq", "published", "tracked",
                    "author", "first_t", "items", "nodes", "held_by",
                    complete_all.alias("complete_all"), complete_all_t.alias("complete_all_t"),
                    (complete_all_t - F.col("first_t")).alias("spread"),
                    F.col("last_store_t").alias("last_progress_t"),
                    F.coalesce("duplicates", F.lit(0)).alias("duplicates"),
                    F.coalesce("redundant", F.lit(0)).alias("redundant")))


def _nodes_table(run_nodes: DataFrame, tracked: DataFrame, node_kind: DataFrame,
                 traffic: DataFrame, items: DataFrame) -> DataFrame:
    status = (tracked.groupBy("run", "node")
              .agg(F.count("*").alias("entries"), F.sum(_i(F.col("complete"))).alias("held"),
                   F.max("complete_t").alias("done_t")))
    payload = F.col("kind").isin(*PAYLOAD_KINDS)
    sums = (node_kind.groupBy("run", "node")
            .agg(*[F.sum(c).alias(c) for c in TRAFFIC_SUMS],
                 F.sum(F.when(payload, F.col("rx_frames")).otherwise(0))
                 .alias("payload_received")))
    span = (traffic.select("run", "node", "first_t", "last_t")
            .union(items.select("run", "node", F.col("t").alias("first_t"),
                                F.col("t").alias("last_t")))
            .groupBy("run", "node").agg(F.min("first_t").alias("first_t"),
                                        F.max("last_t").alias("last_t")))
    counts = ["entries", "held", "payload_received",
              *[c for c in TRAFFIC_SUMS if not c.endswith("_air")]]
    return (run_nodes.join(F.broadcast(status), ["run", "node"], "left")
            .join(F.broadcast(sums), ["run", "node"], "left")
            .join(F.broadcast(span), ["run", "node"], "left")
            .na.fill(0, counts)
            .na.fill(0.0, ["tx_air", "rx_air"])
            .withColumn("complete", F.col("held") == F.col("entries"))
            .withColumn("complete_t", F.when(F.col("complete"), F.col("done_t")))
            .withColumn("share", F.when(F.col("entries") > 0, F.col("held") / F.col("entries"))
                        .otherwise(1.0))
            .drop("done_t"))


def _runs_table(runs: DataFrame, nodes: DataFrame, entries: DataFrame,
                tracked: DataFrame) -> DataFrame:
    node_sum = (nodes.groupBy("run")
                .agg(F.count("*").alias("nodes"),
                     F.sum(_i(F.col("complete"))).alias("nodes_complete"),
                     F.sum("held").alias("held_pairs"),
                     F.sum("payload_received").alias("payload_received"),
                     F.min("first_t").alias("start_t"), F.max("last_t").alias("end_t"),
                     *[F.sum(c).alias(c) for c in TRAFFIC_SUMS]))
    entry_sum = (entries.where("tracked").groupBy("run")
                 .agg(F.count("*").alias("entries"),
                      F.sum(_i(F.col("complete_all"))).alias("entries_complete"),
                      F.max("complete_all_t").alias("last_complete_t"),
                      F.max(F.when(F.col("published"), F.col("first_t")))
                      .alias("last_publication_t"),
                      F.median("spread").alias("spread_median"),
                      _pct("spread", 0.95).alias("spread_p95"),
                      F.max("spread").alias("spread_max")))
    delivered = F.col("complete") & ~F.col("own")
    latency = F.when(delivered, F.col("latency"))
    pair_sum = (tracked.groupBy("run")
                .agg(F.sum(_i(delivered)).alias("delivered"),
                     F.sum(_i(~F.col("complete"))).alias("stalled_pairs"),
                     F.median(latency).alias("latency_median"),
                     _pct(latency, 0.95).alias("latency_p95"),
                     F.max(latency).alias("latency_max")))
    counts = ["nodes", "nodes_complete", "held_pairs", "entries", "entries_complete",
              "delivered", "stalled_pairs", "payload_received",
              *[c for c in TRAFFIC_SUMS if not c.endswith("_air")]]
    out = (runs.join(F.broadcast(node_sum), "run", "left")
           .join(F.broadcast(entry_sum), "run", "left")
           .join(F.broadcast(pair_sum), "run", "left")
           .na.fill(0, counts).na.fill(0.0, ["tx_air", "rx_air"]))
    total = F.col("nodes") * F.col("entries")
    converged = (F.col("nodes") > 0) & (F.col("nodes_complete") == F.col("nodes"))
    conv_t = F.when(converged, F.coalesce("last_complete_t", F.lit(0.0)))
    origin = F.when(F.col("source") == "simulator", F.lit(0.0)).otherwise(F.col("start_t"))
    return out.select(
        "run", "scenario", "policy", "seed", "source", "files", "duration", "nodes", "entries",
        converged.alias("converged"), conv_t.alias("convergence_t"),
        origin.alias("origin_t"), (conv_t - origin).alias("convergence_after"),
        "last_publication_t",
        F.when(total > 0, F.col("held_pairs") / total).otherwise(1.0).alias("share"),
        "held_pairs", "nodes_complete", "entries_complete", "delivered",
        "spread_median", "spread_p95", "spread_max",
        "latency_median", "latency_p95", "latency_max",
        "tx_frames", "tx_bytes", "tx_air",
        F.when(F.col("delivered") > 0, F.col("tx_air") / F.col("delivered"))
        .alias("air_per_delivery"),
        "air_bound", _efficiency("air_bound", "tx_air").alias("efficiency"),
        "rx_frames", "rx_bytes", "rx_air", "payload_received", "duplicates", "redundant",
        F.when(F.col("payload_received") > 0, F.col("redundant") / F.col("payload_received"))
        .alias("redundancy"),
        "lost", "collisions", "refused", "drops", "stalled_pairs", "start_t", "end_t")


def _efficiency(bound: str, air: str) -> Column:
    """The airtime lower bound as a share of the airtime spent (1.0: no more than it)."""
    return F.when(F.col(bound).isNotNull() & (F.col(air) > 0), F.col(bound) / F.col(air))


def _stalls(tracked: DataFrame, entries: DataFrame, runs_t: DataFrame) -> DataFrame:
    """Every tracked (node, entry) pair never held completely, and how far it got."""
    missing = F.array_except("item_set",
                             F.coalesce("held_set", F.array().cast("array<bigint>")))
    return (tracked.where(~F.col("complete"))
            .join(entries.select("run", "feed", "seq", "item_set",
                                 F.col("last_store_t").alias("entry_last_progress_t")),
                  ["run", "feed", "seq"])
            .withColumn("missing", missing)
            .join(F.broadcast(runs_t.select("run", "end_t")), "run")
            .select("run", "node", _hex("feed").alias("feed"), "seq", "first_t", "items",
                    "items_held",
                    F.when(F.col("items_held") == 0, F.lit("nothing"))
                    .when(F.col("entry_t").isNull(), F.lit("entry missing"))
                    .otherwise(F.lit("side chain incomplete")).alias("state"),
                    F.array_contains("missing", ENTRY_ITEM).alias("entry_missing"),
                    F.array_sort(F.filter("missing", lambda x: x >= 0)).alias("missing_chunks"),
                    "last_progress_t", "entry_last_progress_t", "end_t"))


def _group_kind(node_kind: DataFrame, runs_t: DataFrame) -> DataFrame:
    """Per (scenario, policy, kind): frames and airtime per run of the group."""
    sums = ("tx_frames", "tx_bytes", "tx_air", "rx_frames", "duplicates", "collisions")
    group_runs = runs_t.groupBy("scenario", "policy").agg(F.count("*").alias("runs"))
    return (node_kind.join(F.broadcast(runs_t.select("run", "scenario", "policy")), "run")
            .groupBy("scenario", "policy", "kind")
            .agg(*[F.sum(c).alias(c) for c in sums])
            .join(F.broadcast(group_runs), ["scenario", "policy"])
            .select("scenario", "policy", "kind", "runs",
                    *[(F.col(c) / F.col("runs")).alias(f"{c}_per_run") for c in sums]))


def _curve(tracked: DataFrame, runs_t: DataFrame) -> DataFrame:
    """Per run and moment a pair completed: how many pairs were held then, and the share."""
    steps = (tracked.where("complete").groupBy("run", F.col("complete_t").alias("t"))
             .agg(F.count("*").alias("n")))
    upto = Window.partitionBy("run").orderBy("t").rowsBetween(Window.unboundedPreceding, 0)
    total = F.col("nodes") * F.col("entries")
    return (steps.withColumn("held", F.sum("n").over(upto))
            .join(F.broadcast(runs_t.select("run", "nodes", "entries")), "run")
            .select("run", "t", "held", (F.col("held") / total).alias("share")))


def _groups(runs_t: DataFrame, tracked: DataFrame) -> DataFrame:
    """Per (scenario, policy): the runs side by side, pooled latencies."""
    conv = F.when(F.col("converged"), F.col("convergence_after"))
    per_group = (runs_t.groupBy("scenario", "policy")
                 .agg(F.count("*").alias("runs"), F.sum(_i(F.col("converged"))).alias("converged_runs"),
                      F.median(conv).alias("convergence_median"),
                      F.avg(conv).alias("convergence_mean"), F.max(conv).alias("convergence_max"),
                      F.avg("share").alias("share_mean"), F.avg("nodes").alias("nodes_mean"),
                      F.avg("entries").alias("entries_mean"),
                      F.sum("tx_air").alias("tx_air_total"), F.avg("tx_air").alias("tx_air_mean"),
                      F.sum("delivered").alias("delivered"),
                      F.avg("duplicates").alias("duplicates_mean"),
                      F.sum("redundant").alias("redundant_total"),
                      F.sum("payload_received").alias("payload_received"),
                      F.avg("collisions").alias("collisions_mean"),
                      F.sum("stalled_pairs").alias("stalled_pairs"),
                      F.avg("tx_frames").alias("tx_frames_mean"),
                      F.avg("air_bound").alias("air_bound_mean"),
                      F.sum("air_bound").alias("air_bound_total"),
                      F.sum(F.when(F.col("air_bound").isNotNull(), F.col("tx_air")))
                      .alias("bounded_air")))
    pooled = (tracked.where(F.col("complete") & ~F.col("own"))
              .join(F.broadcast(runs_t.select("run", "scenario", "policy")), "run")
              .groupBy("scenario", "policy")
              .agg(F.median("latency").alias("latency_median"),
                   _pct("latency", 0.95).alias("latency_p95")))
    return (per_group.join(F.broadcast(pooled), ["scenario", "policy"], "left")
            .withColumn("air_per_delivery", F.when(F.col("delivered") > 0,
                                                   F.col("tx_air_total") / F.col("delivered")))
            .withColumn("redundancy", F.when(F.col("payload_received") > 0,
                                             F.col("redundant_total") / F.col("payload_received")))
            .withColumn("efficiency", _efficiency("air_bound_total", "bounded_air"))
            .drop("payload_received", "air_bound_total", "bounded_air"))
