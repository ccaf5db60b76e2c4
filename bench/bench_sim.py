#!/usr/bin/env python3
"""Simulator speed on city-100, and the two policy presets compared on smaller meshes.

Usage: ``python3 bench/bench_sim.py [--hours H] [--no-capture] [--foreground]
[--profile-hours H]``.

0. The machine's pace: CPU seconds of a fixed plain-Python loop (:func:`machine_pace`),
   to compare runs made at different times (the same code has measured twice as slow
   on this machine from one day to the next).
1. ``city-100`` (100 LoRa nodes, each publishing once an hour) for 24 virtual hours with
   the default policy, capture written to a temporary file: wall time, scheduler events
   per second, frames resolved at receivers per second, capture records and size.
2. cProfile of one virtual hour of the same run (the second, past the start-up), top
   entries by own time; in plain Python (a child process with ``TINYSSB_PURE=1``) when
   the compiled modules are in use, since cProfile does not see inside them.
3. Every shipped scenario but city-100 (with ``--all``, city-100 too) under ``reference``
   and ``default``: convergence, p95 entry spread, airtime, efficiency against the
   airtime lower bound, collisions: the table in docs/replication.md; and, for the LoRa
   meshes with plain feeds, the same columns under ``tinyssb sim oracle``.

Target for (1): at most 60 s on a 2-core machine. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import cProfile
import heapq
import io
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from firmware_sim.oracle import OracleError, check_scenario, run_oracle
from firmware_sim.runner import CaptureSinks, build, capture_meta, few_collections, run_scenario
from firmware_sim.scenario import Scenario, load_scenario
from firmware_sim.summary import ON_TIME_S, Convergence
from gateway import accel
from gateway.stats import percentile

PACE_ROUNDS = 1_000_000  # of the fixed workload below: 1.1-1.8 s of CPU here (27 Nov 2026)


def machine_pace() -> float:
    """CPU seconds of a fixed plain-Python workload (dict look-ups, small tuples, a heap:
    what the simulation spends its time on): this machine's pace at the moment. The same
    code took 49.8 s of wall on city-100 one afternoon and 97.7 s the next morning, so
    compare runs made at different times by this figure too."""
    start = time.process_time()
    heap: list[tuple[float, int]] = []
    table: dict[int, int] = {}
    for i in range(PACE_ROUNDS):
        key = (i * 7919) & 0xFFFF
        table[key] = table.get(key ^ 1, 0) + 1
        heapq.heappush(heap, (key * 0.5, i))
        if len(heap) > 1024:
            heapq.heappop(heap)
    return time.process_time() - start


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def city(hours: float, capture: bool, background: bool) -> None:
    scenario = load_scenario("city-100").with_(duration=hours * 3600)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "city-100.cbor" if capture else None
        wall, cpu, child = time.perf_counter(), time.process_time(), _children_cpu()
        sinks = CaptureSinks(capture_meta(scenario, scenario.seed, "default"), out,
                             background=background)
        sim = build(scenario, capture=sinks.sink)
        with few_collections():  # as run_scenario (tinyssb sim run) does
            sim.run(scenario.duration)
        summary = sinks.close()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        child = _children_cpu() - child
        size = out.stat().st_size if out is not None else 0
    st = sim.stats
    outcomes = st.receptions + sum(st.drops.values())
    records = sinks.count - 1 if capture else 0
    c = summary.convergence
    writer = (f" + {child:.1f} s in the capture writer process" if capture and background
              else "")
    how = ("compiled modules" if accel.active()
           else "plain Python (compiled modules not built, not current or turned off)")
    print(f"city-100, {hours:g} virtual h, policy default, {how}, capture "
          f"{'on' if capture else 'off'}{', written in the background' if writer else ''}: "
          f"wall {wall:.1f} s (target <= 60 s), CPU {cpu:.1f} s{writer} (the simulation "
          "is about the wall time on an idle machine; on a busy one the CPU time is the "
          "figure to compare)")
    print(f"  {st.events} scheduler events = {st.events / wall:,.0f} events/s "
          f"({st.events / cpu:,.0f} per CPU second); "
          f"{st.transmissions} transmissions = {st.transmissions / wall:,.0f}/s; "
          f"{outcomes} frame outcomes at receivers = {outcomes / wall:,.0f}/s")
    if capture:
        print(f"  capture: {records} records, {size / 1e6:.0f} MB")
    drops = ", ".join(f"{k} {v}" for k, v in st.drops.most_common())
    print(f"  decoded {st.receptions}; lost: {drops}")
    print(f"  convergence: {'yes at ' + format(c.time, '.0f') + ' s' if c.converged else 'no'}"
          f"; {c.share:.1%} of (node, entry) pairs complete ({c.on_time_share:.1%} within "
          f"{ON_TIME_S:.0f} s of publication); "
          f"airtime {sum(summary.tx_airtime.values()):.0f} s", flush=True)


def profile(hours: float) -> None:
    scenario = load_scenario("city-100").with_(duration=(1 + hours) * 3600)
    with tempfile.TemporaryDirectory() as tmp:
        sinks = CaptureSinks(capture_meta(scenario, scenario.seed, "default"),
                             Path(tmp) / "p.cbor")
        sim = build(scenario, capture=sinks.sink)
        sim.run(3600.0)
        prof = cProfile.Profile()
        prof.enable()
        sim.run(scenario.duration)
        prof.disable()
        sinks.close()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(15)
    print(f"cProfile of virtual hour 2{'-' + format(1 + hours, 'g') if hours > 1 else ''} "
          "(own time):")
    lines = text.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if "ncalls" in line)
    print("\n".join(line.replace(str(Path(__file__).resolve().parents[1]) + "/", "")
                    for line in lines[start:] if line.strip()), flush=True)


def policies(names: list[str]) -> None:
    print("| scenario | policy | converged | pairs complete | within 900 s | p95 entry spread "
          "| airtime | lower bound | efficiency | collisions | wall |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        scenario = load_scenario(name)
        for policy in ("reference", "default"):
            wall = time.perf_counter()
            summary = run_scenario(scenario, None, policy=policy)
            wall = time.perf_counter() - wall
            _row(name, policy, summary.convergence, sum(summary.tx_airtime.values()),
                 summary.meta.get("airtime_lower_bound_s"), summary.collisions, wall)
        _oracle_row(scenario, summary.meta.get("airtime_lower_bound_s"))


def _row(name: str, policy: str, c: Convergence, air: float, bound: float | None,
         collisions: int, wall: float) -> None:
    """One line of the policy table."""
    took = f"{c.time:,.0f} s" if c.converged and c.time is not None else "no"
    p95 = f"{percentile(c.latencies, 0.95):,.0f} s" if c.latencies else "-"
    eff = f"{bound / air:.1%}" if bound and air else "-"
    low = f"{bound:,.1f} s" if bound else "-"
    print(f"| {name} | {policy} | {took} | {c.share:.1%} | {c.on_time_share:.1%} | {p95} "
          f"| {air:,.0f} s | {low} | {eff} | {collisions:,} | {wall:.1f} s |", flush=True)


def _oracle_row(scenario: Scenario, bound: float | None) -> None:
    """The scenario under ``tinyssb sim oracle`` (LoRa meshes with plain feeds only)."""
    try:
        check_scenario(scenario)
    except OracleError:
        return
    wall = time.perf_counter()
    r = run_oracle(scenario)
    wall = time.perf_counter() - wall
    _row(scenario.name, "oracle", r.convergence, sum(r.airtime.values()), bound,
         r.drops.get("collision", 0), wall)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--no-capture", action="store_true")
    ap.add_argument("--foreground", action="store_true",
                    help="write the capture in the simulation's process (as small runs do)")
    ap.add_argument("--profile-hours", type=float, default=1.0)
    ap.add_argument("--all", action="store_true", help="the table with city-100 too")
    ap.add_argument("--profile-only", action="store_true", help=argparse.SUPPRESS)
    args, _ = ap.parse_known_args()
    if args.profile_only:
        profile(args.profile_hours)
        return 0
    print(f"machine pace: {machine_pace():.2f} s of CPU for a fixed plain-Python workload "
          "(the figures below scale with it; see machine_pace)", flush=True)
    city(args.hours, not args.no_capture, not args.foreground)
    if accel.active():  # cProfile sees nothing inside compiled functions
        print("(the profile runs the plain Python modules, TINYSSB_PURE=1)", flush=True)
        subprocess.run([sys.executable, __file__, "--profile-only", "--profile-hours",
                        str(args.profile_hours)], check=True,
                       env=dict(os.environ, **{accel.ENV_PURE: "1"}))
    else:
        profile(args.profile_hours)
    names = ["line-5", "grid-25", "random-50", "islands-ip", "isp-islands"]
    policies(names + (["city-100"] if args.all else []))
    return 0


if __name__ == "__main__":
    sys.exit(main())
