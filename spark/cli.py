"""``tinyssb analyze`` and ``tinyssb capture convert``.

``gateway/cli.py`` calls :func:`add_spark_commands` with its subparsers object::

    tinyssb analyze INPUT... --out DIR [--master URL] [--conf KEY=VALUE]... [--reconvert]
                    [--json]
    tinyssb capture convert CAPTURE... --out DATASET [--json]

INPUT is a capture file, a directory of captures (searched for ``*.cbor``) or a dataset
written by ``capture convert``. Nothing Spark-related is imported until a command
runs, so the rest of ``tinyssb`` works without pyspark.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from gateway.cli_capture import add_capture_pcap
from gateway.errors import UserError

__all__ = ["add_spark_commands", "spark_errors"]

Command = Callable[[argparse.Namespace], int]

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it


def _user_error(message: str) -> Exception:
    return UserError(message)


def _conf(text: str) -> tuple[str, str]:
    from .session import parse_conf

    try:
        return parse_conf(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _step(message: str) -> None:
    print(f"analyze: {message}", file=sys.stderr, flush=True)


def _java_missing() -> bool:
    home = os.environ.get("JAVA_HOME")
    return shutil.which("java") is None and not (home and Path(home, "bin", "java").exists())


def spark_errors(func: Command) -> Command:
    """Turn what the user can fix (input, output, no pyspark, no Java) into one line,
    and Ctrl-C into Spark stopped, nothing half-written left and exit code 130."""
    def run(args: argparse.Namespace) -> int:
        from .analyze import InputError
        from .dataset import DatasetError

        try:
            return func(args)
        except KeyboardInterrupt:  # Spark stopped and partial output removed by analyze()
            what = "analysis" if getattr(args, "command", None) == "analyze" else "conversion"
            print(f"tinyssb: interrupted; {what} stopped, nothing written", file=sys.stderr)
            return EXIT_INTERRUPTED
        except (InputError, DatasetError) as exc:
            raise _user_error(str(exc)) from None
        except ModuleNotFoundError as exc:
            if exc.name in ("pyspark", "pyarrow", "matplotlib", "py4j"):
                raise _user_error(f"{exc.name} is not installed; install the analysis extra: "
                                  "pip install -e '.[spark]'") from None
            raise
        except RuntimeError as exc:  # pyspark's PySparkRuntimeError when the JVM fails
            from .session import SparkStartError

            if isinstance(exc, SparkStartError) or "JAVA_GATEWAY_EXITED" in str(exc):
                if _java_missing():
                    raise _user_error("Spark did not start: it needs Java 17 or newer, and "
                                      "there is no `java` on PATH nor JAVA_HOME") from None
                reason = getattr(exc, "reason", None)
                raise _user_error("Spark did not start: " + (
                    reason or "its JVM exited (check `java -version` is 17 or newer, "
                    "and JAVA_HOME); run with -vv to see its output")) from None
            raise
    return run


def cmd_analyze(args: argparse.Namespace) -> int:
    from .analyze import AnalyzeRequest, InputError, analyze
    from .session import check_master

    try:
        check_master(args.master)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    request = AnalyzeRequest(args.inputs, Path(args.out), args.master, args.conf or [],
                             show_progress=not args.quiet, reconvert=args.reconvert)
    report = analyze(request, (lambda m: None) if args.quiet else _step)
    if args.json:  # what summary.json holds, and where the report is
        summary = json.loads((report.out / "summary.json").read_text())
        print(json.dumps({"out": str(report.out), "index": str(report.index),
                          "summary": summary}, indent=1))
    else:
        print(report.text)
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from .analyze import InputError, find_inputs
    from .convert import convert

    captures, datasets = find_inputs(args.inputs)
    if datasets:
        raise InputError(f"{datasets[0]} is converted already; give capture files")
    ds = convert(captures, Path(args.out), show_progress=not args.quiet, sources=args.inputs)
    for problem in ds.problems:
        print(f"problem: {problem}", file=sys.stderr)
    if args.json:
        print(json.dumps({"dataset": str(ds.path), "records": ds.records,
                          "runs": [{**asdict(run), "records": run.records} for run in ds.runs],
                          "problems": [{**asdict(p), "text": str(p)} for p in ds.problems]},
                         indent=1))
        return 0
    print(f"{ds.records:,} records of {len(ds.runs)} run{'s' if len(ds.runs) != 1 else ''} "
          f"in {ds.path}")
    for run in ds.runs:
        print(f"  {run.id}: {run.scenario}, policy {run.policy}, {len(run.files)} file"
              f"{'s' if len(run.files) != 1 else ''}, {run.records:,} records")
    return 0


def add_spark_commands(sub: Any) -> None:
    """Add ``analyze`` and ``capture convert`` to the ``tinyssb`` subparsers ``sub``."""
    text = "analyze captures in Spark: convergence, latency, airtime, duplicates, stalls"
    p = sub.add_parser(
        "analyze", help=text,
        description=text + ". Writes Parquet tables, summary.json, PNG plots and index.html "
                    "into --out and prints a summary. See docs/spark.md.")
    p.set_defaults(func=spark_errors(cmd_analyze))
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="capture file, directory of *.cbor captures, or dataset from "
                        "`tinyssb capture convert`")
    p.add_argument("--out", "-o", required=True, metavar="DIR",
                   help="report directory (CBOR inputs are converted into DIR/dataset)")
    p.add_argument("--master", default="local[*]", metavar="URL",
                   help="Spark master (default local[*]; e.g. spark://host:7077, yarn)")
    p.add_argument("--conf", action="append", type=_conf, metavar="KEY=VALUE",
                   help="Spark configuration, repeatable (e.g. spark.driver.memory=4g)")
    p.add_argument("--reconvert", action="store_true",
                   help="convert CBOR inputs again even if DIR/dataset is current")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress output, only the summary")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document (what summary.json holds, and where the "
                        "report is) instead of the summary table")

    text = "work with capture files"
    cp = sub.add_parser("capture", help=text, description=text)
    csub = cp.add_subparsers(dest="capture_command", required=True, metavar="SUBCOMMAND")
    text = "convert CBOR captures into a Parquet dataset (partitioned by run) for analysis"
    c = csub.add_parser(
        "convert", help=text,
        description=text + ". A simulator capture is one run; gateway captures in one "
                    "directory form one run. Unreadable files are reported and left out.")
    c.set_defaults(func=spark_errors(cmd_convert))
    c.add_argument("inputs", nargs="+", metavar="CAPTURE",
                   help="capture file or directory of *.cbor captures")
    c.add_argument("--out", "-o", required=True, metavar="DATASET",
                   help="dataset directory to write (replaced if it is a dataset)")
    c.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    c.add_argument("--json", action="store_true",
                   help="print one JSON document: the dataset, its runs and problems")
    add_capture_pcap(csub)
