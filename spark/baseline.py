"""The run metrics by a plain single-process Python pass, for the benchmark to compare.

It reads the same dataset as the Spark job (Parquet through pyarrow, one run at a
time, two passes over each run's records) and computes the core of the ``runs`` table
with dictionaries and loops: convergence time and share, delivered pairs, airtime and
frames sent, duplicates, redundant receptions, collisions, stalled pairs. The
definitions are those of ``docs/spark.md``; ``bench/bench_spark.py`` checks that both
agree before it compares their speed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .dataset import RECORDS, Dataset, RunInfo
from .schema import COLLISION, ENTRY_ITEM, NO_MATCH, PAYLOAD_KINDS

__all__ = ["RunMetrics", "baseline"]

COLUMNS = ("t", "node", "dir", "face", "frame", "kind", "feed", "seq", "cnr", "reason", "air")
Entry = tuple[bytes, int]
Item = tuple[str, bytes, int, int]  # node, feed, seq, item


@dataclass(slots=True)
class RunMetrics:
    run: str
    records: int
    nodes: int
    entries: int
    converged: bool
    convergence_t: float | None
    share: float
    held_pairs: int
    delivered: int
    stalled_pairs: int
    tx_frames: int
    tx_bytes: int
    tx_air: float
    duplicates: int
    redundant: int
    collisions: int


def _rows(run_dir: Path) -> Iterator[tuple[Any, ...]]:
    import pyarrow.parquet as pq

    for path in sorted(run_dir.glob("*.parquet")):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=65_536, columns=list(COLUMNS)):
            cols = batch.to_pydict()
            yield from zip(*(cols[c] for c in COLUMNS), strict=True)


def _run(root: Path, info: RunInfo) -> RunMetrics:
    run_dir = root / RECORDS / f"run={info.id}"
    held: dict[Item, float] = {}  # first store time of each item at each node
    own: dict[Entry, list[Any]] = {}  # published entry -> [t, items, author]
    catalogue: dict[bytes, tuple[str, bytes | None, int | None, int | None]] = {}
    seen: set[str] = set()
    records = 0
    for t, node, d, face, frame, kind, feed, seq, cnr, _reason, _air in _rows(run_dir):
        records += 1
        seen.add(node)
        if d == "store":
            if feed is None or seq is None:
                continue
            key = (node, feed, seq, ENTRY_ITEM if cnr is None else cnr)
            if key not in held or t < held[key]:
                held[key] = t
            if face is None:
                pub = own.setdefault((feed, seq), [t, set(), node])
                pub[0] = min(pub[0], t)
                pub[1].add(key[3])
        elif d in ("tx", "rx") and frame is not None and kind not in (None, "unknown"):
            catalogue.setdefault(frame, (kind, feed, seq, cnr))
    nodes = list(info.nodes) or sorted(seen)
    # entries: published ones, or (no publication in the run) every entry stored
    entries: dict[Entry, tuple[float, int, str | None]] = {
        e: (p[0], len(p[1]), p[2]) for e, p in own.items()}
    if not entries:
        first: dict[Entry, float] = {}
        count: dict[tuple[str, bytes, int], int] = {}
        for (node, feed, seq, _), t in held.items():
            first[(feed, seq)] = min(first.get((feed, seq), t), t)
            count[(node, feed, seq)] = count.get((node, feed, seq), 0) + 1
        most: dict[Entry, int] = {}
        for (_, feed, seq), n in count.items():
            most[(feed, seq)] = max(most.get((feed, seq), 0), n)
        entries = {e: (first[e], most[e], None) for e in first}
    per_node: dict[tuple[str, bytes, int], list[float]] = {}  # [items, last time]
    for (node, feed, seq, _), t in held.items():
        acc = per_node.setdefault((node, feed, seq), [0, 0.0])
        acc[0] += 1
        acc[1] = max(acc[1], t)
    held_pairs = delivered = 0
    done_at = 0.0
    complete_nodes = dict.fromkeys(nodes, True)
    for (feed, seq), (t_pub, items, author) in entries.items():
        last = t_pub
        for node in nodes:
            acc = per_node.get((node, feed, seq))
            if acc is not None and acc[0] >= items:
                held_pairs += 1
                delivered += node != author
                last = max(last, acc[1])
            else:
                complete_nodes[node] = False
        done_at = max(done_at, last)
    converged = bool(nodes) and all(complete_nodes.values())
    tx_frames = tx_bytes = duplicates = redundant = collisions = 0
    tx_air = 0.0
    for t, node, d, _face, frame, kind, feed, seq, cnr, reason, air in _rows(run_dir):
        if d == "tx":
            tx_frames += 1
            tx_bytes += len(frame or b"")
            tx_air += air or 0.0
        elif d == "drop":
            if reason == COLLISION:
                collisions += 1
            if reason != NO_MATCH:
                continue
            c = catalogue.get(frame) if frame is not None else None
            c_kind, c_feed, c_seq, c_cnr = c if c is not None else (None, None, None, None)
            k = kind if kind not in (None, "unknown") else c_kind
            if k not in PAYLOAD_KINDS:
                continue
            duplicates += 1
            f, s = feed or c_feed, seq if seq is not None else c_seq
            n = cnr if cnr is not None else c_cnr
            had = held.get((node, f, s, n if k == "chunk" else ENTRY_ITEM))  # type: ignore[arg-type]
            redundant += had is not None and had <= t
    total = len(nodes) * len(entries)
    return RunMetrics(info.id, records, len(nodes), len(entries), converged,
                      done_at if converged else None, held_pairs / total if total else 1.0,
                      held_pairs, delivered, total - held_pairs, tx_frames, tx_bytes, tx_air,
                      duplicates, redundant, collisions)


def baseline(dataset: Dataset) -> list[RunMetrics]:
    """The metrics of every run of ``dataset``, computed in this process."""
    return [_run(dataset.path, info) for info in dataset.runs]
