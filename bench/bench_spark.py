#!/usr/bin/env python3
"""The Spark analysis on a generated campaign of 10 million capture records, on local[2].

Usage: ``python3 bench/bench_spark.py [--records N] [--runs R] [--master M] [--keep DIR]
[--conf KEY=VALUE]``.

1. Generate the campaign directly as a Parquet dataset with Spark column expressions
   (no CBOR, so generation does not dominate): R runs of a 25-node mesh, half under
   ``reference`` and half under ``default``, each with 8 entries of 3 items, a pool of
   600 distinct frames per run (as in a real capture, where WANTs and claims repeat),
   12 % tx (entries and chunks sent by their authors once published), 36 % rx, 52 %
   drops (collisions, fading, half-duplex, duplicates), and the store records of every
   node; a few runs leave one chunk stuck at one node.
2. Analyze it as ``tinyssb analyze DATASET`` does (every table, summary.json, plots,
   index.html): wall time and records per second. Target: at most 120 s.
3. The same run metrics by a plain single-process Python pass over the same Parquet
   files (``spark.baseline``), checked equal to Spark's: wall time and the ratio.

A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from spark.analyze import AnalyzeRequest, analyze
from spark.baseline import RunMetrics, baseline
from spark.dataset import RECORDS, Dataset, FileInfo, RunInfo, is_dataset
from spark.schema import RECORD_COLUMNS, spark_schema
from spark.session import build_session, parse_conf

NODES = 25
AUTHORS = (0, 4, 20, 24)  # the corners publish, as in grid-25
ENTRIES_PER_AUTHOR = 2
ITEMS = 3  # the entry and two side-chain chunks
POOL = 600  # distinct frames per run
PAYLOAD = len(AUTHORS) * ENTRIES_PER_AUTHOR * ITEMS  # pool frames 0..23: entries, chunks
DURATION = 10_800.0
TARGET_S = 120.0


def _u(*cols: Column | str, salt: str) -> Column:
    """A uniform number in [0, 1) from a hash of ``cols``."""
    h = F.xxhash64(F.lit(salt), *cols)
    return (F.abs(h % 1_000_003) / F.lit(1_000_003.0)).cast("double")


def _policy(run_no: Column) -> Column:
    return F.when(run_no % 2 == 0, F.lit("reference")).otherwise(F.lit("default"))


def _pool(spark: SparkSession, runs: int) -> DataFrame:
    """Per run the POOL distinct frames: kind, length, item, bytes, airtime."""
    f = F.col("f")
    slot = f % 20
    payload = f < PAYLOAD
    entry = f / ITEMS
    author_no = F.floor(entry / ENTRIES_PER_AUTHOR).cast("int")
    author = F.element_at(F.array(*[F.lit(f"g{a}") for a in AUTHORS]), author_no + 1)
    kind = (F.when(payload, F.when(f % ITEMS == 0, "entry").otherwise("chunk"))
            .when(slot < 10, "want").when(slot < 14, "chnk").when(slot < 19, "claim")
            .otherwise("novelty"))
    length = (F.when(payload, 124).when(slot < 10, 16 + (f % 4) * 4).when(slot < 14, 19)
              .when(slot < 19, 109).otherwise(44))
    digest = F.unhex(F.sha2(F.concat_ws(":", F.col("run_no").cast("string"),
                                         f.cast("string")), 256))
    return (spark.range(runs).withColumnRenamed("id", "run_no")
            .crossJoin(spark.range(POOL).withColumnRenamed("id", "f"))
            .select("run_no", "f", kind.alias("p_kind"), length.alias("len"),
                    digest.alias("d"),
                    F.when(payload, F.unhex(F.sha2(F.concat_ws(":", F.lit("feed"), author), 256)))
                    .alias("p_feed"),
                    F.when(payload, (F.floor(entry) % ENTRIES_PER_AUTHOR + 1).cast("long"))
                    .alias("p_seq"),
                    F.when(payload & (f % ITEMS > 0), (f % ITEMS - 1).cast("long"))
                    .alias("p_cnr"),
                    (F.lit(0.0257) + length * F.lit(0.00145)).alias("p_air"))
            .withColumn("p_frame", F.expr("substring(concat(d, d, d, d), 1, len)"))
            .drop("d", "len"))


def _traffic(spark: SparkSession, runs: int, per_run: int, pool: DataFrame) -> DataFrame:
    i = F.col("id")
    run_no = (i / per_run).cast("long")
    k = i % per_run
    u = [_u(i, salt=f"u{n}") for n in range(6)]
    d = F.when(u[0] < 0.12, "tx").when(u[0] < 0.48, "rx").otherwise("drop")
    reason = (F.when(d != "drop", None).when(u[1] < 0.55, "collision")
              .when(u[1] < 0.85, "below-sensitivity").when(u[1] < 0.97, "half-duplex")
              .otherwise("no_match"))
    t = k * F.lit(DURATION / per_run)
    other = PAYLOAD + F.floor(u[2] * (POOL - PAYLOAD))
    item = F.floor(u[2] * PAYLOAD)
    # entries and chunks go on air from their author, once published (see _stores)
    published = F.least(F.lit(len(AUTHORS) * ENTRIES_PER_AUTHOR),
                        F.floor((t - 10.0) / 300.0) + 1) * ITEMS
    sent = F.floor(u[2] * published)
    payload_tx = (d == "tx") & (u[3] < 0.06) & (t >= 10.0)
    f = (F.when(payload_tx, sent).when(d == "tx", other).when(d == "rx", other)
         .when(reason == "no_match", F.when(u[3] < 0.8, item).otherwise(other))
         .otherwise(F.when(u[3] < 0.06, item).otherwise(other))).cast("long")
    author = F.element_at(F.array(*[F.lit(f"g{a}") for a in AUTHORS]),
                          F.floor(sent / (ITEMS * ENTRIES_PER_AUTHOR)).cast("int") + 1)
    node = F.when(payload_tx, author).otherwise(
        F.concat(F.lit("g"), F.floor(u[4] * NODES).cast("string")))
    base = spark.range(runs * per_run).select(
        run_no.alias("run_no"), k.alias("offset"), t.alias("t"), node.alias("node"),
        d.alias("dir"), reason.alias("reason"), f.alias("f"),
        (F.lit(-125.0) + u[5] * 25).alias("rssi"), (F.lit(-8.0) + u[5] * 14).alias("snr"))
    joined = base.join(F.broadcast(pool), ["run_no", "f"])
    heard = F.col("dir") != "tx"
    payload_known = F.col("dir").isin("tx", "rx")
    return joined.select(
        "run_no", "offset", "t", "node", "dir", F.lit("lora0").alias("face"), "p_frame",
        F.when(F.col("dir").isin("tx", "rx"), F.col("p_kind"))
        .when(F.col("reason") == "no_match", "unknown").alias("kind"),
        F.when(payload_known, F.col("p_feed")).alias("feed"),
        F.when(payload_known, F.col("p_seq")).alias("seq"),
        F.when(payload_known, F.col("p_cnr")).alias("cnr"), "reason",
        F.when(heard, F.col("rssi")).alias("rssi"), F.when(heard, F.col("snr")).alias("snr"),
        F.when(~heard, F.col("p_air")).alias("air"))


def _stores(spark: SparkSession, runs: int, per_run: int) -> DataFrame:
    """Every node stores every item; runs 10, 30, ... leave chunk 1 of entry 0 at g12."""
    e = F.col("e")
    author = F.element_at(F.array(*[F.lit(f"g{a}") for a in AUTHORS]),
                          F.floor(e / ENTRIES_PER_AUTHOR).cast("int") + 1)
    pub_t = F.lit(10.0) + e * 300.0
    node = F.concat(F.lit("g"), F.col("n").cast("string"))
    own = node == author
    slow = F.when(_policy(F.col("run_no")) == "default", 1.6).otherwise(1.0)
    delay = (F.lit(40.0) + _u("run_no", "n", e, salt="delay") * 3000.0) * slow
    t = F.when(own, pub_t).otherwise(pub_t + delay + F.col("c") * 7.0)
    stuck = (F.col("run_no") % 20 == 10) & (F.col("n") == 12) & (e == 0) & (F.col("c") == 2)
    items = (spark.range(runs).withColumnRenamed("id", "run_no")
             .crossJoin(spark.range(NODES).withColumnRenamed("id", "n"))
             .crossJoin(spark.range(len(AUTHORS) * ENTRIES_PER_AUTHOR).withColumnRenamed("id", "e"))
             .crossJoin(spark.range(ITEMS).withColumnRenamed("id", "c"))
             .where(~stuck))
    return items.select(
        "run_no", (F.lit(per_run) + F.monotonically_increasing_id() % 1_000_000).alias("offset"),
        t.alias("t"), node.alias("node"), F.lit("store").alias("dir"),
        F.when(~own, F.lit("lora0")).alias("face"), F.lit(None).cast("binary").alias("p_frame"),
        F.when(F.col("c") == 0, "entry").otherwise("chunk").alias("kind"),
        F.unhex(F.sha2(F.concat_ws(":", F.lit("feed"), author), 256)).alias("feed"),
        (e % ENTRIES_PER_AUTHOR + 1).alias("seq"),
        F.when(F.col("c") > 0, F.col("c") - 1).alias("cnr"),
        F.lit(None).cast("string").alias("reason"), F.lit(None).cast("double").alias("rssi"),
        F.lit(None).cast("double").alias("snr"), F.lit(None).cast("double").alias("air"))


def generate(spark: SparkSession, out: Path, records: int, runs: int) -> Dataset:
    """Write the campaign as a dataset at ``out`` (manifest and records by run)."""
    stores_per_run = NODES * PAYLOAD
    per_run = records // runs - stores_per_run
    pool = _pool(spark, runs).cache()
    rows = _traffic(spark, runs, per_run, pool).unionByName(_stores(spark, runs, per_run))
    name = F.format_string("bench-%03d", F.col("run_no"))
    cols = {c: F.col(c) for c, _ in RECORD_COLUMNS}
    cols["file"] = F.concat(name, F.lit(".cbor"))
    cols["frame"] = F.col("p_frame")
    schema = {f.name: f.dataType for f in spark_schema().fields}
    table = rows.select(*[cols[c].cast(schema[c]).alias(c) for c, _ in RECORD_COLUMNS],
                        name.alias("run"))
    table.write.partitionBy("run").parquet(str(out / RECORDS))
    pool.unpersist()
    infos = []
    for r in range(runs):
        stuck = 1 if r % 20 == 10 else 0
        policy = "reference" if r % 2 == 0 else "default"
        run_id = f"bench-{r:03d}"
        infos.append(RunInfo(run_id, "simulator", "bench-grid", policy, r // 2 + 1,
                             [f"g{n}" for n in range(NODES)], DURATION,
                             [FileInfo(f"{run_id}.cbor", 0, 0, "simulator",
                                       per_run + stores_per_run - stuck)]))
    ds = Dataset(out, infos)
    ds.save()
    return ds


def check(spark_runs: list[dict[str, Any]], spark_kinds: list[dict[str, Any]],
          plain: list[RunMetrics]) -> list[str]:
    """Where Spark and the plain pass disagree (empty: they agree)."""
    by_run = {r["run"]: r for r in spark_runs}
    wrong = []

    def differ(a: Any, b: Any) -> bool:
        if a is None or b is None or isinstance(a, bool | int) and isinstance(b, bool | int):
            return bool(a != b)
        return not math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-6)

    for m in plain:
        s = by_run[m.run]
        for key in ("nodes", "entries", "converged", "held_pairs", "delivered",
                    "stalled_pairs", "tx_frames", "tx_bytes", "duplicates", "redundant",
                    "collisions", "convergence_t", "share", "tx_air"):
            if differ(s[key], getattr(m, key)):
                wrong.append(f"{m.run}: {key} spark {s[key]} plain {getattr(m, key)}")
    kinds = {(r["run"], r["node"], r["kind"]): r for r in spark_kinds}
    plain_kinds = {(m.run, node, kind): counts for m in plain
                   for (node, kind), counts in m.node_kind.items()}
    if kinds.keys() != plain_kinds.keys():
        wrong.append(f"node_kind rows: spark {len(kinds)} plain {len(plain_kinds)}")
    for where, counts in plain_kinds.items():
        row = kinds.get(where)
        if row is None:
            continue
        for f in fields(counts):
            if differ(row[f.name], getattr(counts, f.name)):
                wrong.append(f"{where}: {f.name} spark {row[f.name]} plain "
                             f"{getattr(counts, f.name)}")
    return wrong


def _jvm_cpu(spark: SparkSession) -> float | None:
    """CPU seconds the local Spark JVM has used so far (all its threads: tasks, JIT
    compilers, GC), from ``/proc``; None where that cannot be read."""
    try:
        pid = spark.sparkContext._gateway.proc.pid  # type: ignore[union-attr]
        fields_ = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields_[11]) + int(fields_[12])) / os.sysconf("SC_CLK_TCK")
    except (AttributeError, OSError, ValueError, IndexError):
        return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--keep", metavar="DIR", help="keep the dataset and report in DIR")
    ap.add_argument("--reuse", action="store_true",
                    help="with --keep: analyze the dataset generated there before, if any")
    ap.add_argument("--steps", action="store_true",
                    help="print the analysis steps with their start times")
    ap.add_argument("--tables-in-spark", action="store_true",
                    help="compute the tables after the passes in Spark (as campaigns of more "
                    "than 128 runs do, and as every campaign did before) instead of on the "
                    "driver")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting for the session, as tinyssb analyze --conf (repeatable)")
    args, _ = ap.parse_known_args()
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
        root = Path(args.keep) if args.keep else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        spark = build_session(args.master, [("spark.driver.memory", "4g"),
                                            *(parse_conf(c) for c in args.conf)],
                              app_name="bench-spark")
        print(f"Spark {spark.version} on {args.master}: session up in "
              f"{time.perf_counter() - started:.1f} s", flush=True)
        started = time.perf_counter()
        if args.reuse and is_dataset(root / "dataset"):
            ds = Dataset.load(root / "dataset")
            what = "reused"
        else:
            shutil.rmtree(root / "dataset", ignore_errors=True)
            ds = generate(spark, root / "dataset", args.records, args.runs)
            what = "generated"
        n = ds.records
        size = sum(p.stat().st_size for p in (root / "dataset").rglob("*.parquet"))
        print(f"{what} {n:,} records in {len(ds.runs)} runs ({size / 1e6:.0f} MB Parquet) in "
              f"{time.perf_counter() - started:.1f} s", flush=True)
        started = time.perf_counter()
        load = [os.getloadavg()[0]]
        cpu = (_jvm_cpu(spark), time.process_time())

        def step(message: str) -> None:
            if args.steps:
                print(f"  {time.perf_counter() - started:6.1f} s  {message}", flush=True)

        sc = spark.sparkContext
        sc.setJobGroup("bench-analysis", "the analysis")
        report = analyze(AnalyzeRequest([str(root / "dataset")], root / "report", args.master,
                                        show_progress=False,
                                        tables_on_driver=False if args.tables_in_spark else None),
                         step, spark)
        wall = time.perf_counter() - started
        load.append(os.getloadavg()[0])
        jvm_end = _jvm_cpu(spark)
        jvm_cpu = jvm_end - cpu[0] if jvm_end is not None and cpu[0] is not None else None
        py_cpu = time.process_time() - cpu[1]
        jobs = sc.statusTracker().getJobIdsForGroup("bench-analysis")
        stages = {s for j in jobs if (info := sc.statusTracker().getJobInfo(j)) is not None
                  for s in info.stageIds}
        print(f"Spark jobs of the analysis: {len(jobs)}, stages: {len(stages)} (skipped "
              "ones included)", flush=True)
        verdict = "within" if wall <= TARGET_S else "OVER"
        print(f"Spark analysis ({args.master}): {wall:.1f} s wall, {n / wall:,.0f} records/s "
              f"({verdict} the {TARGET_S:.0f} s target); report {report.index}", flush=True)
        spark_runs = report.summary["runs"]
        spark_kinds = pq.read_table(root / "report" / "tables" / "node_kind.parquet").to_pylist()
        spark.stop()
        started = time.perf_counter()
        plain_cpu = time.process_time()
        plain = baseline(ds)
        base = time.perf_counter() - started
        plain_cpu = time.process_time() - plain_cpu
        print(f"plain Python pass (1 process, same Parquet; run and node/kind metrics): "
              f"{base:.1f} s, "
              f"{n / base:,.0f} records/s; Spark is {base / wall:.2f}x its speed", flush=True)
        print("load average (1 min) at the start and end of the Spark analysis and of the "
              f"plain pass: {load[0]:.1f}, {load[1]:.1f}, {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} cores", flush=True)
        jvm_text = f"{jvm_cpu:.1f} s in the Spark JVM + " if jvm_cpu is not None else ""
        print(f"CPU time: Spark analysis {jvm_text}{py_cpu:.1f} s in Python; plain pass "
              f"{plain_cpu:.1f} s", flush=True)
        wrong = check(spark_runs, spark_kinds, plain)
        if wrong:
            print("DISAGREE:\n  " + "\n  ".join(wrong[:20]), flush=True)
            return 1
        converged = sum(1 for r in spark_runs if r["converged"])
        print(f"both agree on all {len(plain)} runs ({converged} converged, "
              f"{sum(r['stalled_pairs'] for r in spark_runs)} stalled pairs)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
