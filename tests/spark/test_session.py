"""Session options: ``--conf`` parsing, local core counts, the shared test session."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
from pyspark.sql import SparkSession

from spark.jvm_output import JvmOutput
from spark.session import (
    _local_cores,
    _quiet_interrupts,
    build_session,
    parse_conf,
    session_defaults,
)

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
    assert spark.conf.get("spark.sql.files.minPartitionNum") == "8"  # 4 per local core
    assert spark.conf.get("spark.ui.enabled") == "false"
    assert build_session("local[2]", TEST_CONF) is spark  # getOrCreate: the same session


def test_a_local_driver_runs_the_throughput_collector(spark: SparkSession) -> None:
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory  # type: ignore[union-attr]
    names = {b.getName() for b in beans.getGarbageCollectorMXBeans()}
    assert names == {"PS Scavenge", "PS MarkSweep"}


def test_a_collector_the_user_names_replaces_the_default_one() -> None:
    def java_options(given: dict[str, str], master: str = "local[2]") -> str | None:
        return dict(session_defaults(master, given)).get("spark.driver.defaultJavaOptions")

    assert java_options({}) == "-XX:+UseParallelGC"
    assert java_options({"spark.driver.extraJavaOptions": "-Dx=1"}) == "-XX:+UseParallelGC"
    # two collectors and the JVM would not start
    assert java_options({"spark.driver.extraJavaOptions": "-Dx=1 -XX:+UseG1GC"}) is None
    assert java_options({"spark.driver.defaultJavaOptions": "-Xss4m"}) is None  # given: kept
    assert java_options({}, "spark://127.0.0.1:7077") is None  # a cluster's drivers decide


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


class _Seen(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_py4j_errors_of_an_interrupted_call_stay_off_the_terminal() -> None:
    # Ctrl-C during analyze broke py4j's connection: py4j logs an ERROR with a traceback
    # on its own logger ("Exception occurred while shutting down connection") and on
    # root; neither may reach a handler (the terminal), ours only at debug level
    _quiet_interrupts()
    seen = _Seen()
    root = logging.getLogger()
    root.addHandler(seen)
    ours = logging.getLogger("spark.session")
    level = ours.level
    ours.setLevel(logging.DEBUG)
    try:
        try:
            raise BrokenPipeError(32, "Broken pipe")
        except BrokenPipeError:
            logging.getLogger("py4j.clientserver").exception(
                "Exception occurred while shutting down connection")
            logging.getLogger("py4j.java_gateway").warning("closing down")
        logging.getLogger("tinyssb").warning("our own warning")
    finally:
        root.removeHandler(seen)
        ours.setLevel(level)
    shown = [(r.name, r.levelno) for r in seen.records if r.levelno >= logging.INFO]
    assert shown == [("tinyssb", logging.WARNING)]
    assert any(r.name == "spark.session" and "shutting down connection" in r.getMessage()
               for r in seen.records)
