"""Run one scenario over many seeds, and count what a single run hides.

One seed of a large mesh is a draw: in city-100 the p95 entry spread of one seed moves
by half or double with any change to the policy, because it sits where the entries late
somewhere cross 5 % of all. :func:`scan` runs the seeds in worker processes and reports
per seed the summary's figures plus the *late entries*: entries that some node held
completely only after ``ON_TIME_S`` (900 s) or never, among those published at least
that long before the end. ``besides`` names nodes to leave out of a second count (a
known pocket), so that a change is judged on the rest of the mesh too.

Policy settings are changed with ``KEY=VALUE`` pairs, checked and converted as a
config file's ``[policy]`` table is (:func:`gateway.replication.policy_from_mapping`).
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import time
import tomllib
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from gateway.replication.policy import Policy, policy_from_mapping
from gateway.stats import percentile

from .runner import run_scenario
from .scenario import Scenario
from .summary import ON_TIME_S, Summary, spread_json

__all__ = ["SeedResult", "format_scan", "parse_seeds", "parse_settings", "scan", "scan_json",
           "seed_result"]


MAX_SEEDS = 1000  # seeds one scan runs at most


@dataclass(frozen=True, slots=True)
class SeedResult:
    seed: int
    converged_at: float | None  # None: not every node held every entry at the end
    pairs: float  # share of (node, entry) pairs complete
    on_time: float  # ... complete within ON_TIME_S of publication
    p95: float | None  # p95 entry spread over the entries complete everywhere
    entries: int  # entries judged (published at least ON_TIME_S before the end)
    late: int  # ... of them late at some node
    late_besides: int  # ... late at some node not in ``besides``
    airtime: float  # seconds on air, all nodes
    collisions: int
    wall: float  # seconds the run took


def parse_seeds(text: str) -> list[int]:
    """``"1-16"``, ``"3"``, ``"1,4,9-12"`` -> seeds in that order, without repeats.

    Raises ValueError naming the bad part."""
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi) if sep else int(lo)
        except ValueError:
            raise ValueError(f"not a seed or range of seeds: {part!r} (try 1-16 or "
                             "1,4,9-12)") from None
        if last < first:
            raise ValueError(f"empty range of seeds: {part!r}")
        if last - first >= MAX_SEEDS:
            raise ValueError(f"{part!r} is more than {MAX_SEEDS} seeds")
        seeds.extend(range(first, last + 1))
    unique = list(dict.fromkeys(seeds))
    if len(unique) > MAX_SEEDS:
        raise ValueError(f"more than {MAX_SEEDS} seeds")
    return unique


def parse_settings(base: str, items: Sequence[str]) -> Policy:
    """The preset ``base`` with ``KEY=VALUE`` settings changed; a value is read as TOML
    (``credit=8``, ``push=false``, ``push_window=48.0``), else taken as a string.

    Raises ValueError naming the bad setting."""
    table: dict[str, Any] = {"preset": base}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"a policy setting is KEY=VALUE, got {item!r}")
        try:
            table[key] = tomllib.loads(f"v = {value.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            table[key] = value.strip()
    return policy_from_mapping(table)


def seed_result(summary: Summary, seed: int, duration: float,
                besides: Collection[str] = (), wall: float = 0.0) -> SeedResult:
    """The figures of one finished run of ``duration`` virtual seconds."""
    c = summary.convergence
    until = duration - ON_TIME_S  # later entries could not be late yet
    late = [nodes for t_pub, nodes in c.late if t_pub <= until]
    others = frozenset(besides)
    spread = spread_json(c.latencies)
    return SeedResult(
        seed=seed, converged_at=c.time, pairs=c.share, on_time=c.on_time_share,
        p95=spread["p95"] if spread is not None else None,
        entries=sum(1 for t in c.published if t <= until), late=len(late),
        late_besides=sum(1 for nodes in late if not others.issuperset(nodes)),
        airtime=sum(summary.tx_airtime.values()), collisions=summary.collisions, wall=wall)


def _run_seed(scenario: Scenario, seed: int, policy: Policy,
              besides: Collection[str]) -> SeedResult:
    """One seed, no capture."""
    start = time.monotonic()
    summary = run_scenario(scenario, None, seed=seed, policy=policy)
    return seed_result(summary, seed, scenario.duration, besides, time.monotonic() - start)


# A worker process's scenario, given once when the process starts: the compiled classes
# in a Scenario (mypyc) do not survive pickling, and a forked worker inherits it as is
_worker_scenario: list[Scenario] = []


def _start_worker(scenario: Scenario) -> None:
    _worker_scenario.append(scenario)


def _run_seed_in_worker(seed: int, policy: Policy, besides: Collection[str]) -> SeedResult:
    return _run_seed(_worker_scenario[0], seed, policy, besides)


def scan(scenario: Scenario, seeds: Sequence[int], policy: Policy, *,
         besides: Collection[str] = (), jobs: int = 1,
         done: Callable[[SeedResult], None] | None = None) -> list[SeedResult]:
    """Run ``scenario`` once per seed under ``policy``, ``jobs`` runs at a time (worker
    processes; 1: in this process); ``done`` is told of each run as it ends. Results
    in the order of ``seeds``."""
    results: dict[int, SeedResult] = {}
    if jobs <= 1 or len(seeds) <= 1:
        for seed in seeds:
            results[seed] = _run_seed(scenario, seed, policy, besides)
            if done is not None:
                done(results[seed])
    else:
        with concurrent.futures.ProcessPoolExecutor(
                max_workers=jobs, mp_context=multiprocessing.get_context("fork"),
                initializer=_start_worker, initargs=(scenario,)) as pool:
            futures = [pool.submit(_run_seed_in_worker, seed, policy, tuple(besides))
                       for seed in seeds]
            try:
                for future in concurrent.futures.as_completed(futures):
                    result = future.result()
                    results[result.seed] = result
                    if done is not None:
                        done(result)
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
    return [results[seed] for seed in seeds]


def _seconds(t: float | None) -> str:
    return "-" if t is None else f"{t:,.0f} s"


def format_scan(scenario: Scenario, policy: Policy, results: Sequence[SeedResult],
                besides: Collection[str] = ()) -> str:
    """The table ``tinyssb sim scan`` prints: a row per seed, then the totals."""
    head = ["seed", "converged", "pairs", f"within {ON_TIME_S:.0f} s", "p95 spread",
            "late entries"]
    if besides:
        head.append("late besides")
    head += ["airtime", "collisions"]
    rows = []
    for r in results:
        row = [str(r.seed), _seconds(r.converged_at), f"{r.pairs:.2%}", f"{r.on_time:.2%}",
               _seconds(r.p95), f"{r.late} of {r.entries}"]
        if besides:
            row.append(str(r.late_besides))
        row += [f"{r.airtime:,.0f} s", f"{r.collisions:,}"]
        rows.append(row)
    widths = [max(len(x[i]) for x in [head, *rows]) for i in range(len(head))]
    title = (f"{scenario.name}, {len(results)} seeds, {scenario.duration:g} s each, "
             f"policy {policy.name}")
    lines = [title]
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in [head, *rows]]
    if results:
        p95s = [r.p95 for r in results if r.p95 is not None]
        entries = sum(r.entries for r in results)
        late = sum(r.late for r in results)
        summary = (f"late entries: {late} of {entries} ({late / entries:.1%})"
                   if entries else "late entries: none judged")
        if besides:
            summary += (f", {sum(r.late_besides for r in results)} late besides at "
                        f"{', '.join(sorted(besides))}")
        lines.append(summary)
        if p95s:
            within = sum(1 for p in p95s if p <= ON_TIME_S)
            lines.append(f"p95 entry spread: mean {sum(p95s) / len(p95s):,.0f} s, median "
                         f"{percentile(sorted(p95s), 0.5):,.0f} s; {within} of "
                         f"{len(results)} seeds within {ON_TIME_S:.0f} s")
        lines.append(f"airtime: mean {sum(r.airtime for r in results) / len(results):,.0f} s"
                     f"; the runs took {sum(r.wall for r in results):,.0f} s in all")
    return "\n".join(lines)


def scan_json(scenario: Scenario, policy: Policy, results: Sequence[SeedResult],
              besides: Collection[str] = ()) -> dict[str, Any]:
    """The scan as JSON-ready data."""
    return {"scenario": scenario.name, "duration": scenario.duration,
            "policy": policy.name, "besides": sorted(besides),
            "late_entries": sum(r.late for r in results),
            "entries": sum(r.entries for r in results),
            "seeds": [asdict(r) for r in results]}
