"""``tinyssb run`` and ``tinyssb status``: the gateway daemon and a look at it."""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .isp import IspError, Role
from .isp.storage import KeyStoreError
from .runtime.config import (
    CONFIG_FILE,
    EXAMPLE,
    BleConfig,
    ConfigError,
    GatewayConfig,
    SerialConfig,
    UdpConfig,
    check_profile,
    check_ws_url,
    load_config,
    parse_listen,
)
from .runtime.control import ControlError, request
from .runtime.gateway import Gateway
from .runtime.isp_service import RoleError
from .runtime.links import build_links
from .runtime.secure_config import parse_allowed, parse_secure_peer
from .secure.netkey import parse_network_key
from .transports.base import LinkError

__all__ = ["add_gateway_commands", "add_run_arguments", "cmd_run", "gateway_config"]

log = logging.getLogger("tinyssb")

UserErrorFactory = Callable[[str], Exception]


def gateway_config(args: argparse.Namespace, root: Path) -> GatewayConfig:
    """The config file (``--config`` or the data dir's), then the flags on top."""
    path = Path(args.config).expanduser() if args.config else root / CONFIG_FILE
    cfg = load_config(path, required=args.config is not None)
    try:
        for item in args.ws_listen:
            cfg.ws_listen.append(parse_listen(item))
        for url in args.connect:
            cfg.ws_connect.append(check_ws_url(url))
        if args.udp or args.udp_interface or args.udp_loopback:
            cfg.udp = cfg.udp or UdpConfig()
            if args.udp_interface:
                cfg.udp.interface = args.udp_interface
            if args.udp_loopback:
                cfg.udp.loopback = True
        if args.serial:
            cfg.serial = SerialConfig(args.serial, check_profile(args.profile or "EU868.a"),
                                      args.board)
        elif cfg.serial is not None and args.profile:
            cfg.serial.profile = check_profile(args.profile)
        elif args.profile:
            raise ValueError("--profile needs a dongle: give --serial PORT too")
        if args.ble is not None:
            cfg.ble = BleConfig(args.ble or None)
        _secure_flags(args, cfg)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if args.capture:
        cfg.capture = Path(args.capture).expanduser()
    if args.name:
        cfg.name = args.name
    if args.status_interval is not None:
        cfg.status_interval = args.status_interval
    cfg.set_policy(args.policy)
    return cfg


def _secure_flags(args: argparse.Namespace, cfg: GatewayConfig) -> None:
    """``--secure-*`` and ``--network-key`` over the ``[secure]`` table; ValueError."""
    sec = cfg.secure
    flag = "--secure-listen"
    try:
        sec.listen.extend(parse_listen(item) for item in args.secure_listen)
        flag = "--secure-connect"
        sec.connect.extend(parse_secure_peer(item) for item in args.secure_connect)
        flag = "--secure-allow"
        sec.allow.update(parse_allowed(item) for item in args.secure_allow)
        flag = "--network-key"
        if args.network_key:
            sec.network_key = parse_network_key(args.network_key)
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None
    sec.check()


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
    if args.verbose == 0:  # the gateway's status lines are its output
        logging.getLogger().setLevel(logging.INFO)
        logging.getLogger("websockets").setLevel(logging.WARNING)
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


def _print_status(st: dict[str, Any]) -> None:
    print(f"gateway {st['name']}  {st['id']}")
    print(f"  up {st['uptime']:.0f} s, policy {st['policy']}, {st['feeds']} feeds, "
          f"{st['entries']} entries, GOSET {st['goset']['keys']} keys "
          f"(state {st['goset']['state']}...)")
    node = st["node"]
    drops = ", ".join(f"{k} {v}" for k, v in sorted(node["drops"].items())) or "none"
    print(f"  frames rx {node['rx']} tx {node['tx']}, stored {node['entries_stored']} "
          f"entries {node['chunks_stored']} chunks, dropped: {drops}")
    print(f"  faces ({len(st['faces'])}):")
    for f in st["faces"]:
        print(f"    {f['name']:<28} {f['kind']:<9} rx {f.get('rx', 0):<7} tx {f.get('tx', 0):<7} "
              f"queue {f['queue']}  via {f['link']}")
    print(f"  links ({len(st['links'])}):")
    for link in st["links"]:
        ids = link.get("identities") or {}  # secure links: who each peer proved to be
        peers = ", ".join(f"{p} {ids[p]}" if p in ids else p
                          for p in link.get("peers", [])) or "no peers"
        print(f"    {link['name']}: {link.get('state', '?')}, {peers}")
    if st.get("capture"):
        print(f"  capture: {st['capture']}")


def cmd_status(args: argparse.Namespace, user_error: UserErrorFactory, root: Path) -> int:
    try:
        st = request(root, {"cmd": "status"})
    except ControlError as exc:
        raise user_error(str(exc)) from None
    st.pop("ok", None)
    if args.json:
        print(json.dumps(st, indent=2))
    else:
        _print_status(st)
    return 0


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
    sp.add_argument("--board", help="the dongle's board (hardware/boards), for its serial lines")
    sp.add_argument("--ble", nargs="?", const="", metavar="ADDR",
                    help="BLE central: connect to ADDR, or scan for tinySSB peripherals")
    sp.add_argument("--capture", metavar="FILE", help="record every frame and entry to FILE")
    sp.add_argument("--policy", metavar="NAME", help="replication policy: default (radio), ip "
                    "or reference (default: ip unless a dongle or BLE is used)")
    sp.add_argument("--name", help="node name in logs and captures (default: gateway)")
    sp.add_argument("--status-interval", type=float, metavar="S",
                    help="seconds between status lines (0: none; default 10)")
