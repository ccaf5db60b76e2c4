"""One SparkSession for the whole suite, and one analyzed campaign of small captures.

The campaign holds the hand-made runs of ``captures.py``, two short simulator runs of
line-5, a gateway directory, a torn capture and a corrupt one. It is analyzed once,
through ``tinyssb analyze`` itself, and the tests read what that wrote.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from firmware_sim.runner import run_scenario
from firmware_sim.scenario import load_scenario
from firmware_sim.summary import Summary
from gateway.cli import main
from spark.session import build_session

from . import captures

# Spark settings for a small, fast local session shared by every test
TEST_CONF = [("spark.sql.shuffle.partitions", "2"), ("spark.ui.enabled", "false"),
             ("spark.sql.adaptive.coalescePartitions.enabled", "true"),
             ("spark.driver.memory", "1g")]


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session("local[2]", TEST_CONF, app_name="tinyssb-tests")
    yield session
    session.stop()


@dataclass
class Campaign:
    root: Path  # the captures
    out: Path  # the report
    rc: int
    stdout: str
    stderr: str
    summary: dict[str, Any]
    torn: Path
    torn_at: int
    corrupt: Path
    corrupt_at: int
    sims: dict[str, Summary] = field(default_factory=dict)  # run id -> simulator summary

    def table(self, name: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = pq.read_table(
            self.out / "tables" / f"{name}.parquet").to_pylist()
        return rows

    def run(self, run_id: str) -> dict[str, Any]:
        return next(r for r in self.summary["runs"] if r["run"] == run_id)


@pytest.fixture(scope="session")
def campaign(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Campaign:
    root = tmp_path_factory.mktemp("campaign")
    captures.write_hand_ref(root / "hand-ref.cbor")
    captures.write_hand_def(root / "hand-def.cbor")
    captures.write_gateway_dir(root / "gw-site")
    captures.write_late_gateway_dir(root / "gw-late")
    torn, torn_at = captures.write_torn(root / "cut.cbor")
    corrupt, corrupt_at = captures.write_corrupt(root / "broken.cbor")
    sims = {}
    line5 = load_scenario("line-5")
    for name, seconds in (("line5-900s", 900.0), ("line5-200s", 200.0)):
        sims[name] = run_scenario(line5.with_(duration=seconds), root / f"{name}.cbor")
    out = root.parent / "report"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        rc = main(["analyze", str(root), "--out", str(out), "--master", "local[2]",
                   *[a for k, v in TEST_CONF for a in ("--conf", f"{k}={v}")]])
    summary = json.loads((out / "summary.json").read_text()) if rc == 0 else {}
    return Campaign(root, out, rc, stdout.getvalue(), stderr.getvalue(), summary, torn,
                    torn_at, corrupt, corrupt_at, sims)
