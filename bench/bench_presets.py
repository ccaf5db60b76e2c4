#!/usr/bin/env python3
"""Airtime and convergence time of the two policy presets on a small LoRa mesh.

Usage: ``python3 bench/bench_presets.py [--nodes N] [--feeds F] [--entries E] [--seed S]``.
Every node has one LoRa face (EU868.a: SF7/125 kHz, 1 % duty cycle per hour, CRC
trailer); the reference preset also keeps the ESP32's 1.35 s between transmissions.
For a clique and a line topology it prints the virtual time to converge, the airtime
and frames spent until then, and the airtime per hour the mesh spends once converged.
Runs in virtual time (tests/replication/mesh.py), so it takes a second or so.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gateway.replication import PRESETS, Face, Policy
from gateway.wire.lora import profile
from tests.replication.mesh import Mesh, author, converged


def scenario(policy: Policy, topology: str, args: argparse.Namespace) -> str:
    face = Face("radio", crc=True, lora=profile("EU868.a"), duty_cycle=0.01,
                duty_window=3600.0, min_gap=1.35 if policy.name == "reference" else 0.0)
    mesh = Mesh(face=face, rng=random.Random(args.seed))
    nodes = [mesh.add(f"n{i}", policy) for i in range(args.nodes)]
    if topology == "clique":
        mesh.link_all()
    else:
        for i in range(args.nodes - 1):
            mesh.link(f"n{i}", f"n{i + 1}")
    expected = {}
    for i in range(args.feeds):
        contents = [(b"feed %d post %d " % (i, j)) * 10 for j in range(args.entries)]
        expected[author(nodes[i % args.nodes], i + 1, contents).fid] = args.entries
    wall = time.perf_counter()
    took = mesh.run_until(lambda: converged(nodes, expected), limit=48 * 3600)
    air = sum(n.stats.airtime for n in nodes)
    frames = sum(n.stats.tx for n in nodes)
    kinds: Counter[str] = Counter()
    for n in nodes:
        kinds.update(n.stats.tx_kinds)
    mesh.run_for(3600.0)
    idle = sum(n.stats.airtime for n in nodes) - air
    wall = time.perf_counter() - wall
    mix = " ".join(f"{k}={v}" for k, v in sorted(kinds.items()))
    return (f"{policy.name:9s} {topology:6s} converged in {took:7.1f} s virtual, "
            f"{air:6.1f} s airtime, {frames:4d} frames ({mix}); "
            f"then {idle:6.1f} s airtime/hour; wall {wall:.2f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5)
    ap.add_argument("--feeds", type=int, default=3)
    ap.add_argument("--entries", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    args, _ = ap.parse_known_args()
    for topology in ("clique", "line"):
        for policy in PRESETS.values():
            print(scenario(policy, topology, args), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
