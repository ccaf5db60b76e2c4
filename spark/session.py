"""The SparkSession of a job: master and configuration from the command line.

``tinyssb analyze`` defaults to ``local[*]``; ``--master`` and repeated ``--conf k=v``
pass through, so the same job runs on a cluster. Under ``spark-submit`` the master and
configuration come from spark-submit's own options (``master=None``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import sys
import threading
from collections.abc import Sequence

from pyspark import SparkContext
from pyspark.sql import SparkSession

from .jvm_output import JvmOutput

__all__ = ["DEFAULT_MASTER", "SparkStartError", "build_session", "check_master", "parse_conf",
           "session_defaults", "stop_quietly"]

log = logging.getLogger(__name__)

DEFAULT_MASTER = "local[*]"

# the driver JVM's options for a local master, unless ``spark.driver.defaultJavaOptions``
# is given
LOCAL_JAVA_OPTIONS = "-XX:+UseParallelGC"
_GC_OPTION = re.compile(r"-XX:\+Use\w+GC\b")

# what a local analysis wants unless told otherwise; ``--conf`` overrides each
DEFAULTS: tuple[tuple[str, str], ...] = (
    ("spark.sql.session.timeZone", "UTC"),
    ("spark.sql.adaptive.enabled", "true"),
    ("spark.sql.sources.partitionColumnTypeInference.enabled", "false"),
    ("spark.driver.memory", "2g"),
)


# the master URLs Spark accepts (spark-submit refuses anything else)
MASTER_FORMS = "local, local[N], local[*], spark://HOST:PORT, yarn or k8s://https://HOST:PORT"
_MASTER = re.compile(r"local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?|local-cluster\[\d+,\d+,\d+\]"
                     r"|spark://[^\s/,]+(,[^\s/,]+)*|yarn|k8s://\S+")


class SparkStartError(Exception):
    """The Spark JVM exited while starting; ``reason`` is its last error line, if any."""

    def __init__(self, reason: str | None) -> None:
        super().__init__(reason or "the Spark JVM exited while starting")
        self.reason = reason


STOP_TIMEOUT = 60.0  # seconds to wait for Spark to cancel its jobs and stop


class _Py4jNoise(logging.Filter):
    """py4j reports a call cut short by Ctrl-C on the *root* logger, and a connection
    the interrupt broke on its own loggers (``py4j.clientserver``: "Exception occurred
    while shutting down connection"), each with a traceback; that is expected when the
    user interrupts, so it goes to debug level only."""

    def filter(self, record: logging.LogRecord) -> bool:
        own = record.name.startswith("py4j") and record.levelno >= logging.WARNING
        if own or (record.name == "root" and "py4j" in record.pathname.replace("\\", "/")):
            log.debug("py4j: %s", record.getMessage())
            return False
        return True


# a logger's filters see only the records logged to it by name (not those propagated
# from its children), so the filter sits on root and on each py4j logger that reports
_PY4J_LOGGERS = ("", "py4j", "py4j.clientserver", "py4j.java_gateway")


def _quiet_interrupts() -> None:
    """Ctrl-C raises KeyboardInterrupt and nothing else: PySpark's own SIGINT handler
    calls into the JVM from inside the interrupted call (a reentrant py4j call that
    fails with pages of errors); :func:`stop_quietly` cancels the jobs afterwards."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for name in _PY4J_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _Py4jNoise) for f in logger.filters):
            logger.addFilter(_Py4jNoise())


def stop_quietly() -> None:
    """Cancel the running jobs and stop Spark, if it runs, without a word from it or
    from py4j. Runs on a thread of its own: the interrupted thread's py4j connection
    is gone."""
    sc = SparkContext._active_spark_context
    if sc is None:
        return

    def stop() -> None:
        with contextlib.suppress(Exception):
            sc.setLogLevel("OFF")
        with contextlib.suppress(Exception):
            sc.cancelAllJobs()
        with contextlib.suppress(Exception):
            sc.stop()

    worker = threading.Thread(target=stop, name="spark-stop", daemon=True)
    worker.start()
    worker.join(STOP_TIMEOUT)


def check_master(master: str) -> None:
    """ValueError naming ``master`` unless Spark accepts it as a master URL."""
    if not _MASTER.fullmatch(master):
        raise ValueError(f"bad Spark master URL {master!r}: use {MASTER_FORMS}")


def parse_conf(text: str) -> tuple[str, str]:
    """``key=value`` as given to ``--conf``; ValueError without ``=`` or key."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def _local_cores(master: str | None) -> int:
    """Threads of a ``local[N]`` master (``local``: 1, ``local[*]``: every core)."""
    text = master or DEFAULT_MASTER
    inner = text[text.find("[") + 1:text.find("]")] if "[" in text else "1"
    first = inner.split(",")[0].strip()
    return max(1, os.cpu_count() or 1) if first == "*" or not first.isdigit() else int(first)


def _under_spark_submit() -> bool:
    # spark-submit starts the Python driver with the port of the JVM it already runs
    return "PYSPARK_GATEWAY_PORT" in os.environ


def session_defaults(master: str | None, given: dict[str, str]) -> list[tuple[str, str]]:
    """The settings :func:`build_session` adds for ``master`` to the ``given`` ones
    (outside spark-submit): those not given already."""
    defaults = [*DEFAULTS, ("spark.ui.showConsoleProgress", str(sys.stderr.isatty()).lower())]
    if (master or DEFAULT_MASTER).startswith("local"):
        # a few shuffle partitions per core: 200 tiny ones cost more than they split
        defaults.append(("spark.sql.shuffle.partitions", str(2 * _local_cores(master))))
        # the records split into at least four tasks per core (Spark's default, one
        # per core, packs whole run files into a few uneven tasks: on two cores the
        # last big one ran alone for seconds); a split stays at most 128 MB
        defaults.append(("spark.sql.files.minPartitionNum", str(4 * _local_cores(master))))
        # the throughput collector: G1's concurrent work competes with the two task
        # threads and the JIT compilers on a small machine (10M-record bench on two
        # cores, in turn: 16.3 and 16.5 s against 17.0 and 17.5 s, 7 % less JVM CPU);
        # ``spark.driver.extraJavaOptions`` still adds to it; a collector chosen there
        # replaces it (the JVM refuses to start with two)
        if not _GC_OPTION.search(given.get("spark.driver.extraJavaOptions", "")):
            defaults.append(("spark.driver.defaultJavaOptions", LOCAL_JAVA_OPTIONS))
    return [(key, value) for key, value in defaults if key not in given]


def build_session(master: str | None = None, conf: Sequence[tuple[str, str]] = (),
                  app_name: str = "tinyssb-analyze", log_level: str = "WARN") -> SparkSession:
    """A session for ``master`` (None: spark-submit's, or ``local[*]`` outside it)."""
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    elif not _under_spark_submit():
        builder = builder.master(DEFAULT_MASTER)
    given = dict(conf)
    if not _under_spark_submit():
        for key, value in session_defaults(master, given):
            builder = builder.config(key, value)
    for key, value in conf:
        builder = builder.config(key, value)
    jvm = JvmOutput()
    starting = SparkContext._active_spark_context is None and not _under_spark_submit()
    try:
        with jvm.capture() if starting else contextlib.nullcontext():
            spark = builder.getOrCreate()
    except Exception as exc:
        if "JAVA_GATEWAY_EXITED" in str(exc):
            raise SparkStartError(jvm.last_error()) from None
        raise
    _quiet_interrupts()
    spark.sparkContext.setLogLevel(log_level)
    log.info("Spark %s, master %s", spark.version, spark.sparkContext.master)
    return spark
