#!/usr/bin/env python3
"""Throughput of the feed stores: ingest (verify + append), publish, read, reopen.

Usage: ``python3 bench/bench_store.py [--entries N] [--publish-entries M] [--quick]``.
Prints one line per figure, e.g. ``ingest (disk, verify+append): 12345 entries/s``.
The entries are built before the clock starts; each timed ingest ends with ``flush()``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gateway.store import DiskStore, FeedStore, MemoryStore
from gateway.wire.entry import (
    Entry,
    FeedKey,
    build_feed,
    genesis_prev,
    verify_entry,
)

KEY = FeedKey.from_seed(bytes(range(32)))
CHUNKED_LENGTHS = (100, 200, 300)  # 1, 2 and 3 chunks


def content(seq: int, length: int) -> bytes:
    return (seq.to_bytes(4, "big") * (length // 4 + 1))[:length]


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f}".replace(",", " ")


def report(label: str, n: int, seconds: float, unit: str = "entries") -> None:
    print(f"{label}: {rate(n, seconds)} {unit}/s  ({n} in {seconds:.3f} s)", flush=True)


def ingest(store: FeedStore, entries: list[Entry], with_chunks: bool) -> float:
    store.add_feed(KEY.fid)
    t0 = time.perf_counter()
    for e in entries:
        store.ingest_entry(KEY.fid, e.packet)
        if with_chunks:
            for chunk in e.chunks:
                store.ingest_chunk(chunk)
    store.flush()
    return time.perf_counter() - t0


def read_all(store: FeedStore, n: int) -> float:
    t0 = time.perf_counter()
    for seq in range(1, n + 1):
        if store.read_content(KEY.fid, seq) is None:
            raise SystemExit(f"entry {seq} unreadable")
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=20000,
                    help="entries per ingest/read figure (default 20000)")
    ap.add_argument("--publish-entries", type=int, default=2000,
                    help="entries for the publish figure (default 2000; each is fsynced)")
    ap.add_argument("--quick", action="store_true",
                    help="small sizes for a smoke run (2000 entries, 200 published)")
    ap.add_argument("--dir", help="directory for the disk stores (default: a temp dir)")
    args = ap.parse_args(argv)
    n = 2000 if args.quick else args.entries
    n_pub = 200 if args.quick else args.publish_entries

    work = Path(tempfile.mkdtemp(prefix="bench-store-", dir=args.dir))
    try:
        print(f"# {n} entries per figure, {n_pub} published; disk stores in {work}")
        plain = build_feed(KEY, [content(s, 20) for s in range(1, n + 1)])
        chunked = build_feed(KEY, [content(s, CHUNKED_LENGTHS[s % 3]) for s in range(1, n + 1)])
        n_chunks = sum(len(e.chunks) for e in chunked)

        # the cost of the signature check alone, for scale
        t0 = time.perf_counter()
        prev = genesis_prev(KEY.fid)
        for seq, e in enumerate(plain, 1):
            prev = verify_entry(KEY.fid, seq, prev, e.packet).msg_id
        report("verify_entry alone (no store)", n, time.perf_counter() - t0)

        # (a) ingest into a DiskStore
        disk_plain = DiskStore(work / "plain")
        report("ingest (disk, verify+append, 20 B entries)", n,
               ingest(disk_plain, plain, False))
        disk_chunked = DiskStore(work / "chunked")
        secs = ingest(disk_chunked, chunked, True)
        report("ingest (disk, verify+append, 1-3 chunks each incl. chunk ingest)", n, secs)
        report("  same run, chunks", n_chunks, secs, "chunks")

        # (b) ingest into a MemoryStore
        mem_plain = MemoryStore()
        report("ingest (memory, verify+append, 20 B entries)", n,
               ingest(mem_plain, plain, False))
        mem_chunked = MemoryStore()
        report("ingest (memory, verify+append, 1-3 chunks each incl. chunk ingest)", n,
               ingest(mem_chunked, chunked, True))

        # (c) publish: sign + durable (fsynced) append
        pub = DiskStore(work / "publish")
        t0 = time.perf_counter()
        for s in range(1, n_pub + 1):
            pub.publish(KEY, content(s, 100))
        report("publish (disk, sign+fsync, 100 B content, 1 chunk)", n_pub,
               time.perf_counter() - t0)
        pub20 = DiskStore(work / "publish20")
        t0 = time.perf_counter()
        for s in range(1, n_pub + 1):
            pub20.publish(KEY, content(s, 20))
        report("publish (disk, sign+fsync, 20 B content)", n_pub, time.perf_counter() - t0)
        mpub = MemoryStore()
        t0 = time.perf_counter()
        for s in range(1, n + 1):
            mpub.publish(KEY, content(s, 100))
        report("publish (memory, sign, 100 B content)", n, time.perf_counter() - t0)
        pub.close()
        pub20.close()

        # (d) read_content
        report("read_content (disk, 20 B entries)", n, read_all(disk_plain, n))
        report("read_content (disk, 1-3 chunks)", n, read_all(disk_chunked, n))
        report("read_content (memory, 1-3 chunks)", n, read_all(mem_chunked, n))

        # reopening: from the checkpoint, and rebuilt from the logs (frontier lost)
        disk_chunked.close()
        disk_plain.close()
        t0 = time.perf_counter()
        DiskStore(work / "chunked").close()
        print(f"open (disk, checkpointed, {n} entries with 1-3 chunks): "
              f"{(time.perf_counter() - t0) * 1000:.1f} ms", flush=True)
        os.unlink(work / "chunked" / "feeds" / KEY.fid.hex() / "frontier")
        t0 = time.perf_counter()
        DiskStore(work / "chunked", readonly=True).close()
        report("open (disk, rebuilt from the logs, 1-3 chunks)", n, time.perf_counter() - t0)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
