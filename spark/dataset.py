"""A converted campaign on disk: Parquet records partitioned by run, and its manifest.

::

    DATASET/
      manifest.json             what was converted: runs, files, problems
      records/run=<id>/*.parquet

The manifest says which runs the dataset holds (scenario, policy, seed, the nodes the
headers declare, the files each run came from) and which input files were cut short
or could not be read. :func:`load_records` gives Spark the records of one or more
datasets as one DataFrame.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["DATASET_FORMAT", "Dataset", "DatasetError", "FileInfo", "Problem", "RunInfo",
           "file_stamp", "is_dataset", "load_records", "runs_frame"]

DATASET_FORMAT = "tinyssb-dataset"
DATASET_VERSION = 1
MANIFEST = "manifest.json"
AIR_BOUND_KEY = "airtime_lower_bound_s"  # capture header key of the airtime lower bound
RECORDS = "records"
LISTING_THRESHOLD_KEY = "spark.sql.sources.parallelPartitionDiscovery.threshold"
LISTING_THRESHOLD = 1024  # run directories listed by the driver itself (Spark: 32)


class DatasetError(Exception):
    """A directory that is not a readable dataset, or datasets that do not combine."""


@dataclass(slots=True)
class FileInfo:
    """One capture file of a run, as it was when converted."""

    path: str
    size: int
    mtime_ns: int
    node: str  # the node named in the header
    records: int = 0  # records converted (header not counted)
    torn_at: int | None = None  # offset of a torn last record, left out


@dataclass(slots=True)
class Problem:
    """An input file that was cut short or could not be read."""

    file: str
    offset: int
    error: str
    action: str  # what the converter did about it

    def __str__(self) -> str:
        return f"{self.file}: {self.error} at byte {self.offset}; {self.action}"


@dataclass(slots=True)
class RunInfo:
    """One run: a simulator capture, or the gateway captures of one directory."""

    id: str
    source: str
    scenario: str
    policy: str
    seed: int | None
    nodes: list[str]  # nodes the headers declare; empty: the nodes seen in the records
    duration: float | None
    files: list[FileInfo] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)  # header keys of the first file

    @property
    def records(self) -> int:
        return sum(f.records for f in self.files)

    @property
    def air_bound(self) -> float | None:
        """The airtime lower bound of the run's scenario in seconds, when its header
        says (the simulator writes it, ``firmware_sim/bound.py``; gateways do not)."""
        value = self.meta.get(AIR_BOUND_KEY)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            return None
        return float(value)

    @classmethod
    def from_json(cls, m: dict[str, Any]) -> RunInfo:
        files = [FileInfo(**f) for f in m.get("files", [])]
        return cls(m["id"], m["source"], m["scenario"], m["policy"], m.get("seed"),
                   list(m.get("nodes", [])), m.get("duration"), files, m.get("meta", {}))


@dataclass(slots=True)
class Dataset:
    path: Path
    runs: list[RunInfo]
    problems: list[Problem] = field(default_factory=list)
    inputs: list[tuple[str, int, int]] = field(default_factory=list)  # (path, size, mtime_ns)
    # of every capture given to the converter, readable or not

    @property
    def records(self) -> int:
        return sum(r.records for r in self.runs)

    def to_json(self) -> dict[str, Any]:
        return {"format": DATASET_FORMAT, "version": DATASET_VERSION,
                "records": self.records, "runs": [asdict(r) for r in self.runs],
                "problems": [asdict(p) for p in self.problems],
                "inputs": [list(i) for i in self.inputs]}

    def save(self, directory: Path | None = None) -> None:
        """Write the manifest (into ``directory``, default the dataset's own path)."""
        target = (directory or self.path) / MANIFEST
        part = target.with_name(target.name + ".part")
        part.write_text(json.dumps(self.to_json(), indent=1) + "\n")
        os.replace(part, target)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Dataset:
        root = Path(path)
        try:
            m = json.loads((root / MANIFEST).read_text())
        except (OSError, ValueError) as exc:
            raise DatasetError(f"{root} is not a converted dataset ({exc})") from None
        if m.get("format") != DATASET_FORMAT or m.get("version") != DATASET_VERSION:
            raise DatasetError(f"{root}: manifest of format {m.get('format')!r} version "
                               f"{m.get('version')!r}; expected {DATASET_FORMAT} "
                               f"{DATASET_VERSION}")
        return cls(root, [RunInfo.from_json(r) for r in m.get("runs", [])],
                   [Problem(**p) for p in m.get("problems", [])],
                   [(str(p), int(s), int(t)) for p, s, t in m.get("inputs", [])])


def file_stamp(path: Path) -> tuple[str, int, int]:
    """(resolved path, size, mtime_ns): what tells whether a converted file changed."""
    st = path.stat()
    return str(path.resolve()), st.st_size, st.st_mtime_ns


def is_dataset(path: Path) -> bool:
    return (path / MANIFEST).is_file()


def load_records(spark: SparkSession, datasets: Sequence[Dataset]) -> DataFrame:
    """The records of every run of ``datasets`` as one DataFrame (column ``run`` added)."""
    from .schema import spark_schema

    seen: dict[str, Path] = {}
    for ds in datasets:
        for run in ds.runs:
            if run.id in seen:
                raise DatasetError(f"run {run.id!r} is in both {seen[run.id]} and {ds.path}; "
                                   "convert them together or rename one")
            seen[run.id] = ds.path
    # a dataset has one directory per run: Spark lists more than 32 directories with a
    # Spark job of its own (seconds on a cold JVM); a campaign's few hundred run
    # directories are listed faster here, on the driver
    conf = spark.sparkContext.getConf()
    if not conf.contains(LISTING_THRESHOLD_KEY):
        spark.conf.set(LISTING_THRESHOLD_KEY, str(LISTING_THRESHOLD))
    frames = [spark.read.schema(spark_schema()).parquet(str(ds.path / RECORDS))
              for ds in datasets if ds.runs]
    if not frames:
        return spark.createDataFrame([], spark_schema())
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


def runs_frame(spark: SparkSession, datasets: Sequence[Dataset]) -> DataFrame:
    """One row per run: run, source, scenario, policy, seed, declared nodes, duration,
    files, airtime lower bound."""
    from pyspark.sql import types as T

    schema = T.StructType([
        T.StructField("run", T.StringType(), False),
        T.StructField("source", T.StringType()),
        T.StructField("scenario", T.StringType()),
        T.StructField("policy", T.StringType()),
        T.StructField("seed", T.LongType()),
        T.StructField("declared_nodes", T.ArrayType(T.StringType())),
        T.StructField("duration", T.DoubleType()),
        T.StructField("files", T.LongType()),
        T.StructField("air_bound", T.DoubleType()),
    ])
    rows = [(r.id, r.source, r.scenario, r.policy, r.seed, r.nodes,
             float(r.duration) if r.duration is not None else None, len(r.files),
             r.air_bound)
            for ds in datasets for r in ds.runs]
    return spark.createDataFrame(rows, schema)
