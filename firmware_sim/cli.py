"""``tinyssb sim``: list the shipped scenarios, run one, or bridge one to a real gateway.

``gateway/cli.py`` calls :func:`add_sim_commands` with its subparsers object::

    tinyssb sim list
    tinyssb sim run SCENARIO [--out FILE] [--policy reference|default] [--seed N]
                             [--duration S] [--set KEY=VALUE ...]
    tinyssb sim scan SCENARIO [--seeds 1-16] [--policy P] [--set KEY=VALUE ...]
                              [--duration S] [--jobs N] [--besides NODES] [--json]
    tinyssb sim dongle SCENARIO --node NAME [--board BOARD] [--out FILE] [--seed N]
                                [--policy P] [--duration S]
    tinyssb sim oracle SCENARIO [--seed N] [--duration S] [--gap S] [--beacon S] [--json]

SCENARIO is the name of a shipped scenario or the path of a ``.toml`` file. ``run``
shows a progress bar on stderr and prints the summary table on stdout. ``dongle``
replaces the named node's radio with a simulated dongle, prints the pseudo-terminal to
give to ``tinyssb run --serial``, and runs the rest of the mesh in real time. ``oracle``
runs a LoRa scenario under a scheduler that knows what every node holds
(:mod:`firmware_sim.oracle`): what replication could reach on that channel. ``scan``
runs a scenario once per seed in worker processes and counts the late entries
(:mod:`firmware_sim.scan`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.capture import ZSTD_SUFFIX
from gateway.errors import UserError
from gateway.replication.policy import PRESETS, Policy

from .estimate import capture_bytes
from .oracle import OracleError, check_scenario, format_oracle, oracle_json, run_oracle
from .realtime import DongleBridge
from .runner import CaptureSinks, build, capture_meta, run_scenario
from .scan import format_scan, parse_seeds, parse_settings, scan, scan_json
from .scenario import Scenario, ScenarioError, load_scenario, shipped_scenarios
from .summary import format_summary, summary_json

__all__ = ["add_sim_commands", "parse_duration"]

log = logging.getLogger("tinyssb.sim")
WARN_BYTES = 500_000_000  # a capture this large gets a warning before the run
# a capture estimated this large is written by a second process (firmware_sim.background):
# starting it costs about a third of a second, writing 100 MB in the run's process about
# one and a half
BACKGROUND_BYTES = 100_000_000

Command = Callable[[argparse.Namespace], int]


def _user_error(message: str) -> Exception:
    return UserError(message)


def _guard(func: Command) -> Command:
    """Turn a bad scenario into the CLI's one-line user error."""
    def run(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except ScenarioError as exc:
            raise _user_error(str(exc)) from None
    return run


def parse_duration(text: str) -> float:
    """An argparse type: seconds, or a number with ms/s/m/h/d (``90``, ``15m``, ``24h``)."""
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
    number, unit = text.strip(), "s"
    for suffix in sorted(units, key=len, reverse=True):
        if number.endswith(suffix):
            number, unit = number[: -len(suffix)], suffix
            break
    try:
        value = float(number) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (try 3600, 90m or 24h)"
                                         ) from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"a duration must be positive, got {text!r}")
    return value


def _scenario(args: argparse.Namespace) -> Scenario:
    scenario = load_scenario(args.scenario)
    if args.duration is not None:
        scenario = scenario.with_(duration=args.duration)
    return scenario


# --- sim list -------------------------------------------------------------------------

def cmd_list(args: argparse.Namespace) -> int:
    rows = []
    for name in shipped_scenarios():
        s = load_scenario(name)
        rows.append((name, str(len(s.nodes)), f"{s.duration / 3600:g} h", s.radio.profile,
                     s.description))
    if args.json:
        print(json.dumps([{"name": s.name, "nodes": len(s.nodes), "duration_s": s.duration,
                           "profile": s.radio.profile, "description": s.description}
                          for s in map(load_scenario, shipped_scenarios())], indent=2))
        return 0
    head = ("scenario", "nodes", "duration", "radio", "description")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    for row in [head, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row[:4], widths)) + "  " + row[4])
    return 0


# --- sim run --------------------------------------------------------------------------

class VirtualProgress:
    """A tqdm bar over virtual seconds, fed by the simulator's progress callback (silent
    when stderr is not a terminal, unless ``always``)."""

    def __init__(self, total: float, label: str, *, always: bool = False) -> None:
        from tqdm import tqdm

        self.bar: Any = tqdm(total=round(total), unit="s", desc=label, file=sys.stderr,
                             disable=False if always else None, dynamic_ncols=True,
                             leave=False,
                             bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}"
                                        " virtual s [{elapsed}<{remaining}]")
        self.done = 0

    def __call__(self, now: float) -> None:
        step = round(now) - self.done
        if step > 0:
            self.bar.update(step)
            self.done += step

    def close(self) -> None:
        self.bar.close()


def _policy(args: argparse.Namespace, scenario: Scenario) -> Policy:
    """The preset named (or the scenario's) with the ``--set`` settings changed."""
    try:
        return parse_settings(args.policy or scenario.policy, args.set or [])
    except ValueError as exc:
        raise _user_error(f"--set: {exc}") from None


def cmd_run(args: argparse.Namespace) -> int:
    scenario = _scenario(args)
    seed = scenario.seed if args.seed is None else args.seed
    chosen = _policy(args, scenario)
    out: Path | None = None
    background = False
    if not args.no_capture:
        out = Path(args.out) if args.out else Path(f"{scenario.name}-{chosen.name}-seed{seed}.cbor")
        if not out.parent.is_dir():
            raise _user_error(f"cannot write capture {out}: no directory {out.parent}")
        _warn_size(scenario, out)
        background = (capture_bytes(scenario) or 0) >= BACKGROUND_BYTES
    progress = VirtualProgress(scenario.duration, scenario.name)
    try:
        summary = run_scenario(scenario, out, seed=seed, policy=chosen, progress=progress,
                               isp_direct=args.direct, background=background)
    finally:
        progress.close()
    if args.json:
        print(json.dumps({**summary_json(summary),
                          "capture": str(out) if out is not None else None}, indent=2))
        return 0
    print(format_summary(summary))
    if out is not None:
        print(f"\ncapture: {out}")
    return 0


def _warn_size(scenario: Scenario, out: Path) -> None:
    """Say so before a run writes a large capture, and how to make it smaller."""
    size = capture_bytes(scenario)
    if size is None:
        return
    compressed = out.name.endswith(ZSTD_SUFFIX)
    if compressed:
        size //= 10  # zstd takes captures to about a tenth
    if size >= WARN_BYTES:
        hint = "" if compressed else (f"; name it {out.name}{ZSTD_SUFFIX} to compress it "
                                      "to about a tenth, or pass --no-capture")
        log.warning("%s will write a capture of about %.1f GB to %s (its radios at their "
                    "duty-cycle limit)%s", scenario.name, size / 1e9, out, hint)


# --- sim scan -------------------------------------------------------------------------

def cmd_scan(args: argparse.Namespace) -> int:
    scenario = _scenario(args)
    chosen = _policy(args, scenario)
    try:
        seeds = parse_seeds(args.seeds)
    except ValueError as exc:
        raise _user_error(f"--seeds: {exc}") from None
    besides = [n.strip() for n in (args.besides or "").split(",") if n.strip()]
    names = {n.name for n in scenario.nodes}
    if unknown := [n for n in besides if n not in names]:
        raise _user_error(f"--besides: scenario {scenario.name} has no node "
                          f"{', '.join(unknown)}")
    if args.jobs < 1:
        raise _user_error("--jobs must be at least 1")
    from tqdm import tqdm

    bar: Any = tqdm(total=len(seeds), unit="seed", desc=f"{scenario.name} ({chosen.name})",
                    file=sys.stderr, leave=False, dynamic_ncols=True, disable=None)
    try:
        results = scan(scenario, seeds, chosen, besides=besides, jobs=args.jobs,
                       done=lambda _r: bar.update(1))
    finally:
        bar.close()
    if args.json:
        print(json.dumps(scan_json(scenario, chosen, results, besides), indent=2))
    else:
        print(format_scan(scenario, chosen, results, besides))
    return 0


# --- sim oracle -----------------------------------------------------------------------

def cmd_oracle(args: argparse.Namespace) -> int:
    scenario = _scenario(args)
    try:
        check_scenario(scenario)
    except OracleError as exc:
        raise _user_error(str(exc)) from None
    progress = VirtualProgress(scenario.duration, f"{scenario.name} (oracle)")
    try:
        result = run_oracle(scenario, seed=args.seed, gap=args.gap, beacon=args.beacon,
                            progress=progress)
    finally:
        progress.close()
    if args.json:
        print(json.dumps(oracle_json(result), indent=2))
    else:
        print(format_oracle(result))
    return 0


# --- sim dongle -----------------------------------------------------------------------

def _interrupt_on_stop_signals() -> None:
    """Ctrl-C and SIGTERM (how a service manager or ``kill`` stops it) both end the
    real-time mesh cleanly, whatever the process inherited: a shell starts background
    commands with SIGINT ignored, and the mesh then ran on until killed, its capture left
    unfinished."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, interrupt)
        signal.signal(signal.SIGTERM, interrupt)


def cmd_dongle(args: argparse.Namespace) -> int:
    scenario = _scenario(args)
    spec = next((n for n in scenario.nodes if n.name == args.node), None)
    if spec is None:
        raise _user_error(f"scenario {scenario.name} has no node {args.node!r}; its nodes: "
                          f"{', '.join(n.name for n in scenario.nodes[:20])}"
                          f"{' ...' if len(scenario.nodes) > 20 else ''}")
    if "lora" not in spec.radios:
        raise _user_error(f"node {spec.name} has no LoRa radio to replace with a dongle")
    seed = scenario.seed if args.seed is None else args.seed
    policy = args.policy or scenario.policy
    others = [n.name for n in scenario.nodes if n.name != spec.name]  # the simulated ones
    sinks = CaptureSinks(capture_meta(scenario, seed, policy)
                         | {"dongle": spec.name, "nodes": others}, args.out)
    radio = scenario.radio
    try:
        sim = build(scenario, seed=seed, policy=policy, without={spec.name},
                    capture=sinks.sink)
        bridge = DongleBridge(sim, spec.name, spec.x, spec.y, radio.params,
                              board=args.board, duty_cycle=radio.duty_cycle,
                              duty_window=radio.duty_window)
    except ValueError as exc:
        sinks.abort()
        raise _user_error(str(exc)) from None
    stop = threading.Event()
    _interrupt_on_stop_signals()
    with bridge:
        try:  # (a stop signal right after the first line used to escape: exit 130)
            print(f"simulated dongle for node {spec.name} ({radio.profile}): {bridge.path}",
                  flush=True)
            print(f"e.g. tinyssb --data DIR run --serial {bridge.path} --profile "
                  f"{radio.profile}   (Ctrl-C stops the mesh)", file=sys.stderr, flush=True)
            bridge.run(scenario.duration, stop)
        except KeyboardInterrupt:
            stop.set()
    print(format_summary(sinks.close()))
    print(f"dongle: {bridge.sent} frames sent, {bridge.heard} heard "
          f"({bridge.missed} while not listening)")
    return 0


# --- wiring ---------------------------------------------------------------------------

def _add_scenario_args(p: argparse.ArgumentParser, policies: list[str], *,
                       seed: bool = True) -> None:
    """SCENARIO, --policy, --seed (unless ``seed`` is false) and --duration."""
    p.add_argument("scenario", metavar="SCENARIO",
                   help="a shipped scenario (see `tinyssb sim list`) or a .toml file")
    p.add_argument("--policy", choices=policies,
                   help="replication policy of every node (default: the scenario's)")
    if seed:
        p.add_argument("--seed", type=int, help="seed of the run (default: the scenario's)")
    p.add_argument("--duration", type=parse_duration, metavar="S",
                   help="virtual seconds to run (or 90m, 24h; default: the scenario's)")


def _add_set(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="change a setting of the policy, as in a config file's [policy] "
                        "table (e.g. --set credit=8 --set answer_window=48; repeatable)")


def add_sim_commands(sub: Any) -> None:
    """Add ``sim`` and its subcommands to the ``tinyssb`` subparsers object ``sub``."""
    help_text = "simulate a LoRa/BLE mesh of real nodes in virtual time"
    sp = sub.add_parser("sim", help=help_text, description=help_text)
    ssub = sp.add_subparsers(dest="sim_command", required=True, metavar="SUBCOMMAND")

    def add(name: str, func: Command, text: str) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = ssub.add_parser(name, help=text, description=text)
        p.set_defaults(func=_guard(func))
        return p

    add("list", cmd_list, "list the shipped scenarios").add_argument(
        "--json", action="store_true", help="machine-readable output")
    text = ("run a LoRa scenario under an omniscient scheduler: what replication could "
            "reach on its channel, a yardstick for the policies")
    p = add("oracle", cmd_oracle, text)
    p.add_argument("scenario", metavar="SCENARIO",
                   help="a shipped scenario (see `tinyssb sim list`) or a .toml file")
    p.add_argument("--seed", type=int, help="seed of the run (default: the scenario's)")
    p.add_argument("--duration", type=parse_duration, metavar="S",
                   help="virtual seconds to run (or 90m, 24h; default: the scenario's)")
    p.add_argument("--gap", type=parse_duration, metavar="S",
                   help="least time between two frames of one radio (default: half its "
                        "duty-cycle pace, a data frame's airtime over the duty cycle)")
    p.add_argument("--beacon", type=parse_duration, metavar="S",
                   help="know only what beacons tell: each radio beacons its holdings "
                        "every S seconds (a WANT-sized frame, on the air)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    policies = sorted(PRESETS)
    text = ("run a scenario once per seed (no captures) and count the entries some node "
            "held only after 900 s: one seed of a large mesh is a draw")
    p = add("scan", cmd_scan, text)
    _add_scenario_args(p, policies, seed=False)
    p.add_argument("--seeds", default="1-8",
                   help="seeds to run: 1-16, 3 or 1,4,9-12 (default 1-8)")
    _add_set(p)
    p.add_argument("--jobs", "-j", type=int, default=max(1, os.cpu_count() or 1),
                   help="runs at a time, each in its own process (default: one per CPU)")
    p.add_argument("--besides", metavar="NODES",
                   help="also count the late entries leaving out these nodes "
                        "(comma-separated: a known pocket)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    commands: list[tuple[str, Command, str]] = [
        ("run", cmd_run,
         "run a scenario in virtual time; write its capture and print a summary"),
        ("dongle", cmd_dongle,
         ("run a scenario in real time with one node's radio exposed as a simulated "
          "dongle on a pseudo-terminal")),
    ]
    for name, func, text in commands:
        p = add(name, func, text)
        _add_scenario_args(p, policies)
        if name == "run":
            _add_set(p)
            p.add_argument("--out", "-o", metavar="FILE",
                           help="capture file (default: SCENARIO-POLICY-seedN.cbor here); "
                                "a name ending in .zst is written zstd-compressed")
            p.add_argument("--no-capture", action="store_true",
                           help="write no capture, only print the summary")
            p.add_argument("--json", action="store_true",
                           help="print the summary as JSON")
            p.add_argument("--direct", action="store_true",
                           help="for a scenario with an [isp] table: no ISP, every chat on "
                                "a plain feed replicated through the GOSET (the baseline)")
        else:
            p.add_argument("--node", required=True, metavar="NAME",
                           help="the node whose radio becomes the simulated dongle")
            p.add_argument("--board", default="heltec_v3",
                           help="board the simulated dongle reports (default heltec_v3)")
            p.add_argument("--out", "-o", metavar="FILE", help="also write a capture")
