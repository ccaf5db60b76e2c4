#!/usr/bin/env python3
"""Frames, virtual time and wall time for two Nodes to replicate many feeds.

Usage: ``python3 bench/bench_replication.py [--feeds F] [--entries E] [--quick]
[--profile] [--seed S]``.

One source Node holds F feeds of E small entries each (no side chains); a fresh Node
linked to it over an ideal in-memory link (tests/replication/mesh.py: 10 ms delay, no
loss, no airtime) starts empty, learns the feed ids through the GOSET and fetches every
entry with WANTs. A smaller side-chain-heavy case (10 feeds x 100 entries of 450 B, 5
chunks each) exercises CHNK. Both presets run on the same entries. For each run it prints
frames sent (both Nodes), frames per entry, virtual seconds to converge, wall seconds and
microseconds of wall time per frame processed (received and handled by a Node,
signature checks included). The entries are built and signed before any clock starts.
``--profile`` reruns the first case under cProfile and prints the hotspots.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gateway.replication import DEFAULT, REFERENCE, Policy
from gateway.store.memory import MemoryStore
from gateway.wire.entry import Entry, FeedKey, build_feed
from tests.replication.mesh import Mesh


@dataclass(slots=True)
class Case:
    name: str
    feeds: list[list[Entry]]

    @property
    def entries(self) -> int:
        return sum(len(f) for f in self.feeds)

    @property
    def chunks(self) -> int:
        return sum(len(e.chunks) for f in self.feeds for e in f)


@dataclass(slots=True)
class Result:
    frames: int
    processed: int
    virtual: float
    wall: float
    kinds: Counter[str]


def build_case(name: str, n_feeds: int, n_entries: int, length: int, tag: int) -> Case:
    feeds = []
    for f in range(n_feeds):
        key = FeedKey.from_seed(bytes([tag]) + f.to_bytes(31, "big"))
        contents = [(b"%d.%d " % (f, s) * (length // 4 + 1))[:length]
                    for s in range(1, n_entries + 1)]
        feeds.append(build_feed(key, contents))
    return Case(name, feeds)


def source_store(case: Case) -> MemoryStore:
    store = MemoryStore()
    for feed in case.feeds:
        replica = store.add_feed(feed[0].fid)
        for entry in feed:
            replica.append_own(entry)  # already signed: no verification needed here
    return store


def replicate(case: Case, policy: Policy, seed: int) -> Result:
    mesh = Mesh(rng=random.Random(seed))
    src = mesh.add("src", policy, source_store(case))
    dst = mesh.add("dst", policy)
    mesh.link("src", "dst")
    entries, chunks = case.entries, case.chunks
    t0 = time.perf_counter()
    took = mesh.run_until(lambda: (dst.stats.entries_stored == entries
                                   and dst.stats.chunks_stored == chunks), limit=30 * 86400)
    wall = time.perf_counter() - t0
    kinds: Counter[str] = Counter()
    for node in (src, dst):
        kinds.update(node.stats.tx_kinds)
    for feed in case.feeds:  # sanity: the copy is complete
        replica = dst.store.replica(feed[0].fid)
        if replica.max_seq != len(feed) or replica.missing_chunks():
            raise SystemExit(f"{case.name}: feed {feed[0].fid.hex()[:8]} incomplete")
    return Result(mesh.transmissions, mesh.deliveries, took, wall, kinds)


HEADER = (f"{'case':28s} {'preset':9s} {'frames sent':>11s} {'frames/entry':>12s} "
          f"{'virtual s':>10s} {'wall s':>7s} {'us/frame':>8s}")


def row(case: Case, policy: Policy, r: Result) -> str:
    return (f"{case.name:28s} {policy.name:9s} {r.frames:11d} {r.frames / case.entries:12.2f} "
            f"{r.virtual:10.1f} {r.wall:7.2f} {r.wall / r.processed * 1e6:8.1f}")


def profile(case: Case, policy: Policy, seed: int, top: int) -> None:
    prof = cProfile.Profile()
    prof.enable()
    replicate(case, policy, seed)
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf).sort_stats("tottime")
    stats.print_stats(top)
    print(f"\n# cProfile of {case.name} / {policy.name}, top {top} by own time")
    lines = buf.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if "ncalls" in line)
    root = str(Path(__file__).resolve().parents[1]) + "/"
    for line in lines[start:]:
        if line.strip():
            print(line.replace(root, ""))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--feeds", type=int, default=100, help="feeds in the main case (100)")
    ap.add_argument("--entries", type=int, default=1000, help="entries per feed (1000)")
    ap.add_argument("--quick", action="store_true", help="20 feeds x 100 entries")
    ap.add_argument("--profile", action="store_true", help="profile the main case")
    ap.add_argument("--top", type=int, default=25, help="profile lines to print (25)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    feeds, entries = (20, 100) if args.quick else (args.feeds, args.entries)

    t0 = time.perf_counter()
    cases = [build_case(f"{feeds} feeds x {entries}, 20 B", feeds, entries, 20, 1),
             build_case("10 feeds x 100, 450 B", 10, 100, 450, 2)]
    built = sum(c.entries for c in cases)
    print(f"# built and signed {built} entries ({sum(c.chunks for c in cases)} chunks) "
          f"in {time.perf_counter() - t0:.1f} s; ideal link, 10 ms delay", flush=True)
    print(HEADER, flush=True)
    for case in cases:
        for policy in (REFERENCE, DEFAULT):
            r = replicate(case, policy, args.seed)
            print(row(case, policy, r), flush=True)
            mix = " ".join(f"{k}={v}" for k, v in sorted(r.kinds.items()))
            print(f"{'':28s}   sent: {mix}", flush=True)
    if args.profile:
        profile(cases[0], DEFAULT, args.seed, args.top)


if __name__ == "__main__":
    main()
