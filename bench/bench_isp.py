#!/usr/bin/env python3
"""Frames and airtime per chat message: through a tinyISP ISP vs. plain c2c feeds.

Usage: ``python3 bench/bench_isp.py [--scenario isp-islands] [--seed S]``.
Runs the scenario twice in virtual time: once with the ISP and its clients (every c2c
entry tunnelled in a data feed, feeds hopping every 50 entries), once with the same
chats published on one plain feed per pair and replicated through the GOSET, the ISP
node acting as a plain relay. For each it prints the messages delivered, their latency,
and the frames and airtime the whole mesh spent per delivered message, split into
data-bearing frames (entry, chunk) and the rest (requests and GOSET), and the wall time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from firmware_sim.isp_run import attach_isp
from firmware_sim.runner import build
from firmware_sim.scenario import load_scenario


def run(name: str, seed: int | None, direct: bool) -> str:
    scenario = load_scenario(name)
    if scenario.isp is None:
        raise SystemExit(f"scenario {name} has no [isp] table")
    seed = scenario.seed if seed is None else seed
    sim = build(scenario, seed=seed)
    report = attach_isp(sim, scenario.isp, seed, direct=direct)
    t0 = time.perf_counter()
    sim.run(scenario.duration)
    wall = time.perf_counter() - t0
    nodes = list(sim.nodes.values())
    got = max(len(report.delivered), 1)
    frames = sum(n.stats.tx for n in nodes)
    airtime = sum(n.stats.airtime for n in nodes)
    data = sum(n.stats.tx_kinds["entry"] + n.stats.tx_kinds["chunk"] for n in nodes)
    lat = report.latencies()
    mode = "plain c2c feeds" if direct else "through the ISP"
    return (f"{mode:<16} delivered {len(report.delivered)}/{len(report.sent)}, latency median "
            f"{statistics.median(lat) if lat else float('nan'):.0f} s; per message: "
            f"{frames / got:.1f} frames ({data / got:.1f} entry/chunk), "
            f"{airtime / got:.2f} s airtime; wall {wall:.1f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="isp-islands")
    ap.add_argument("--seed", type=int)
    args = ap.parse_args()
    print(f"scenario {args.scenario}")
    for direct in (False, True):
        print("  " + run(args.scenario, args.seed, direct), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
