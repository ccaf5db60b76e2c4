#!/usr/bin/env python3
"""Two gateway processes on loopback WebSocket: wall time and frames to replicate.

Usage: ``python3 bench/bench_gateway.py [--feeds F] [--entries E] [--quick]``.

Gateway A holds F feeds of E entries (every fourth entry with a 3-chunk side chain,
built and stored before any clock starts); gateway B starts empty and connects to A
with ``tinyssb run --connect``. The clock runs from B's start until B's status (over
its control socket) shows every entry and chunk. Printed: wall seconds, entries and
chunks per second, and the frames each gateway sent and received, by kind.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gateway.runtime.control import ControlError, request
from tests.runtime.harness import build_feeds, free_port, populate, stop, tinyssb, wait_for


def status(data: Path) -> dict[str, object]:
    try:
        return request(data, {"cmd": "status"}, timeout=30)
    except ControlError:
        return {}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--feeds", type=int, default=100, help="feeds (100)")
    ap.add_argument("--entries", type=int, default=1000, help="entries per feed (1000)")
    ap.add_argument("--quick", action="store_true", help="20 feeds x 100 entries")
    args = ap.parse_args(argv)
    n_feeds, n_entries = (20, 100) if args.quick else (args.feeds, args.entries)

    t0 = time.perf_counter()
    feeds = build_feeds(n_feeds, n_entries)
    entries = sum(len(f) for f in feeds)
    chunks = sum(len(e.chunks) for f in feeds for e in f)
    with tempfile.TemporaryDirectory(prefix="tinyssb-bench-") as tmp:
        a, b = Path(tmp) / "a", Path(tmp) / "b"
        populate(a, feeds)
        print(f"# {n_feeds} feeds x {n_entries} entries = {entries} entries + {chunks} chunks; "
              f"built and stored in {time.perf_counter() - t0:.1f} s", flush=True)
        port = free_port()
        ga = tinyssb(a, "run", "--ws-listen", f"127.0.0.1:{port}", "--status-interval", "0",
                     log=Path(tmp) / "a.log")
        try:
            wait_for(lambda: bool(status(a)), 60, "gateway a starts", [ga])
            gb = tinyssb(b, "run", "--connect", f"ws://127.0.0.1:{port}",
                         "--status-interval", "0", log=Path(tmp) / "b.log")
            try:
                def done() -> bool:
                    st = status(b)
                    return bool(st) and st["entries"] == entries and st["missing_chunks"] == 0
                wall = wait_for(done, 3600, "b replicates", [ga, gb])
                sa, sb = status(a), status(b)
            finally:
                stop(gb)
        finally:
            stop(ga)
    na, nb = sa["node"], sb["node"]
    assert isinstance(na, dict) and isinstance(nb, dict)
    print(f"wall {wall:.1f} s: {entries / wall:,.0f} entries/s, {chunks / wall:,.0f} chunks/s")
    print(f"frames: a sent {na['tx']:,} and received {na['rx']:,}; "
          f"b sent {nb['tx']:,} and received {nb['rx']:,}")
    for name, n in (("a", na), ("b", nb)):
        kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(n["tx_kinds"].items()))
        print(f"  {name} sent: {kinds}")
    print(f"frames per entry or chunk delivered: {(na['tx'] + nb['tx']) / (entries + chunks):.3f}")


if __name__ == "__main__":
    main()
