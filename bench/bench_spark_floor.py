#!/usr/bin/env python3
"""How fast a fresh Spark JVM can go at all on the benchmark campaign, against the plain pass.

Usage: ``python3 bench/bench_spark_floor.py [DIR] [--master M]``, where ``DIR`` holds a
campaign kept by ``bench/bench_spark.py --keep DIR``; without it (as in ``make bench``) a
campaign of 10 million records is generated first, by a process and JVM of its own.

On a new session (its start not timed, as in ``bench_spark.py``):

1. reading the records and one aggregation over every column the plain pass reads (group
   by run, node, kind and direction; counts and sums), three times: the first on the
   fresh JVM, then warm;
2. the whole analysis (``tinyssb analyze``) twice on that JVM, the second time warm;
3. the plain single-process pass (``spark.baseline``).

The first line is the least any Spark job over these records costs on a fresh JVM,
whatever the analysis does after the scan: compare it with the plain pass's time over
1.5. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark.sql import functions as F

from spark.analyze import AnalyzeRequest, analyze
from spark.baseline import COLUMNS, baseline
from spark.dataset import RECORDS, Dataset, is_dataset
from spark.session import build_session

TARGET_RATIO = 1.5


def _generate(out: Path) -> None:
    """The benchmark's campaign, written into ``out / "dataset"`` (run in a child process:
    generating it warms a JVM)."""
    from bench_spark import generate

    spark = build_session("local[2]", [("spark.driver.memory", "4g")],
                          app_name="bench-spark-floor-generate")
    generate(spark, out / "dataset", 10_000_000, 40)
    spark.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?",
                    help="a directory written by bench/bench_spark.py --keep DIR")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--generate-into", metavar="DIR", help=argparse.SUPPRESS)
    args, _ = ap.parse_known_args()  # make bench passes every script the same arguments
    if args.generate_into:
        _generate(Path(args.generate_into))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-spark-floor-data-") as tmp:
        if args.dir is None:
            print("generating a campaign of 10M records (a process of its own) ...", flush=True)
            subprocess.run([sys.executable, __file__, "--generate-into", tmp], check=True)
        return measure(Path(args.dir or tmp) / "dataset", args)


def measure(root: Path, args: argparse.Namespace) -> int:
    if not is_dataset(root):
        print(f"no campaign in {root}; make one with: python3 bench/bench_spark.py --keep "
              f"{root.parent}", file=sys.stderr)
        return 2
    ds = Dataset.load(root)
    spark = build_session(args.master, [("spark.driver.memory", "4g")],
                          app_name="bench-spark-floor")
    times = []
    for _ in range(3):  # a new DataFrame each time: a second collect() of one would reuse
        started = time.perf_counter()  # its shuffle files
        records = spark.read.parquet(str(root / RECORDS)).select("run", *COLUMNS)
        groups = len(records.groupBy("run", "node", "kind", "dir")
                     .agg(F.count("*"), F.sum(F.length("frame")), F.sum("air"), F.max("t"),
                          F.count("feed"), F.sum("seq"), F.sum("cnr"), F.count("reason"),
                          F.count("face"))
                     .collect())
        times.append(time.perf_counter() - started)
    print(f"one aggregation over the {len(COLUMNS)} columns of {ds.records:,} records "
          f"({groups:,} groups), {args.master}: {times[0]:.1f} s on the fresh JVM, then "
          f"{times[1]:.1f} s and {times[2]:.1f} s", flush=True)
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-spark-floor-") as tmp:
        for _ in range(2):
            started = time.perf_counter()
            analyze(AnalyzeRequest([str(root)], Path(tmp) / "report", args.master,
                                   show_progress=False), lambda _: None, spark)
            runs.append(time.perf_counter() - started)
            shutil.rmtree(Path(tmp) / "report")
    spark.stop()
    warm = runs[-1]
    started = time.perf_counter()
    baseline(ds)
    plain = time.perf_counter() - started
    print(f"the whole analysis next, twice: {runs[0]:.1f} s, then {warm:.1f} s on the warm JVM "
          f"({plain / warm:.2f}x the plain pass)", flush=True)
    print(f"plain Python pass: {plain:.1f} s; {TARGET_RATIO}x its speed means the analysis "
          f"within {plain / TARGET_RATIO:.1f} s, and the fresh JVM's one aggregation alone "
          f"took {times[0] / (plain / TARGET_RATIO):.0%} of that", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
