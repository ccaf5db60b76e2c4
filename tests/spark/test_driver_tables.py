"""The tables computed on the driver (``spark.small``, campaigns of up to 128 runs) equal
the tables computed in Spark (``spark.metrics.compute``, larger campaigns)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from spark.analyze import AnalyzeRequest, analyze
from spark.small import spark_percentile

from .compare import report_rows, same
from .conftest import Campaign


def _same(a: Any, b: Any) -> bool:
    return same(a, b, rel_tol=1e-12, strict_types=True)


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
        in_spark, on_driver = report_rows(out, name), report_rows(campaign.out, name)
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
