"""``make run``: simulate a mesh under two policies, analyze both captures in Spark.

::

    python -m spark.main_job [--scenario grid-25] [--policies reference,default]
                             [--seed N] [--duration S] [--out out/make-run]

1. runs the scenario once per policy in the simulator (the real Node code in virtual
   time), writing ``OUT/captures/SCENARIO-POLICY-seedN.cbor`` and printing what the
   simulator itself says about convergence;
2. converts the captures to Parquet and analyzes them in Spark (``local[*]``);
3. prints the summary, the policies side by side, and where ``index.html`` is.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from gateway import __version__

__all__ = ["main"]

DEFAULT_SCENARIO = "grid-25"
DEFAULT_POLICIES = "reference,default"


def _say(text: str) -> None:
    print(f"\n== {text}", flush=True)


def _simulate(scenario_name: str, policies: list[str], seed: int | None,
              duration: float | None, out: Path) -> list[Path]:
    from firmware_sim.cli import VirtualProgress
    from firmware_sim.runner import run_scenario
    from firmware_sim.scenario import load_scenario

    scenario = load_scenario(scenario_name)
    if duration is not None:
        scenario = scenario.with_(duration=duration)
    seed = scenario.seed if seed is None else seed
    out.mkdir(parents=True, exist_ok=True)
    captures = []
    for policy in policies:
        path = out / f"{scenario.name}-{policy}-seed{seed}.cbor"
        started = time.monotonic()
        bar = VirtualProgress(scenario.duration, f"simulate {policy}", always=True)
        try:
            summary = run_scenario(scenario, path, seed=seed, policy=policy, progress=bar)
        finally:
            bar.close()
        c = summary.convergence
        verdict = (f"converged at {c.time:.1f} s" if c.converged and c.time is not None
                   else f"not converged, {c.share:.1%} of (node, entry) pairs held")
        print(f"{scenario.name} / {policy}: {scenario.duration / 3600:g} virtual h in "
              f"{time.monotonic() - started:.1f} s; the simulator says: {verdict}; "
              f"airtime {sum(summary.tx_airtime.values()):.0f} s -> {path}", flush=True)
        captures.append(path)
    return captures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m spark.main_job",
                                 description="simulate a scenario under two policies and "
                                             "analyze the captures in Spark")
    ap.add_argument("--version", action="version", version=f"tinyssb {__version__}")
    ap.add_argument("--scenario", default=DEFAULT_SCENARIO,
                    help=f"shipped scenario or .toml file (default {DEFAULT_SCENARIO})")
    ap.add_argument("--policies", default=DEFAULT_POLICIES,
                    help=f"comma-separated policies (default {DEFAULT_POLICIES})")
    ap.add_argument("--seed", type=int, help="seed of the runs (default: the scenario's)")
    ap.add_argument("--duration", type=float, metavar="S",
                    help="virtual seconds per run (default: the scenario's)")
    ap.add_argument("--out", default="out/make-run", metavar="DIR",
                    help="where captures, dataset and report go (default out/make-run)")
    ap.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from firmware_sim.scenario import ScenarioError

    from .analyze import AnalyzeRequest, InputError, analyze
    from .dataset import DatasetError

    out = Path(args.out)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    started = time.monotonic()
    try:
        _say(f"1/3 simulate {args.scenario} under {' and '.join(policies)}")
        captures = _simulate(args.scenario, policies, args.seed, args.duration,
                             out / "captures")
        _say("2/3 convert the captures and analyze them in Spark")
        report = analyze(AnalyzeRequest([str(p) for p in captures], out, args.master),
                         lambda m: print(f"analyze: {m}", file=sys.stderr, flush=True))
    except (ScenarioError, InputError, DatasetError) as exc:
        print(f"main job: error: {exc}", file=sys.stderr)
        return 2
    _say("3/3 summary")
    print(report.text)
    print(f"\nmake run took {time.monotonic() - started:.0f} s; open "
          f"{report.index.resolve().as_uri()} in a browser", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
