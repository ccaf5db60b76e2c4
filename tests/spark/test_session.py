"""Session options: ``--conf`` parsing, local core counts, the shared test session."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pyspark.sql import SparkSession

from spark.jvm_output import JvmOutput
from spark.session import _local_cores, build_session, parse_conf

from .conftest import TEST_CONF


def test_parse_conf_splits_at_the_first_equals_sign() -> None:
    assert parse_conf("spark.driver.memory=4g") == ("spark.driver.memory", "4g")
    assert parse_conf("a.b=x=y") == ("a.b", "x=y")
    for bad in ("novalue", "=x", ""):
        with pytest.raises(ValueError):
            parse_conf(bad)


def test_local_cores_follow_the_master() -> None:
    assert _local_cores("local") == 1
    assert _local_cores("local[3]") == 3
    assert _local_cores("local[*]") == (os.cpu_count() or 1)
    assert _local_cores("local[2,4]") == 2


def test_the_suite_shares_one_small_session(spark: SparkSession) -> None:
    assert spark.sparkContext.master == "local[2]"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    assert spark.conf.get("spark.ui.enabled") == "false"
    assert build_session("local[2]", TEST_CONF) is spark  # getOrCreate: the same session


def test_jvm_output_stays_off_the_terminal_but_the_stage_bar_and_the_reason_do_not(
        capfd: pytest.CaptureFixture[str]) -> None:
    jvm = JvmOutput()
    said = ("26/11/25 15:04:37 WARN NativeCodeLoader: Unable to load native-hadoop\n"
            "\r[Stage 0:>          (0 + 2) / 4]"
            "\rError: Master must either be yarn or start with spark, k8s, or local\n")
    with jvm.capture():  # what a child started here writes to its stderr
        child = subprocess.Popen([sys.executable, "-c", f"import sys; sys.stderr.write({said!r})"])
    child.wait()
    assert jvm._thread is not None
    jvm._thread.join(10)
    err = capfd.readouterr().err
    assert "WARN" not in err and "Master" not in err
    assert "[Stage 0:>          (0 + 2) / 4]" in err  # Spark's progress bar passes
    assert jvm.last_error() == "Master must either be yarn or start with spark, k8s, or local"
    assert jvm.lines[0].endswith("Unable to load native-hadoop")
