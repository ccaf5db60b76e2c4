"""The metrics by a plain single-process Python pass, for the benchmark to compare.

It reads the same dataset as the Spark job (Parquet through pyarrow, one run at a
time, two passes over each run's records) and computes, with dictionaries and loops,
the run metrics (convergence time and share, delivered and stalled pairs, airtime,
duplicates, redundant receptions, collisions) and the per (node, frame kind) traffic
(frames, bytes and airtime sent and received, duplicates, losses). The definitions are
those of ``docs/spark.md``; ``bench/bench_spark.py`` checks that both agree before it
compares their speed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .dataset import RECORDS, Dataset, RunInfo
from .schema import COLLISION, DUTY_CYCLE, ENTRY_ITEM, NO_MATCH, NODE_REASONS, PAYLOAD_KINDS

__all__ = ["KindCounts", "RunMetrics", "baseline"]

COLUMNS = ("t", "node", "dir", "face", "frame", "kind", "feed", "seq", "cnr", "reason", "air")
Entry = tuple[bytes, int]
Item = tuple[str, bytes, int, int]  # node, feed, seq, item
Decode = tuple[str, bytes | None, int | None, int | None, float | None]  # kind .. airtime
RECEIVED = frozenset(NODE_REASONS)


@dataclass(slots=True)
class KindCounts:
    """One row of the ``node_kind`` table."""

    tx_frames: int = 0
    tx_bytes: int = 0
    tx_air: float = 0.0
    rx_frames: int = 0
    rx_bytes: int = 0
    rx_air: float = 0.0
    duplicates: int = 0
    redundant: int = 0
    lost: int = 0
    collisions: int = 0
    drops: int = 0


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
    node_kind: dict[tuple[str, str], KindCounts] = field(default_factory=dict)


def _rows(run_dir: Path) -> Iterator[tuple[Any, ...]]:
    import pyarrow.parquet as pq

    for path in sorted(run_dir.glob("*.parquet")):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=65_536, columns=list(COLUMNS)):
            cols = batch.to_pydict()
            yield from zip(*(cols[c] for c in COLUMNS), strict=True)


def _catalogue(sightings: dict[bytes, list[Any]]) -> dict[bytes, Decode]:
    """Per frame: its decode and the mean airtime of its transmissions."""
    return {frame: (kind, feed, seq, cnr, air / sent if sent else None)
            for frame, (kind, feed, seq, cnr, air, sent) in sightings.items()}


def _run(root: Path, info: RunInfo) -> RunMetrics:
    run_dir = root / RECORDS / f"run={info.id}"
    held: dict[Item, float] = {}  # first store time of each item at each node
    own: dict[Entry, list[Any]] = {}  # published entry -> [t, items, author]
    sightings: dict[bytes, list[Any]] = {}  # frame -> [kind, feed, seq, cnr, air, sent]
    seen: set[str] = set()
    records = 0
    for t, node, d, face, frame, kind, feed, seq, cnr, _reason, air in _rows(run_dir):
        records += 1
        seen.add(node)
        if (d == "store" or d == "tx" and kind in PAYLOAD_KINDS) and feed is not None \
                and seq is not None:  # held from its first store, or first send
            key = (node, feed, seq, ENTRY_ITEM if cnr is None else cnr)
            if key not in held or t < held[key]:
                held[key] = t
            if d == "store" and face is None:
                pub = own.setdefault((feed, seq), [t, set(), node])
                pub[0] = min(pub[0], t)
                pub[1].add(key[3])
        if d in ("tx", "rx") and frame is not None and kind not in (None, "unknown"):
            s = sightings.setdefault(frame, [kind, feed, seq, cnr, 0.0, 0])
            if d == "tx" and air is not None:
                s[4] += air
                s[5] += 1
    metrics = _convergence(info, seen, held, own)
    metrics.records = records
    _traffic(run_dir, _catalogue(sightings), held, metrics)
    return metrics


def _convergence(info: RunInfo, seen: set[str], held: dict[Item, float],
                 own: dict[Entry, list[Any]]) -> RunMetrics:
    nodes = list(info.nodes) or sorted(seen)
    # entries: published ones, or (no publication in the run) every entry stored
    entries: dict[Entry, tuple[float, int, str | None]] = {
        e: (p[0], len(p[1]), p[2]) for e, p in own.items()}
    per_node: dict[tuple[str, bytes, int], list[float]] = {}  # [items, last time]
    for (node, feed, seq, _), t in held.items():
        acc = per_node.setdefault((node, feed, seq), [0, 0.0])
        acc[0] += 1
        acc[1] = max(acc[1], t)
    if not entries:  # every entry held; its author: the node that held it first
        first: dict[Entry, tuple[float, str]] = {}
        most: dict[Entry, int] = {}
        for (node, feed, seq, _), t in held.items():
            first[(feed, seq)] = min(first.get((feed, seq), (t, node)), (t, node))
        for (_, feed, seq), (n, _) in per_node.items():
            most[(feed, seq)] = max(most.get((feed, seq), 0), int(n))
        entries = {e: (first[e][0], most[e], first[e][1]) for e in first}
    held_pairs = delivered = 0
    done_at = 0.0
    complete_nodes = dict.fromkeys(nodes, True)
    for (feed, seq), (t_pub, items, author) in entries.items():
        last = t_pub
        for node in nodes:
            got = per_node.get((node, feed, seq))
            if got is not None and got[0] >= items:
                held_pairs += 1
                delivered += node != author
                last = max(last, got[1])
            else:
                complete_nodes[node] = False
        done_at = max(done_at, last)
    converged = bool(nodes) and all(complete_nodes.values())
    total = len(nodes) * len(entries)
    return RunMetrics(info.id, 0, len(nodes), len(entries), converged,
                      done_at if converged else None, held_pairs / total if total else 1.0,
                      held_pairs, delivered, total - held_pairs, 0, 0, 0.0, 0, 0, 0)


def _traffic(run_dir: Path, catalogue: dict[bytes, Decode], held: dict[Item, float],
             m: RunMetrics) -> None:
    """The second pass: every frame sent, heard or lost, by node and kind."""
    table = m.node_kind
    unknown: Decode = ("unknown", None, None, None, None)
    for t, node, d, _face, frame, kind, feed, seq, cnr, reason, air in _rows(run_dir):
        if d == "store":
            continue
        c = catalogue.get(frame, unknown) if frame is not None else unknown
        k = kind if kind is not None and kind != "unknown" else c[0]
        row = table.get((node, k))
        if row is None:
            row = table[(node, k)] = KindCounts()
        size = len(frame) if frame is not None else 0
        if d == "tx":
            row.tx_frames += 1
            row.tx_bytes += size
            row.tx_air += air or 0.0
            continue
        if d == "rx" or reason in RECEIVED:
            row.rx_frames += 1
            row.rx_bytes += size
            row.rx_air += c[4] or 0.0
        if d != "drop":
            continue
        row.drops += 1
        if reason == COLLISION:
            row.collisions += 1
        if reason not in RECEIVED and reason != DUTY_CYCLE:
            row.lost += 1
        if reason == NO_MATCH and k in PAYLOAD_KINDS:
            row.duplicates += 1
            f = feed if feed is not None else c[1]
            s = seq if seq is not None else c[2]
            n = cnr if cnr is not None else c[3]
            had = held.get((node, f, s, n if k == "chunk" else ENTRY_ITEM))  # type: ignore[arg-type]
            if had is not None and had <= t:
                row.redundant += 1
    rows = table.values()
    m.tx_frames = sum(r.tx_frames for r in rows)
    m.tx_bytes = sum(r.tx_bytes for r in rows)
    m.tx_air = sum(r.tx_air for r in rows)
    m.duplicates = sum(r.duplicates for r in rows)
    m.redundant = sum(r.redundant for r in rows)
    m.collisions = sum(r.collisions for r in rows)


def baseline(dataset: Dataset) -> list[RunMetrics]:
    """The metrics of every run of ``dataset``, computed in this process."""
    return [_run(dataset.path, info) for info in dataset.runs]
