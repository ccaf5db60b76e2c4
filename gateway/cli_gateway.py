"""``tinyssb run`` and ``tinyssb status``: the gateway daemon and a look at it."""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

from .isp import IspError, Role
from .isp.storage import KeyStoreError
from .logsetup import setup_logging
from .runtime.config import (
    CONFIG_FILE,
    EXAMPLE,
    ConfigError,
    GatewayConfig,
    Override,
    load_config,
)
from .runtime.control import ControlError, request
from .runtime.gateway import Gateway
from .runtime.isp_service import RoleError
from .runtime.links import build_links
from .status_view import status_view
from .transports.base import LinkError

__all__ = ["add_gateway_commands", "add_run_arguments", "cmd_run", "gateway_config"]

log = logging.getLogger("tinyssb")

UserErrorFactory = Callable[[str], Exception]


def run_overrides(args: argparse.Namespace) -> list[Override]:
    """Each flag given, as the config key it sets (adding a flag: one line here)."""
    o: list[Override] = []
    o += [Override("--ws-listen", ("websocket", "listen"), v, append=True)
          for v in args.ws_listen]
    o += [Override("--connect", ("websocket", "connect"), v, append=True) for v in args.connect]
    for flag, key, values in (("--secure-listen", "listen", args.secure_listen),
                              ("--secure-connect", "connect", args.secure_connect),
                              ("--secure-allow", "allow", args.secure_allow)):
        o += [Override(flag, ("secure", key), v, append=True) for v in values]
    if args.network_key:
        o.append(Override("--network-key", ("secure", "network_key"), args.network_key))
    if args.udp or args.udp_interface or args.udp_loopback:
        o.append(Override("--udp", ("udp", "enabled"), True))
    if args.udp_interface:
        o.append(Override("--udp-interface", ("udp", "interface"), args.udp_interface))
    if args.udp_loopback:
        o.append(Override("--udp-loopback", ("udp", "loopback"), True))
    for flag, key, value in (("--serial", "port", args.serial),
                             ("--profile", "profile", args.profile),
                             ("--board", "board", args.board),
                             ("--power", "power", args.power)):
        if value is not None:
            o.append(Override(flag, ("serial", key), value))
    if args.ble is not None:
        o.append(Override("--ble", ("ble", "enabled"), True))
        if args.ble:
            o.append(Override("--ble", ("ble", "address"), args.ble))
    for flag, key, value in (("--capture", "capture", args.capture),
                             ("--name", "name", args.name),
                             ("--status-interval", "status_interval", args.status_interval),
                             ("--scrub-interval", "scrub_interval", args.scrub_interval)):
        if value is not None:
            o.append(Override(flag, (key,), value))
    return o


def gateway_config(args: argparse.Namespace, root: Path) -> GatewayConfig:
    """The config file (``--config`` or the data dir's), then the flags on top."""
    path = Path(args.config).expanduser() if args.config else root / CONFIG_FILE
    cfg = load_config(path, required=args.config is not None, overrides=run_overrides(args))
    try:
        cfg.secure.check()
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    cfg.set_policy(args.policy)
    return cfg


def cmd_network_key(args: argparse.Namespace, user_error: UserErrorFactory, root: Path) -> int:
    print(base64.b64encode(os.urandom(32)).decode())
    return 0


def cmd_run(args: argparse.Namespace, user_error: UserErrorFactory, root: Path, *,
            isp_role: Role | None = None) -> int:
    if args.example_config:
        print(EXAMPLE, end="")
        return 0
    try:
        cfg = gateway_config(args, root)
    except ConfigError as exc:
        raise user_error(str(exc)) from None
    if not cfg.has_faces():
        raise user_error("no links to run: give --ws-listen PORT, --connect ws://HOST:PORT, "
                         "--secure-listen PORT, --secure-connect HOST:PORT@ID, "
                         f"--udp, --serial PORT or --ble, or write {root / CONFIG_FILE} "
                         "(`tinyssb run --example-config` prints one)")
    if cfg.capture is not None and not cfg.capture.parent.is_dir():
        raise user_error(f"cannot write capture {cfg.capture}: no directory "
                         f"{cfg.capture.parent}")
    setup_logging(args.verbose, service=True)  # the gateway's status lines are its output
    gateway = Gateway(root, cfg, build_links(cfg), isp_role=isp_role)
    try:
        asyncio.run(_serve(gateway))
    except (LinkError, RoleError, IspError, KeyStoreError) as exc:
        raise user_error(str(exc)) from None
    return 0


async def _serve(gateway: Gateway) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, gateway.stop)
    try:
        await gateway.run()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    log.info("gateway stopped")


def cmd_status(args: argparse.Namespace, user_error: UserErrorFactory, root: Path) -> int:
    if args.watch is not None:
        return _watch(root, args.watch, args.json)
    try:
        st = request(root, {"cmd": "status"})
    except ControlError as exc:
        raise user_error(str(exc)) from None
    st.pop("ok", None)
    if args.json:
        print(json.dumps(st, indent=2))
    else:
        _console().print(status_view(st))
    return 0


def _console() -> Console:
    """A terminal's own width; 132 columns into a pipe or file (rich would take 80)."""
    return Console(width=None if sys.stdout.isatty() else 132)


def _watch(root: Path, interval: float, as_json: bool) -> int:
    """Ask again every ``interval`` seconds until Ctrl-C; a gateway that is not (or no
    longer) there is shown as such and asked again."""
    def view() -> Any:
        try:
            st = request(root, {"cmd": "status"})
        except ControlError as exc:
            return Text(f"{exc} (asking again every {interval:g} s; Ctrl-C stops)")
        st.pop("ok", None)
        return status_view(st)

    try:
        if as_json:  # one JSON document per line, for a log or jq
            while True:
                try:
                    st = request(root, {"cmd": "status"})
                    st.pop("ok", None)
                except ControlError as exc:
                    st = {"error": str(exc)}
                print(json.dumps(st), flush=True)
                time.sleep(interval)
        with Live(view(), console=_console(), auto_refresh=False, screen=False) as live:
            while True:
                time.sleep(interval)
                live.update(view(), refresh=True)
    except KeyboardInterrupt:
        return 0


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0.1 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"must be between 0.1 and 3600 seconds, got {text}")
    return value


def add_gateway_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                         user_error: UserErrorFactory,
                         data_dir: Callable[[argparse.Namespace], Path]) -> None:
    def bind(func: Callable[[argparse.Namespace, UserErrorFactory, Path], int]
             ) -> Callable[[argparse.Namespace], int]:
        return lambda args: func(args, user_error, data_dir(args))

    help_run = "run the gateway: replicate feeds over WebSocket, UDP, a LoRa dongle and BLE"
    sp = sub.add_parser("run", help=help_run, description=help_run + ". Links come from "
                        f"the config file (--config, default DATA/{CONFIG_FILE}) and the "
                        "flags, which add to it. SIGINT/SIGTERM stop it cleanly.")
    sp.set_defaults(func=bind(cmd_run))
    add_run_arguments(sp)

    help_key = "print a fresh random network key for a deployment's secure links"
    sp = sub.add_parser("network-key", help=help_key, description=help_key + ": put it in "
                        "[secure] network_key of every gateway of the deployment "
                        "(docs/gateway.md)")
    sp.set_defaults(func=bind(cmd_network_key))

    help_status = "show a running gateway's faces, peers and feed counts"
    sp = sub.add_parser("status", help=help_status, description=help_status)
    sp.set_defaults(func=bind(cmd_status))
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    sp.add_argument("--watch", nargs="?", const=1.0, type=_interval, metavar="SECONDS",
                    help="refresh the view every SECONDS (default 1) until Ctrl-C")


def add_run_arguments(sp: argparse.ArgumentParser) -> None:
    """The flags of ``tinyssb run`` (``tinyssb isp serve`` takes them too)."""
    sp.add_argument("--config", metavar="FILE", help=f"TOML config (default: DATA/{CONFIG_FILE} "
                    "if present)")
    sp.add_argument("--example-config", action="store_true",
                    help="print a commented config file and exit")
    sp.add_argument("--ws-listen", action="append", default=[], metavar="[HOST:]PORT",
                    help="accept WebSocket peers on PORT (repeatable)")
    sp.add_argument("--connect", action="append", default=[], metavar="ws://HOST:PORT",
                    help="connect to a WebSocket peer (repeatable)")
    sp.add_argument("--secure-listen", action="append", default=[], metavar="[HOST:]PORT",
                    help="accept secure (SHS + box stream) peers on PORT (repeatable)")
    sp.add_argument("--secure-connect", action="append", default=[], metavar="HOST:PORT@ID",
                    help="connect to a secure peer that must prove identity ID (repeatable)")
    sp.add_argument("--secure-allow", action="append", default=[], metavar="ID",
                    help="a peer identity that may connect to --secure-listen (repeatable)")
    sp.add_argument("--network-key", metavar="KEY",
                    help="the deployment's network key for secure links (64 hex digits or "
                    "base64; default: the tinySSB default key)")
    sp.add_argument("--udp", action="store_true", help="join UDP multicast 239.5.5.8:1558")
    sp.add_argument("--udp-interface", metavar="ADDR",
                    help="local address of the multicast interface (implies --udp)")
    sp.add_argument("--udp-loopback", action="store_true",
                    help="deliver multicast to other gateways on this host (implies --udp)")
    sp.add_argument("--serial", metavar="PORT", help="the LoRa dongle's serial port")
    sp.add_argument("--profile", metavar="NAME",
                    help="radio plan for the dongle (default EU868.a: 868.3 MHz, 125 kHz, "
                    "SF7; `tinyssb dongle profiles` lists them)")
    sp.add_argument("--power", type=int, metavar="DBM",
                    help="the dongle's transmit power in dBm (default: the profile's legal "
                         "default, 14 on EU868; refused above the region's limit)")
    sp.add_argument("--board", help="the dongle's board (hardware/boards), for its serial lines")
    sp.add_argument("--ble", nargs="?", const="", metavar="ADDR",
                    help="BLE central: connect to ADDR, or scan for tinySSB peripherals")
    sp.add_argument("--capture", metavar="FILE", help="record every frame and entry to FILE")
    sp.add_argument("--policy", metavar="NAME", help="replication policy: default (radio), ip "
                    "or reference (default: ip unless a dongle or BLE is used)")
    sp.add_argument("--name", help="node name in logs and captures (default: gateway)")
    sp.add_argument("--status-interval", type=float, metavar="S",
                    help="seconds between status lines (0: none; default 10)")
    sp.add_argument("--scrub-interval", type=float, metavar="S",
                    help="seconds between background scrub steps, each verifying "
                         "scrub_batch records (0: no scrub; default 5)")
