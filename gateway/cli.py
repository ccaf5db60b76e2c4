"""The ``tinyssb`` command."""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from . import __version__
from .cli_gateway import add_gateway_commands
from .cli_isp import add_isp_commands
from .cli_verify import add_verify_command
from .errors import EXIT_USER_ERROR, UserError
from .logsetup import setup_logging
from .render import render_content
from .runtime.control import ControlError, request_holder
from .store import DiskStore, FeedStore, StoreError
from .store.disk import StoreLockedError
from .store.keys import KEY_FILE, load_key, load_or_create_key
from .transports.dongle_proto import Cmd, RadioConfig
from .transports.serial_dongle import DongleInfo, DongleLinkError, apply_settings, read_info
from .wire import bipf
from .wire.entry import FeedKey, chunks_needed
from .wire.errors import WireError
from .wire.ident import format_id, parse_id
from .wire.lora import PROFILES, check_power, power_limit, power_limit_at

log = logging.getLogger("tinyssb")

DEFAULT_DATA = "~/.tinyssb"


def data_dir(args: argparse.Namespace) -> Path:
    return Path(os.path.expanduser(args.data))


def ensure_data_dir(args: argparse.Namespace) -> Path:
    root = data_dir(args)
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise UserError(f"cannot create data directory {root}: {exc.strerror}; "
                        "pass --data DIR") from None
    if not root.is_dir():
        raise UserError(f"data directory {root} is not a directory; pass --data DIR")
    return root


def open_store(args: argparse.Namespace, readonly: bool) -> FeedStore:
    root = data_dir(args)
    if readonly and not root.exists():
        raise UserError(f"data directory {root} does not exist; run `tinyssb id` first "
                        "or pass --data DIR")
    return DiskStore(root, readonly=readonly)


def own_key(args: argparse.Namespace) -> FeedKey | None:
    path = data_dir(args) / KEY_FILE
    return load_key(path) if path.exists() else None


def resolve_feed(args: argparse.Namespace, text: str, store: FeedStore) -> bytes:
    if text in ("me", "self"):
        key = own_key(args)
        if key is None:
            raise UserError("no own identity yet; run `tinyssb id` first")
        fid = key.fid
    else:
        fid = parse_id(text)
    if fid not in store:
        raise UserError(f"unknown feed {format_id(fid)}; `tinyssb feeds` lists the feeds held")
    return fid


# --- commands ------------------------------------------------------------------------

def cmd_id(args: argparse.Namespace) -> int:
    root = ensure_data_dir(args)
    key, created = load_or_create_key(root)
    if created:
        log.info("created a new identity in %s", root / KEY_FILE)
    if args.json:
        print(json.dumps({"id": format_id(key.fid), "hex": key.fid.hex(), "created": created}))
    else:
        print(key.fid.hex() if args.hex else format_id(key.fid))
    return 0


def tav_post(text: str, now: float) -> bytes:
    """A public text post in the tinySSB app layout: ["TAV", tips, text, voice, unix_s]."""
    return bipf.encode(["TAV", [], text, None, int(now)])


def cmd_publish(args: argparse.Namespace) -> int:
    if args.text is not None and args.file is not None:
        raise UserError("give either TEXT or --file, not both")
    if args.text is not None:
        source = "TEXT"
        content = tav_post(args.text, time.time()) if args.text or args.allow_empty else b""
    elif args.file is not None:
        source = "stdin" if args.file == "-" else args.file
        content = _read_input(args.file)
    elif not sys.stdin.isatty():
        source = "stdin"
        content = sys.stdin.buffer.read()
    else:
        raise UserError("nothing to publish: give TEXT, --file FILE or pipe content to stdin")
    if not content and not args.allow_empty:
        # cron or ssh without a terminal: an empty stdin would append an empty entry per run
        raise UserError(f"nothing to publish: {source} is empty; pass --allow-empty to "
                        "publish an empty entry anyway")
    root = ensure_data_dir(args)
    key, created = load_or_create_key(root)
    if created:
        log.info("created a new identity %s", format_id(key.fid))
    try:
        with DiskStore(root) as store:
            entry = store.publish(key, content)
    except StoreLockedError:
        # a gateway runs on this data directory: it publishes for us
        try:
            answer = request_holder(root, {"cmd": "publish",
                                           "content": base64.b64encode(content).decode()})
        except ControlError as exc:
            raise UserError(str(exc)) from None
        _print_published(args, answer["seq"], key.fid, len(content), via_gateway=True)
        return 0
    _print_published(args, entry.seq, key.fid, len(content), via_gateway=False)
    return 0


def _print_published(args: argparse.Namespace, seq: int, fid: bytes, size: int, *,
                     via_gateway: bool) -> None:
    if args.json:
        print(json.dumps({"id": format_id(fid), "seq": seq, "bytes": size,
                          "via_gateway": via_gateway}))
    else:
        print(seq)


def _read_input(name: str) -> bytes:
    if name == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(name).read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read {name}: {exc.strerror}") from None


def cmd_feeds(args: argparse.Namespace) -> int:
    with open_store(args, readonly=True) as store:
        key = own_key(args)
        infos = store.infos()
    own = key.fid if key else None
    if args.json:
        rows = [{"id": format_id(i.fid), "hex": i.fid.hex(), "length": i.length,
                 "missing_chunks": i.missing_chunks, "own": i.fid == own,
                 "incomplete": [{"seq": s, "have": h, "need": n} for s, h, n in i.incomplete]}
                for i in infos]
        print(json.dumps(rows, indent=2))
        return 0
    if not infos:
        print("no feeds yet (`tinyssb publish TEXT` starts your own)")
        return 0
    for i in infos:
        extra = f", {i.missing_chunks} chunks missing" if i.missing_chunks else ""
        mark = "  (own)" if i.fid == own else ""
        print(f"{format_id(i.fid)}  {i.length} entries{extra}{mark}")
    return 0


def _show_entry(store: FeedStore, fid: bytes, seq: int, raw: bool) -> None:
    content = store.read_content(fid, seq)
    if raw:
        if content is not None:
            sys.stdout.buffer.write(content)
            sys.stdout.buffer.flush()
        return
    if content is None:
        info = store.info(fid)
        have = next(((h, n) for s, h, n in info.incomplete if s == seq), None)
        state = f"side chain incomplete, {have[0]}/{have[1]} chunks" if have else "absent"
        print(f"--- #{seq} ({state})")
        return
    packet = store.read_packet(fid, seq)
    chunks = chunks_needed(packet) if packet else 0
    where = f", {chunks} side-chain chunk{'s' if chunks != 1 else ''}" if chunks else ""
    print(f"--- #{seq} ({len(content)} B{where})")
    print(render_content(content))


def cmd_cat(args: argparse.Namespace) -> int:
    with open_store(args, readonly=True) as store:
        fid = resolve_feed(args, args.feed, store)
        length = store.replica(fid).max_seq
        if args.seq is not None:
            if not 1 <= args.seq <= length:
                raise UserError(f"feed {format_id(fid)} has entries 1..{length}, "
                                f"not {args.seq}")
            if args.raw and store.read_content(fid, args.seq) is None:
                raise UserError(f"entry {args.seq} is not complete yet (side chain missing)")
        seqs = [args.seq] if args.seq is not None else list(range(1, length + 1))
        if args.json:
            print(json.dumps([_entry_json(store, fid, seq) for seq in seqs], indent=2))
            return 0
        for seq in seqs:
            _show_entry(store, fid, seq, args.raw)
    return 0


def _entry_json(store: FeedStore, fid: bytes, seq: int) -> dict[str, object]:
    content = store.read_content(fid, seq)
    packet = store.read_packet(fid, seq)
    row: dict[str, object] = {"feed": format_id(fid), "seq": seq,
                              "complete": content is not None,
                              "chunks": chunks_needed(packet) if packet else 0}
    if content is None:
        have = next(((h, n) for s, h, n in store.info(fid).incomplete if s == seq), None)
        row["chunks_held"] = have[0] if have else 0
        return row
    row.update(bytes=len(content), content_base64=base64.b64encode(content).decode(),
               text=render_content(content))
    return row


def cmd_follow(args: argparse.Namespace) -> int:
    shown = args.since
    with open_store(args, readonly=True) as store:
        fid = resolve_feed(args, args.feed, store)
    try:
        while True:
            with open_store(args, readonly=True) as store:
                length = store.replica(fid).max_seq if fid in store else 0
                while shown < length and store.read_content(fid, shown + 1) is not None:
                    shown += 1
                    if args.json:  # JSON lines: one entry per line, as `cat --json` has it
                        print(json.dumps(_entry_json(store, fid, shown)))
                    else:
                        _show_entry(store, fid, shown, raw=False)
            sys.stdout.flush()
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0


# --- dongle -----------------------------------------------------------------------------

DONGLE_ENV = "TINYSSB_DONGLE"
FULL_FRAME = 124  # a 120-byte packet and its CRC32


def dongle_port(args: argparse.Namespace) -> str:
    port: str | None = args.port or os.environ.get(DONGLE_ENV)
    if not port:
        raise UserError(f"no dongle port: pass --port /dev/ttyUSB0 (or set ${DONGLE_ENV})")
    return port


def matching_profiles(radio: RadioConfig) -> list[str]:
    """Profile names whose frequency, bandwidth, SF, CR and sync word equal ``radio``'s."""
    return [name for name, p in PROFILES.items()
            if (p.frequency_hz, p.bandwidth_hz, p.sf, p.cr, p.sync_word)
            == (radio.frequency_hz, radio.bandwidth_hz, radio.sf, radio.cr, radio.sync_word)]


def dongle_info_json(info: DongleInfo) -> dict[str, object]:
    r, d, a, st = info.radio, info.duty, info.airtime, info.stats
    return {
        "port": info.port,
        "protocol": info.identity.protocol, "firmware": info.identity.firmware,
        "board": info.identity.board, "chip": info.identity.chip,
        "radio": {"on": info.radio_on, "frequency_hz": r.frequency_hz,
                  "bandwidth_hz": r.bandwidth_hz, "sf": r.sf, "cr": r.cr,
                  "sync_word": r.sync_word, "tx_power_dbm": r.tx_power_dbm,
                  "preamble": r.preamble, "profiles": matching_profiles(r),
                  "airtime_124_ms": round(r.to_params().airtime(FULL_FRAME) * 1000, 3)},
        "duty": {"permille": d.permille, "window_ms": d.window_ms},
        "airtime": {"limit_permille": a.limit_permille, "window_ms": a.window_ms,
                    "used_ms": a.used_ms, "available_ms": a.available_ms},
        "queue_free": info.free,
        "stats": {"rx_ok": st.rx_ok, "rx_bad": st.rx_bad, "tx_ok": st.tx_ok,
                  "tx_refused": st.tx_refused, "kiss_errors": st.kiss_errors,
                  "uptime_ms": st.uptime_ms},
    }


def print_dongle_info(info: DongleInfo) -> None:
    r, d, a, st = info.radio, info.duty, info.airtime, info.stats
    frame_ms = r.to_params().airtime(FULL_FRAME) * 1000
    names = ", ".join(matching_profiles(r)) or "none (custom settings)"
    duty = "no limit" if d.permille == 0 else (
        f"{d.permille} permille over {d.window_ms / 1000:g} s")
    if a.limit_permille == 0:
        budget = f"used {a.used_ms} ms in the window, no limit"
    else:
        frames = int(a.available_ms // frame_ms) if frame_ms else 0
        budget = (f"used {a.used_ms} ms, {a.available_ms} ms available "
                  f"(about {frames} more {FULL_FRAME}-byte frames)")
    rows = [
        ("port", info.port),
        ("firmware", f"{info.identity.firmware} (protocol {info.identity.protocol})"),
        ("board", f"{info.identity.board} ({info.identity.chip})"),
        ("radio", (f"{'on' if info.radio_on else 'off'}: {r.frequency_hz / 1e6:.4f} MHz, "
                  f"{r.bandwidth_hz / 1e3:g} kHz, SF{r.sf}, CR 4/{r.cr}, "
                  f"sync {r.sync_word:#04x}, {r.tx_power_dbm} dBm, preamble {r.preamble}")),
        ("profile", names),
        ("frame", f"a {FULL_FRAME}-byte frame takes {frame_ms:.1f} ms on air"),
        ("duty", duty),
        ("airtime", budget),
        ("queue", f"{info.free} of 4 slots free"),
        ("stats", (f"rx {st.rx_ok} ok, {st.rx_bad} bad; tx {st.tx_ok} ok, "
                  f"{st.tx_refused} refused; {st.kiss_errors} KISS errors; "
                  f"up {st.uptime_ms / 1000:.1f} s")),
    ]
    for key, value in rows:
        print(f"{key:<9} {value}")


def show_dongle(info: DongleInfo, as_json: bool) -> None:
    if as_json:
        print(json.dumps(dongle_info_json(info), indent=2))
    else:
        print_dongle_info(info)


def cmd_dongle_info(args: argparse.Namespace) -> int:
    port = dongle_port(args)
    try:
        info = read_info(port, board=args.board, timeout=args.timeout)
    except DongleLinkError as exc:
        raise UserError(str(exc)) from None
    show_dongle(info, args.json)
    return 0


def candidate_ports() -> list[str]:
    """USB serial ports (the ones pyserial knows a USB id for), stable names first."""
    from serial.tools import list_ports

    ports = [p.device for p in list_ports.comports() if p.hwid and p.hwid != "n/a"]
    by_id = Path("/dev/serial/by-id")
    stable = sorted(str(p) for p in by_id.iterdir()) if by_id.is_dir() else []
    seen = {os.path.realpath(p) for p in stable}
    return stable + [p for p in ports if os.path.realpath(p) not in seen]


def cmd_dongle_detect(args: argparse.Namespace) -> int:
    ports = args.port or candidate_ports()
    found: list[DongleInfo] = []
    missed: list[tuple[str, str]] = []
    for port in ports:
        try:
            found.append(read_info(port, board=args.board, timeout=args.timeout))
        except DongleLinkError as exc:
            missed.append((port, str(exc)))
    if args.json:
        print(json.dumps({"dongles": [dongle_info_json(i) for i in found],
                          "not_dongles": [{"port": p, "why": w} for p, w in missed]},
                         indent=2))
        return 0 if found else 1
    for info in found:
        r = info.radio
        names = ", ".join(matching_profiles(r)) or "custom settings"
        print(f"{info.port}: {info.identity.board} ({info.identity.chip}), firmware "
              f"{info.identity.firmware}, {r.frequency_hz / 1e6:.4f} MHz SF{r.sf} "
              f"{r.bandwidth_hz / 1e3:g} kHz {r.tx_power_dbm} dBm ({names})")
    for port, why in missed:
        log.info("%s: %s", port, why)
    if not found:
        tried = ", ".join(ports) or "none (no USB serial port found)"
        print(f"no dongle answered; ports tried: {tried}", file=sys.stderr)
        return 1
    return 0


def dongle_changes(args: argparse.Namespace) -> list[tuple[Cmd, int]]:
    """The settings `dongle set` sends: the profile's, then the single options."""
    values: dict[Cmd, int] = {}
    if args.profile is not None:
        if args.profile not in PROFILES:
            raise UserError(f"unknown profile {args.profile!r}; `tinyssb dongle profiles` "
                            "lists them")
        values.update(RadioConfig.from_params(PROFILES[args.profile]).settings())
        if args.power is not None:
            try:
                check_power(args.profile, args.power)
            except ValueError as exc:
                raise UserError(f"--power {exc}") from None
    for cmd, value in ((Cmd.FREQUENCY, args.frequency), (Cmd.BANDWIDTH, args.bandwidth),
                       (Cmd.SF, args.sf), (Cmd.CR, args.cr), (Cmd.SYNC_WORD, args.sync),
                       (Cmd.TX_POWER, args.power), (Cmd.PREAMBLE, args.preamble)):
        if value is not None:
            values[cmd] = value
    return list(values.items())


def cmd_dongle_set(args: argparse.Namespace) -> int:
    changes = dongle_changes(args)
    radio = None if args.radio is None else args.radio == "on"
    if not changes and args.duty is None and args.duty_window is None and radio is None:
        raise UserError("nothing to set: give --profile or a setting (see "
                        "`tinyssb dongle set --help`)")
    port = dongle_port(args)
    if args.power is not None and args.profile is None:
        _check_dongle_power(args, port)
    try:
        info = apply_settings(port, changes, duty_permille=args.duty,
                              duty_window_ms=args.duty_window, radio_on=radio,
                              board=args.board, timeout=args.timeout)
    except DongleLinkError as exc:
        raise UserError(str(exc)) from None
    show_dongle(info, args.json)
    return 0


def _check_dongle_power(args: argparse.Namespace, port: str) -> None:
    """``--power`` without ``--profile``: within the limit of the region of the frequency
    given, or of the one the dongle is on."""
    frequency = args.frequency
    if frequency is None:
        try:
            frequency = read_info(port, board=args.board, timeout=args.timeout).radio.frequency_hz
        except DongleLinkError as exc:
            raise UserError(str(exc)) from None
    limit = power_limit_at(frequency)
    if limit is not None and args.power > limit.max_dbm:
        raise UserError(f"--power {args.power} dBm is above the legal limit of "
                        f"{limit.max_dbm} dBm at {frequency / 1e6:.4f} MHz ({limit.rule}); "
                        f"use {limit.max_dbm} or less")


def cmd_dongle_profiles(args: argparse.Namespace) -> int:
    rows: list[dict[str, object]] = []
    lines = [(f"{'profile':<16} {'MHz':>8} {'kHz':>4} {'SF':>3} {'CR':>4} {'sync':>5} "
             f"{'dBm':>4} {'max':>4} {'124 B on air':>13} {'per hour at 1%':>15}")]
    for name, p in PROFILES.items():
        airtime_ms = p.airtime(FULL_FRAME) * 1000
        per_hour = int(36_000 // airtime_ms)
        limit = power_limit(name)
        rows.append({"name": name, "frequency_hz": p.frequency_hz,
                     "bandwidth_hz": p.bandwidth_hz, "sf": p.sf, "cr": p.cr,
                     "sync_word": p.sync_word, "tx_power_dbm": p.tx_power_dbm,
                     "max_tx_power_dbm": limit.max_dbm, "power_rule": limit.rule,
                     "airtime_124_ms": round(airtime_ms, 3),
                     "frames_per_hour_1pct": per_hour})
        lines.append(f"{name:<16} {p.frequency_hz / 1e6:>8.1f} {p.bandwidth_hz // 1000:>4} "
                     f"{p.sf:>3} {'4/' + str(p.cr):>4} {p.sync_word:>#5x} "
                     f"{p.tx_power_dbm:>4} {limit.max_dbm:>4} "
                     f"{airtime_ms:>10.1f} ms {per_hour:>15}")
    print(json.dumps(rows, indent=2) if args.json else "\n".join(lines))
    return 0


def _int_arg(low: int, high: int, what: str) -> Callable[[str], int]:
    """An argparse type: an integer (decimal or 0x hex) in low..high."""
    def parse(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be an integer, got {text!r}"
                                             ) from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{what} must be {low}..{high}, got {value}")
        return value
    return parse


def _hz_arg(what: str) -> Callable[[str], int]:
    """An argparse type: Hz as an integer or with a k/M suffix (868.3M, 250k)."""
    def parse(text: str) -> int:
        scale = {"k": 1e3, "m": 1e6}.get(text[-1:].lower(), 1.0)
        number = text[:-1] if scale != 1.0 else text
        try:
            value = round(float(number) * scale)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{what} must be in Hz (868300000, 868.3M or 250k), got {text!r}") from None
        if not 0 < value < 2**32:
            raise argparse.ArgumentTypeError(f"{what} out of range: {text}")
        return value
    return parse


def add_dongle_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dp = sub.add_parser(
        "dongle", help="inspect and configure a LoRa dongle on USB serial",
        description="Talk to a LoRa dongle running the tinySSB dongle firmware "
                    "(hardware/PROTOCOL.md). Settings last until the dongle restarts; the "
                    "gateway configures the radio itself when it starts.")
    dsub = dp.add_subparsers(dest="dongle_command", required=True, metavar="SUBCOMMAND")

    def add(name: str, func: Callable[[argparse.Namespace], int], help: str,
            port: bool = True, many: bool = False) -> argparse.ArgumentParser:
        sp = dsub.add_parser(name, help=help, description=help)
        sp.set_defaults(func=func)
        if many:
            sp.add_argument("--port", "-p", metavar="DEVICE", action="append",
                            help="try this port (repeatable; default: every USB serial port)")
        elif port:
            sp.add_argument("--port", "-p", metavar="DEVICE",
                            help=f"serial device, e.g. /dev/ttyUSB0 (default: ${DONGLE_ENV})")
        if port or many:
            sp.add_argument("--board", metavar="BOARD",
                            help="board id (hardware/boards/BOARD.json) for its reset wiring; "
                                 "default: keep DTR and RTS deasserted")
            sp.add_argument("--timeout", type=float, default=3.0, metavar="SECONDS",
                            help="how long to wait for the dongle to answer (default 3)")
        sp.add_argument("--json", action="store_true", help="machine-readable output")
        return sp

    add("detect", cmd_dongle_detect, "find dongles: send the DETECT handshake to each USB "
        "serial port (or each --port) and list those that answer, with board and radio",
        port=False, many=True)
    add("info", cmd_dongle_info, "show firmware, board, radio settings, duty-cycle budget "
        "and counters of a dongle")
    sp = add("set", cmd_dongle_set, "change radio settings of a dongle (each one is read "
             "back and checked), then show them")
    sp.add_argument("--profile", metavar="NAME",
                    help="a radio plan from `tinyssb dongle profiles`, e.g. EU868.b; the "
                         "options below override its values")
    sp.add_argument("--frequency", type=_hz_arg("frequency"), metavar="HZ",
                    help="centre frequency in Hz (868300000, 868.3M)")
    sp.add_argument("--bandwidth", type=_hz_arg("bandwidth"), metavar="HZ",
                    help="bandwidth in Hz (125000, 250k, 500k)")
    sp.add_argument("--sf", type=_int_arg(5, 12, "spreading factor"), metavar="N",
                    help="spreading factor 5..12 (what the chip supports)")
    sp.add_argument("--cr", type=_int_arg(5, 8, "coding rate"), metavar="N",
                    help="coding-rate denominator 5..8 (5 = 4/5)")
    sp.add_argument("--power", type=_int_arg(-9, 22, "tx power"), metavar="DBM",
                    help="transmit power in dBm (-9..22 on SX1262, 2..20 on SX1276); with "
                         "--profile, at most the region's legal limit (14 on EU868)")
    sp.add_argument("--sync", type=_int_arg(0, 255, "sync word"), metavar="BYTE",
                    help="sync word, SX127x register value (tinySSB: 0x58)")
    sp.add_argument("--preamble", type=_int_arg(6, 65535, "preamble"), metavar="N",
                    help="preamble length in symbols (tinySSB: 8)")
    sp.add_argument("--duty", type=_int_arg(0, 1000, "duty limit"), metavar="PERMILLE",
                    help="duty-cycle limit the dongle enforces, permille (10 = 1%%, 0 = none)")
    sp.add_argument("--duty-window", type=_int_arg(1000, 86_400_000, "duty window"),
                    metavar="MS", help="the window the duty limit applies to, in ms "
                                       "(default: keep the dongle's, 3600000 after boot)")
    sp.add_argument("--radio", choices=("on", "off"),
                    help="switch the radio on (receive between transmissions) or off")
    add("profiles", cmd_dongle_profiles, "list the LoRa radio plans with the airtime of a "
        "full 124-byte frame", port=False)


# --- parser --------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tinyssb",
        description="tinySSB for real radios: feeds, replication gateway, simulator, analysis.")
    p.add_argument("--version", action="version", version=f"tinyssb {__version__}")
    p.add_argument("--data", default=os.environ.get("TINYSSB_DATA", DEFAULT_DATA),
                   help="data directory (default: $TINYSSB_DATA or ~/.tinyssb)")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="more log output: -v entries, -vv frames and debug, -vvv also the "
                        "libraries' debug lines")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Callable[[argparse.Namespace], int], help: str
            ) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help, description=help)
        sp.set_defaults(func=func)
        return sp

    sp = add("id", cmd_id, "print this node's feed id (created on first use)")
    sp.add_argument("--hex", action="store_true", help="print 64 hex digits instead")
    sp.add_argument("--json", action="store_true", help="machine-readable output")

    sp = add("publish", cmd_publish, "append an entry to your own feed; prints its seq")
    sp.add_argument("text", nargs="?", help='text, published as a post ["TAV", [], TEXT, null, '
                    "unix time]")
    sp.add_argument("--file", "-f", metavar="FILE",
                    help="publish the raw bytes of FILE ('-' for stdin)")
    sp.add_argument("--allow-empty", action="store_true",
                    help="publish even when the content (TEXT, FILE or stdin) is empty")
    sp.add_argument("--json", action="store_true", help="machine-readable output")

    sp = add("feeds", cmd_feeds, "list the feeds held, with their length")
    sp.add_argument("--json", action="store_true", help="machine-readable output")

    sp = add("cat", cmd_cat, "show the entries of a feed")
    sp.add_argument("feed", help="@<base64>.ed25519, 64 hex digits, or 'me'")
    sp.add_argument("--seq", type=int, help="only this entry")
    sp.add_argument("--raw", action="store_true", help="write raw content bytes to stdout")
    sp.add_argument("--json", action="store_true",
                    help="machine-readable output (content in base64 and as shown)")

    sp = add("follow", cmd_follow, "show a feed's entries as they arrive (Ctrl-C stops)")
    sp.add_argument("feed", help="@<base64>.ed25519, 64 hex digits, or 'me'")
    sp.add_argument("--since", type=int, default=0, help="start after this seq (default 0)")
    sp.add_argument("--interval", type=float, default=1.0, help="poll interval, seconds")
    sp.add_argument("--json", action="store_true",
                    help="JSON lines: one entry per line (the fields of `cat --json`)")

    add_dongle_commands(sub)
    add_gateway_commands(sub, UserError, data_dir)
    add_isp_commands(sub, UserError, data_dir)
    add_verify_command(sub, UserError, data_dir)
    from firmware_sim.cli import add_sim_commands  # the simulator rides on the same command

    add_sim_commands(sub)
    from spark.cli import add_spark_commands  # `analyze`, `capture convert`: the Spark jobs

    add_spark_commands(sub)
    add_version_everywhere(p, f"tinyssb {__version__}")
    return p


def add_version_everywhere(parser: argparse.ArgumentParser, version: str) -> None:
    """``--version`` on every subcommand too (``tinyssb run --version``), as on the top."""
    seen: set[int] = set()

    def walk(p: argparse.ArgumentParser) -> None:
        if id(p) in seen:
            return
        seen.add(id(p))
        if "--version" not in p._option_string_actions:
            p.add_argument("--version", action="version", version=version,
                           help="print the version and exit")
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    walk(child)

    walk(parser)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    try:
        return int(args.func(args))
    except (UserError, StoreError, WireError) as exc:
        print(f"tinyssb: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:
        return 0
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"tinyssb: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
