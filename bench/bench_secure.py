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
First, the links alone: 120-byte frames from a client link to a server link in one
process, without a Node, frames/s and CPU per frame for each kind.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_gateway import status

from gateway.replication.faces import Face
from gateway.secure import Identity
from gateway.store.keys import load_or_create_key
from gateway.transports.base import Link, RadioMeta, SendFn
from gateway.transports.secure import SecureClient, SecureServer
from gateway.transports.websocket import WebSocketClient, WebSocketServer
from gateway.wire.ident import format_id
from tests.runtime.harness import build_feeds, free_port, populate, stop, tinyssb, wait_for


class _Counter:
    """A LinkHost that only counts the frames it is given."""

    def __init__(self, want: int) -> None:
        self.sends: dict[str, SendFn] = {}
        self.frames = 0
        self.want = want
        self.all_in = asyncio.Event()

    def face_up(self, face: Face, send: SendFn) -> None:
        self.sends[face.name] = send

    def face_down(self, name: str, reason: str) -> None:
        self.sends.pop(name, None)

    def frame_in(self, face: str, frame: bytes, meta: RadioMeta | None = None) -> None:
        self.frames += 1
        if self.frames == self.want:
            self.all_in.set()


async def _link_pair(kind: str, frames: int) -> tuple[float, float]:
    """``frames`` 120-byte frames from a client link to a server link in this process:
    frames/s and CPU microseconds per frame (both ends)."""
    server_host, client_host = _Counter(frames), _Counter(0)
    server: Link
    client: Link
    if kind == "websocket":
        server = WebSocketServer(0, "127.0.0.1")
        await server.start(server_host)
        client = WebSocketClient(f"ws://127.0.0.1:{server.port}", proxy=None)
    else:
        a, b = Identity.from_seed(bytes([1]) * 32), Identity.from_seed(bytes([2]) * 32)
        server = SecureServer(0, "127.0.0.1", network_key=bytes(32), allow=None, identity=a)
        await server.start(server_host)
        client = SecureClient("127.0.0.1", server.port, a.public, network_key=bytes(32),
                              identity=b)
    await client.start(client_host)
    while not server_host.sends:
        await asyncio.sleep(0.01)
    [send] = client_host.sends.values()
    frame = bytes(range(120))
    t0, c0 = time.perf_counter(), time.process_time()
    sent = 0
    while sent < frames:  # as fast as the outbox takes them
        while sent < frames and send(frame):
            sent += 1
        await asyncio.sleep(0)
    await asyncio.wait_for(server_host.all_in.wait(), 120)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    await client.close()
    await server.close()
    return frames / wall, cpu / frames * 1e6


def link_bench(frames: int, rounds: int) -> None:
    """The links alone, without the Node: what a frame costs on each kind."""
    logging.getLogger("gateway").setLevel(logging.WARNING)
    best: dict[str, tuple[float, float]] = {}
    for _ in range(rounds):
        for kind in ("websocket", "secure"):
            rate, us = asyncio.run(_link_pair(kind, frames))
            old = best.get(kind)
            best[kind] = (max(rate, old[0]), min(us, old[1])) if old else (rate, us)
    for kind, (rate, us) in best.items():
        print(f"link only, {kind:<9}: {rate:8,.0f} frames/s, {us:5.1f} CPU us per frame "
              "(both ends)")
    print(f"link only, secure / plain: {best['secure'][0] / best['websocket'][0]:.0%} of the "
          "frames/s", flush=True)


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
    ap.add_argument("--link-frames", type=int, default=20000,
                    help="frames for the link-only measurement (20000; 0: skip it)")
    args = ap.parse_args(argv)
    n_feeds, n_entries = (20, 100) if args.quick else (args.feeds, args.entries)
    if args.link_frames:
        link_bench(args.link_frames, max(2, args.rounds))

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
