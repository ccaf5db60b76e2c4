"""The analysis job from end to end: find inputs, convert, compute, report.

Used by ``tinyssb analyze``, by ``spark-submit spark/job.py`` and by ``make run``.
CBOR captures among the inputs are converted into ``OUT/dataset`` first (and not again
while the same files, unchanged, are given); converted datasets are read as they are.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .dataset import Dataset, DatasetError, file_stamp, is_dataset

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .metrics import Tables
    from .report import Report
    from .small import SmallTables

__all__ = ["AnalyzeRequest", "InputError", "analyze", "find_inputs", "prepare_datasets"]

log = logging.getLogger(__name__)

Step = Callable[[str], None]

# up to this many runs, the tables built after the passes over the records (per run,
# node and entry: small) are computed on the driver from the passes' aggregates (in
# Spark, kept in one partition, when told to)
ONE_PARTITION_RUNS = 128


class InputError(Exception):
    """A mistake in what the user asked for: a missing file, an unwritable directory."""


@dataclass(slots=True)
class AnalyzeRequest:
    inputs: list[str]
    out: Path
    master: str | None = "local[*]"  # None: as spark-submit says
    conf: list[tuple[str, str]] = field(default_factory=list)
    show_progress: bool = True
    reconvert: bool = False  # convert CBOR inputs even when OUT/dataset is current
    # compute the tables after the passes on the driver (None: when there are at most
    # ONE_PARTITION_RUNS runs) or in Spark
    tables_on_driver: bool | None = None


def find_inputs(paths: Sequence[str]) -> tuple[list[Path], list[Path]]:
    """Capture files and dataset directories among ``paths`` (directories searched)."""
    captures: dict[Path, None] = {}
    datasets: dict[Path, None] = {}
    for text in paths:
        path = Path(text)
        if not path.exists():
            raise InputError(f"no such file or directory: {text}")
        if path.is_dir():
            if is_dataset(path):
                datasets[path.resolve()] = None
                continue
            found = sorted(p for pattern in ("*.cbor", "*.cbor.zst")
                           for p in path.rglob(pattern) if p.is_file())
            if not found:
                raise InputError(f"{text}: no *.cbor capture files and no converted dataset in it")
            captures.update((p.resolve(), None) for p in found)
        elif path.name == "manifest.json" and is_dataset(path.parent):
            datasets[path.parent.resolve()] = None
        else:
            captures[path.resolve()] = None
    return list(captures), list(datasets)


def _writable_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create output directory {path}: {exc.strerror}") from None
    if not path.is_dir():
        raise InputError(f"output {path} is not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"output directory {path} is not writable")


def prepare_datasets(request: AnalyzeRequest, step: Step) -> list[Dataset]:
    """The datasets to analyze; CBOR inputs converted into ``OUT/dataset`` when needed."""
    from .convert import convert

    captures, given = find_inputs(request.inputs)
    _writable_dir(request.out)
    datasets = [Dataset.load(p) for p in given]
    if captures:
        target = request.out / "dataset"
        stamps = sorted(file_stamp(p) for p in captures)
        current = None
        if is_dataset(target) and not request.reconvert:
            try:
                current = Dataset.load(target)
            except DatasetError:
                current = None
        if current is not None and sorted(current.inputs) == stamps:
            step(f"captures unchanged since the last conversion: reading {target}")
            datasets.append(current)
        else:
            step(f"converting {len(captures)} capture file{'s' if len(captures) > 1 else ''} "
                 f"to Parquet in {target}")
            started = time.monotonic()
            ds = convert(captures, target, show_progress=request.show_progress,
                         sources=request.inputs)
            step(f"converted {ds.records:,} records of {len(ds.runs)} "
                 f"run{'s' if len(ds.runs) != 1 else ''} in "
                 f"{time.monotonic() - started:.1f} s")
            datasets.append(ds)
    for ds in datasets:
        for problem in ds.problems:
            step(f"input problem: {problem}")
    if not any(ds.runs for ds in datasets):
        raise InputError("nothing to analyze: no run in the inputs")
    return datasets


def analyze(request: AnalyzeRequest, step: Step,
            spark: SparkSession | None = None) -> Report:
    """Convert what needs converting, compute every table, write the report.

    On any failure, Ctrl-C included, an output directory this call created is removed
    again (with the dataset converted into it): nothing half-written is left. Ctrl-C
    also stops Spark (its jobs are cancelled already by PySpark's SIGINT handler).
    """
    created = not request.out.exists()
    try:
        return _analyze(request, step, spark)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            from .session import stop_quietly

            stop_quietly()  # first: no task may write into the output after this
        if created:
            shutil.rmtree(request.out, ignore_errors=True)
        else:
            for staging in request.out.glob(f".staging-{os.getpid()}"):
                shutil.rmtree(staging, ignore_errors=True)
        raise


def _analyze(request: AnalyzeRequest, step: Step, spark: SparkSession | None) -> Report:
    datasets = prepare_datasets(request, step)
    if spark is None:
        from .session import build_session

        step(f"starting Spark ({request.master or 'as spark-submit says'})")
        spark = build_session(request.master, request.conf)
    from .dataset import load_records, runs_frame
    from .metrics import compute, compute_on_driver
    from .plots import preload
    from .report import write_report

    started = time.monotonic()
    runs = sum(len(ds.runs) for ds in datasets)
    step(f"analyzing {runs} run{'s' if runs != 1 else ''}, "
         f"{sum(ds.records for ds in datasets):,} records")
    on_driver = request.tables_on_driver
    if on_driver is None:
        on_driver = runs <= ONE_PARTITION_RUNS
    preload()  # matplotlib, for the plots, while Spark works
    records = load_records(spark, datasets)
    tables: Tables | SmallTables
    if on_driver:
        tables = compute_on_driver(records, [r for ds in datasets for r in ds.runs], step)
    else:
        tables = compute(records, runs_frame(spark, datasets), step,
                         one_partition=runs <= ONE_PARTITION_RUNS)
    report = write_report(spark, tables, datasets, request.out, step)
    step(f"report written in {time.monotonic() - started:.1f} s")
    return report
