"""The tables computed on the driver (``spark.small``, campaigns of up to 128 runs) equal
the tables computed in Spark (``spark.metrics.compute``, larger campaigns)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from spark.analyze import AnalyzeRequest, analyze
from spark.small import spark_percentile

from .conftest import Campaign


def _rows(report: Path, table: str) -> list[dict[str, Any]]:
    rows = pq.read_table(report / "tables" / f"{table}.parquet").to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)


def test_tables_in_spark_equal_the_tables_on_the_driver(
        spark: SparkSession, campaign: Campaign, tmp_path: Path) -> None:
    assert campaign.rc == 0
    out = tmp_path / "in-spark"
    steps: list[str] = []
    report = analyze(AnalyzeRequest([str(campaign.out / "dataset")], out, "local[2]",
                                    show_progress=False, tables_on_driver=False),
                     steps.append, spark)
    assert any(s.startswith("table deliveries") for s in steps)  # the Spark path ran
    assert any("on the driver" in s for s in campaign.stderr.splitlines())
    for name in campaign.summary["tables"]:
        local = pq.read_schema(next((campaign.out / "tables" / f"{name}.parquet").glob("*.parquet")))
        assert [(f.name, f.type) for f in local] == \
            [(f.name, f.type) for f in pq.read_schema(next(
                (out / "tables" / f"{name}.parquet").glob("*.parquet")))], name
        in_spark, on_driver = _rows(out, name), _rows(campaign.out, name)
        assert len(in_spark) == len(on_driver), name
        for got, want in zip(in_spark, on_driver, strict=True):
            assert _same(got, want), (name, got, want)
    for key in ("runs", "groups", "stalls", "comparisons", "plots"):
        assert _same(report.summary[key], campaign.summary[key]), key


def test_percentile_as_spark_computes_it(spark: SparkSession) -> None:
    values = [3.5, None, 1.25, 10.0, 7.75, 2.0, 2.0, 9.125]
    df = spark.createDataFrame([(v,) for v in values], "x double")
    for p in (0.0, 0.1, 0.25, 0.5, 0.95, 1.0):
        want = df.selectExpr(f"percentile(x, {p}) AS q").first()["q"]  # type: ignore[index]
        assert spark_percentile(values, p) == want, p
    assert spark_percentile([None], 0.5) is None
