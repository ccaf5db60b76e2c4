"""The plain-Python pass of the benchmark agrees with Spark on the campaign."""

from __future__ import annotations

import pytest

from spark.baseline import baseline
from spark.dataset import Dataset

from .conftest import Campaign


def test_baseline_agrees_with_spark_on_every_run(campaign: Campaign) -> None:
    plain = baseline(Dataset.load(campaign.out / "dataset"))
    assert {m.run for m in plain} == {r["run"] for r in campaign.summary["runs"]}
    for m in plain:
        r = campaign.run(m.run)
        for key in ("nodes", "entries", "converged", "held_pairs", "delivered",
                    "stalled_pairs", "tx_frames", "tx_bytes", "duplicates", "redundant",
                    "collisions"):
            assert r[key] == getattr(m, key), (m.run, key)
        assert r["convergence_t"] == m.convergence_t, m.run
        assert r["share"] == pytest.approx(m.share)
        assert r["tx_air"] == pytest.approx(m.tx_air)


def test_baseline_traffic_by_node_and_kind_agrees_with_spark(campaign: Campaign) -> None:
    plain = baseline(Dataset.load(campaign.out / "dataset"))
    spark_rows = {(r["run"], r["node"], r["kind"]): r for r in campaign.table("node_kind")}
    plain_rows = {(m.run, node, kind): counts for m in plain
                  for (node, kind), counts in m.node_kind.items()}
    assert spark_rows.keys() == plain_rows.keys()
    for key, counts in plain_rows.items():
        for name in counts.__slots__:
            assert spark_rows[key][name] == pytest.approx(getattr(counts, name)), (key, name)
