"""CBOR captures to a Parquet dataset, once; the analysis reads Parquet thereafter.

Which files make a run:

- a capture whose header says ``source = simulator`` is a run of its own (one
  simulation writes one capture with every node in it);
- every other capture (a gateway's) belongs to the run of its directory: the gateways of
  one deployment each write a file into the same directory.

A run is named after its capture file (``grid-25-default-seed11``) or its directory,
with characters other than letters, digits, ``.``, ``_`` and ``-`` replaced by ``_``;
clashes get ``-2``, ``-3``, ... in input order.

Files are streamed record by record and written in row groups, so memory does not grow
with a capture. A file cut short keeps the records before its torn last record; a file
with an unreadable record is left out; either is reported with its name and the byte
offset. The dataset is built in a temporary directory next to ``out`` and renamed into
place when complete.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .dataset import (
    RECORDS,
    Dataset,
    DatasetError,
    FileInfo,
    Problem,
    RunInfo,
    file_stamp,
    is_dataset,
)
from .schema import RECORD_COLUMNS, arrow_schema
from .stream import BadCapture, OffsetReader, read_header

__all__ = ["Header", "convert", "plan_runs", "read_headers", "run_name"]

log = logging.getLogger(__name__)

BATCH = 65_536  # records per Parquet row group


@dataclass(slots=True)
class Header:
    path: Path
    size: int
    mtime_ns: int
    node: str
    meta: dict[str, Any]

    @property
    def source(self) -> str:
        return str(self.meta.get("source", "unknown"))


def run_name(text: str) -> str:
    """``text`` made safe as a partition directory name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "run"


def read_headers(files: Sequence[Path]) -> tuple[list[Header], list[Problem]]:
    """The header of each file; files without a readable header become problems."""
    headers: list[Header] = []
    problems: list[Problem] = []
    for path in files:
        try:
            st = path.stat()
            reader = read_header(path)
        except BadCapture as exc:
            problems.append(Problem(str(path), exc.offset, exc.reason, "file left out"))
            continue
        except OSError as exc:
            problems.append(Problem(str(path), 0, exc.strerror or str(exc), "file left out"))
            continue
        headers.append(Header(path, st.st_size, st.st_mtime_ns, reader.node, reader.meta))
    return headers, problems


def _agreed(values: list[Any], default: Any, mixed: Any) -> Any:
    present = [v for v in values if v is not None]
    if not present:
        return default
    return present[0] if all(v == present[0] for v in present) else mixed


def plan_runs(headers: Sequence[Header]) -> list[RunInfo]:
    """Group capture files into runs (see the module docstring) and name the runs."""
    groups: dict[tuple[str, str], list[Header]] = {}
    for h in headers:
        key = ("file", str(h.path)) if h.source == "simulator" else ("dir", str(h.path.parent))
        groups.setdefault(key, []).append(h)
    runs: list[RunInfo] = []
    taken: set[str] = set()
    for (kind, _), members in groups.items():
        first = members[0]
        stem = first.path.name.removesuffix(".zst").removesuffix(".cbor")  # x.cbor.zst: x
        base = run_name(stem if kind == "file" else first.path.parent.name)
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name)
        metas = [m.meta for m in members]
        seed = _agreed([m.get("seed") for m in metas], None, None)
        duration = _agreed([m.get("duration") for m in metas], None, None)
        nodes: dict[str, None] = {}
        for m in metas:
            for node in m.get("nodes") or []:
                nodes[str(node)] = None
        runs.append(RunInfo(
            id=name,
            source=_agreed([m.get("source") for m in metas], "unknown", "mixed"),
            scenario=str(_agreed([m.get("scenario") for m in metas],
                                 "simulation" if first.source == "simulator" else "field",
                                 "mixed")),
            policy=str(_agreed([m.get("policy") for m in metas], "unknown", "mixed")),
            seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
            nodes=list(nodes),
            duration=float(duration) if isinstance(duration, int | float) else None,
            files=[FileInfo(str(m.path), m.size, m.mtime_ns, m.node) for m in members],
            meta=dict(first.meta)))
    return runs


class _Columns:
    """Record fields gathered column by column until a row group is full."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.reset()

    def reset(self) -> None:
        self.cols: dict[str, list[Any]] = {name: [] for name, _ in RECORD_COLUMNS}

    def __len__(self) -> int:
        return len(self.cols["t"])

    def add(self, offset: int, r: Any) -> None:
        c = self.cols
        c["file"].append(self.file)
        c["offset"].append(offset)
        c["t"].append(r.t)
        c["node"].append(r.node)
        c["dir"].append(r.dir.value)
        c["face"].append(r.face)
        c["frame"].append(r.frame)
        c["kind"].append(r.kind)
        c["feed"].append(r.feed)
        c["seq"].append(r.seq)
        c["cnr"].append(r.cnr)
        c["reason"].append(r.reason)
        c["rssi"].append(r.rssi)
        c["snr"].append(r.snr)
        c["air"].append(r.air)


def _write_file(info: FileInfo, target: Path, bar: Any) -> None:
    """Stream one capture into ``target`` (a Parquet file); fills in ``info``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema()
    part = target.with_name(target.name + ".part")
    reader = OffsetReader(info.path)
    cols = _Columns(Path(info.path).name)
    done = 0  # bytes of the file shown on the progress bar
    try:
        with pq.ParquetWriter(part, schema, compression="snappy") as writer:
            for offset, record in reader:
                if offset == 0:
                    continue  # the header: kept in the manifest
                cols.add(offset, record)
                if len(cols) >= BATCH:
                    info.records += len(cols)
                    writer.write_batch(pa.RecordBatch.from_pydict(cols.cols, schema=schema))
                    cols.reset()
                    bar.update(reader.position - done)
                    done = reader.position
            info.records += len(cols)
            writer.write_batch(pa.RecordBatch.from_pydict(cols.cols, schema=schema))
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)
        bar.update(info.size - done)
    info.torn_at = reader.torn_at


def convert(files: Sequence[Path], out: Path, *, show_progress: bool = True,
            sources: Sequence[str] = ()) -> Dataset:
    """Convert the capture ``files`` into a dataset at ``out`` (replaced if it is one).

    ``sources`` are the paths as the user gave them, kept for messages. Raises
    :class:`DatasetError` when ``out`` exists and is something else, or when no file
    could be read at all.
    """
    from tqdm import tqdm

    out = Path(out)
    if out.exists() and not (out.is_dir() and (is_dataset(out) or not any(out.iterdir()))):
        raise DatasetError(f"{out} exists and is not a dataset; choose another --out")
    paths = [Path(f).resolve() for f in files]
    stamps = []
    for path in paths:
        try:
            stamps.append(file_stamp(path))
        except OSError:
            stamps.append((str(path), -1, -1))
    headers, problems = read_headers(paths)
    runs = plan_runs(headers)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    total = sum(f.size for r in runs for f in r.files)
    try:
        (tmp / RECORDS).mkdir(parents=True)
        with tqdm(total=total, unit="B", unit_scale=True, desc="convert", leave=False,
                  dynamic_ncols=True, disable=None if show_progress else True) as bar:
            for run in runs:
                run_dir = tmp / RECORDS / f"run={run.id}"
                run_dir.mkdir()
                kept: list[FileInfo] = []
                for i, info in enumerate(run.files):
                    target = run_dir / f"{i:04d}-{run_name(Path(info.path).stem)}.parquet"
                    try:
                        _write_file(info, target, bar)
                    except BadCapture as exc:
                        problems.append(Problem(info.path, exc.offset, exc.reason,
                                                "file left out"))
                        continue
                    except OSError as exc:
                        problems.append(Problem(info.path, 0, exc.strerror or str(exc),
                                                "file left out"))
                        continue
                    if info.torn_at is not None:
                        problems.append(Problem(info.path, info.torn_at, "torn last record",
                                                f"kept the {info.records} records before it"))
                    kept.append(info)
                run.files = kept
                if not kept:
                    shutil.rmtree(run_dir)
        runs = [r for r in runs if r.files]
        for p in problems:
            log.info("%s", p)
        if not runs:
            names = ", ".join(sources or [str(f) for f in files])
            raise DatasetError(f"no readable capture among {names}"
                               + "".join(f"\n  {p}" for p in problems))
        dataset = Dataset(out, runs, problems, stamps)
        dataset.save(tmp)
        _swap_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("converted %d records of %d runs into %s", dataset.records, len(runs), out)
    return dataset


def _swap_into_place(tmp: Path, out: Path) -> None:
    """Replace ``out`` by the finished ``tmp`` (both on one file system)."""
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    if out.exists():
        os.replace(out, old)
    os.replace(tmp, out)
    shutil.rmtree(old, ignore_errors=True)
