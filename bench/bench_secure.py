#!/usr/bin/env python3
"""Secure link (SHS + box stream on TCP) versus plain WebSocket: entries/s on loopback.

Usage: ``python3 bench/bench_secure.py [--feeds F] [--entries E] [--rounds R] [--quick]``.

Gateway A holds F feeds of E entries (every fourth with a 3-chunk side chain, built and
stored before any clock starts, as in bench_gateway.py). For each link kind in turn a
fresh, empty gateway B connects to A (``--connect ws://...`` or ``--secure-connect
HOST:PORT@ID``); the clock runs from B's start until B's status shows every entry and
chunk. With ``--rounds`` above 1 the kinds alternate and the best round of each counts.
Printed: wall seconds and entries/s per kind, the CPU seconds both gateways spent (a
steadier measure than wall time on a shared machine), and the secure link's share.
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

from bench_gateway import status

from gateway.store.keys import load_or_create_key
from gateway.wire.ident import format_id
from tests.runtime.harness import build_feeds, free_port, populate, stop, tinyssb, wait_for


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process (Linux /proc), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(tmp: Path, a: Path, kind: str, entries: int, id_a: str,
            round_no: int) -> tuple[float, float]:
    """Start A listening on ``kind``, a fresh B connecting; seconds until B has it all,
    and the CPU seconds both gateways used meanwhile."""
    b = tmp / f"b-{kind}-{round_no}"
    b.mkdir()
    key_b, _ = load_or_create_key(b)
    port = free_port()
    if kind == "websocket":
        listen = ["--ws-listen", f"127.0.0.1:{port}"]
        connect = ["--connect", f"ws://127.0.0.1:{port}"]
    else:
        listen = ["--secure-listen", f"127.0.0.1:{port}", "--secure-allow", format_id(key_b.fid)]
        connect = ["--secure-connect", f"127.0.0.1:{port}@{id_a}"]
    ga = tinyssb(a, "run", *listen, "--status-interval", "0", log=tmp / f"a-{kind}.log")
    try:
        wait_for(lambda: bool(status(a)), 60, "gateway a starts", [ga])
        cpu_a = cpu_seconds(ga.pid)
        gb = tinyssb(b, "run", *connect, "--status-interval", "0", log=tmp / f"b-{kind}.log")
        try:
            def done() -> bool:
                st = status(b)
                return bool(st) and st["entries"] == entries and st["missing_chunks"] == 0
            wall = wait_for(done, 3600, f"b replicates over {kind}", [ga, gb])
            return wall, cpu_seconds(ga.pid) - cpu_a + cpu_seconds(gb.pid)
        finally:
            stop(gb)
    finally:
        stop(ga)
        shutil.rmtree(b, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--feeds", type=int, default=100, help="feeds (100)")
    ap.add_argument("--entries", type=int, default=1000, help="entries per feed (1000)")
    ap.add_argument("--rounds", type=int, default=1, help="rounds per link kind (1)")
    ap.add_argument("--quick", action="store_true", help="20 feeds x 100 entries")
    args = ap.parse_args(argv)
    n_feeds, n_entries = (20, 100) if args.quick else (args.feeds, args.entries)

    t0 = time.perf_counter()
    feeds = build_feeds(n_feeds, n_entries)
    entries = sum(len(f) for f in feeds)
    chunks = sum(len(e.chunks) for f in feeds for e in f)
    best: dict[str, float] = {}
    best_cpu: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="tinyssb-bench-secure-") as name:
        tmp = Path(name)
        a = tmp / "a"
        populate(a, feeds)
        key_a, _ = load_or_create_key(a)
        print(f"# {n_feeds} feeds x {n_entries} entries = {entries} entries + {chunks} chunks; "
              f"built and stored in {time.perf_counter() - t0:.1f} s", flush=True)
        for r in range(args.rounds):
            for kind in ("websocket", "secure"):
                wall, cpu = one_run(tmp, a, kind, entries, format_id(key_a.fid), r)
                print(f"  round {r + 1} {kind:<9}: {wall:6.1f} s, {entries / wall:8,.0f} "
                      f"entries/s; both gateways used {cpu:.1f} CPU s", flush=True)
                best[kind] = min(best.get(kind, wall), wall)
                best_cpu[kind] = min(best_cpu.get(kind, cpu), cpu)
    plain, secure = entries / best["websocket"], entries / best["secure"]
    print(f"plain WebSocket: {plain:,.0f} entries/s ({best['websocket']:.1f} s, "
          f"{best_cpu['websocket']:.1f} CPU s)")
    print(f"secure link:     {secure:,.0f} entries/s ({best['secure']:.1f} s, "
          f"{best_cpu['secure']:.1f} CPU s)")
    print(f"secure / plain:  {secure / plain:.0%} of the entries/s, "
          f"{best_cpu['secure'] / best_cpu['websocket']:.0%} of the CPU time "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
