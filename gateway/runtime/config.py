"""The gateway's configuration: a TOML file, then command-line flags on top.

The file is ``gateway.toml`` in the data directory unless ``--config`` names another;
a missing default file is fine (flags alone), a missing named file is an error. Every
mistake becomes a :class:`ConfigError` naming the file, the line and the key.
``docs/gateway.md`` shows a complete file; :data:`EXAMPLE` is the same text.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..replication.policy import Policy, policy_from_mapping
from ..tomllines import TomlLines
from ..wire.lora import PROFILES, LoRaParams, check_power, profile

__all__ = [
    "CONFIG_FILE",
    "EXAMPLE",
    "BleConfig",
    "ConfigError",
    "GatewayConfig",
    "SerialConfig",
    "UdpConfig",
    "load_config",
]

CONFIG_FILE = "gateway.toml"

EXAMPLE = """\
# tinySSB gateway configuration (tinyssb run). Every key is optional.
name = "gateway"          # this node's name in logs and captures
status_interval = 10.0    # seconds between status lines; 0 turns them off
flush_interval = 5.0      # seconds between store checkpoints
capture = ""              # write a capture file here ("" = none)

[policy]                  # replication policy: a preset plus any fields to change
# preset = "default"      # "default" (radio), "ip" or "reference"; unset: "default"
                          # with a dongle or BLE, "ip" for IP links only

[websocket]
listen = []               # ports (or "host:port") to accept WebSocket peers on, e.g. [8080]
connect = []              # peers to connect to, e.g. ["ws://192.0.2.7:8080"]

[udp]
enabled = false           # UDP multicast face (the reference Android app's)
group = "239.5.5.8"
port = 1558
interface = "0.0.0.0"     # local address of the interface to use
loopback = false          # also deliver to other gateways on this host

[serial]
port = ""                 # the LoRa dongle, e.g. "/dev/ttyUSB0" ("" = none)
profile = "EU868.a"       # radio plan (868.3 MHz, 125 kHz, SF7): tinyssb dongle profiles
# power = 14              # transmit power in dBm; unset: the profile's legal default
                          # (14 on EU868, 10 on EU433, 20 on US915/AU915); never above
                          # the region's limit
board = ""                # board name from hardware/boards, for its serial lines
duty_cycle = 0.01         # share of airtime the gateway may use

[ble]
enabled = false           # BLE central: connect to tinySSB peripherals
address = ""              # one device ("" = scan for the tinySSB service)
max_peers = 4
"""


class ConfigError(Exception):
    """A mistake in the configuration: one line naming the file, line and key."""


@dataclass(slots=True)
class UdpConfig:
    group: str = "239.5.5.8"
    port: int = 1558
    interface: str = "0.0.0.0"
    loopback: bool = False


@dataclass(slots=True)
class SerialConfig:
    port: str
    profile: str = "EU868.a"
    board: str | None = None
    duty_cycle: float = 0.01
    power: int | None = None  # dBm; None: the profile's legal default

    @property
    def params(self) -> LoRaParams:
        if self.power is None:
            return profile(self.profile)
        return profile(self.profile, tx_power_dbm=self.power)


@dataclass(slots=True)
class BleConfig:
    address: str | None = None
    max_peers: int = 4


@dataclass(slots=True)
class GatewayConfig:
    name: str = "gateway"
    status_interval: float = 10.0
    flush_interval: float = 5.0
    capture: Path | None = None
    policy: Policy = field(default_factory=lambda: policy_from_mapping({}))
    policy_table: dict[str, Any] = field(default_factory=dict)
    ws_listen: list[tuple[str, int]] = field(default_factory=list)
    ws_connect: list[str] = field(default_factory=list)
    udp: UdpConfig | None = None
    serial: SerialConfig | None = None
    ble: BleConfig | None = None
    source: str = "(flags)"

    def has_faces(self) -> bool:
        return bool(self.ws_listen or self.ws_connect or self.udp or self.serial or self.ble)

    def auto_preset(self) -> str:
        """Without a preset named: ``default`` (tuned for radio airtime) when a LoRa dongle
        or BLE is configured, ``ip`` (short rounds, large requests) otherwise."""
        return "default" if self.serial is not None or self.ble is not None else "ip"

    def set_policy(self, name: str | None) -> None:
        """Apply ``--policy NAME`` over the file's ``[policy]`` table."""
        table = dict(self.policy_table)
        if name is not None:
            table["preset"] = name
        elif "preset" not in table:
            table["preset"] = self.auto_preset()
        try:
            self.policy = policy_from_mapping(table)
        except ValueError as exc:
            raise ConfigError(f"{self.source}: [policy]: {exc}") from None


# --- parsing --------------------------------------------------------------------------

_TOP = {"name", "status_interval", "flush_interval", "capture", "policy", "websocket", "udp",
        "serial", "ble"}
_TABLES: dict[str, set[str]] = {
    "websocket": {"listen", "connect"},
    "udp": {"enabled", "group", "port", "interface", "loopback"},
    "serial": {"port", "profile", "board", "duty_cycle", "power"},
    "ble": {"enabled", "address", "max_peers"},
}


class _Reader:
    """Typed look-ups in one table of the file, with errors that name the line."""

    def __init__(self, source: str, lines: TomlLines, table: str | None,
                 data: dict[str, Any]) -> None:
        self.source = source
        self.lines = lines
        self.table = table
        self.data = data
        known = _TABLES[table] if table else _TOP
        for key in data:
            if key not in known:
                raise self.error(key, f"unknown key {key!r}; known: {', '.join(sorted(known))}")

    def error(self, key: str, message: str) -> ConfigError:
        line = self.lines.find(self.table or "", None, key)
        where = f"{self.source}:{line}" if line else self.source
        name = f"{self.table}.{key}" if self.table else key
        return ConfigError(f"{where}: {name}: {message}")

    def get(self, key: str, typ: type | tuple[type, ...], default: Any) -> Any:
        if key not in self.data:
            return default
        value = self.data[key]
        if isinstance(value, bool) and typ in (int, float, (int, float)):
            raise self.error(key, "expected a number, not true/false")
        if not isinstance(value, typ):
            names = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
            raise self.error(key, f"expected {names}, got {value!r}")
        return value

    def number(self, key: str, default: float, low: float, high: float) -> float:
        value = float(self.get(key, (int, float), default))
        try:
            return check_range(value, low, high)
        except ValueError as exc:
            raise self.error(key, str(exc)) from None

    def port(self, key: str, default: int) -> int:
        value = self.get(key, int, default)
        if not 0 < value < 65536:
            raise self.error(key, f"a port is 1..65535, got {value}")
        return int(value)


def parse_listen(item: object) -> tuple[str, int]:
    """``8080``, ``"8080"`` or ``"host:port"`` → (host, port); ValueError otherwise."""
    if isinstance(item, bool):
        raise ValueError(f"not a port: {item!r}")  # noqa: TRY004 - shown as a config error
    host, port_text = "0.0.0.0", str(item)
    if isinstance(item, str) and ":" in item:
        host, _, port_text = item.rpartition(":")
        host = host.strip("[]") or "0.0.0.0"
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"not a port or host:port: {item!r}") from None
    if not 0 <= port < 65536:
        raise ValueError(f"a port is 0..65535, got {port}")
    return host, port


def check_ws_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ValueError(f"not a WebSocket URL (ws://HOST:PORT): {url!r}")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise ValueError(f"bad port in {url!r}") from None
    return url


def check_board(name: str | None) -> str | None:
    """``name`` when hardware/boards knows it (or when no board is named)."""
    from ..transports.serial_dongle import DongleLinkError, serial_lines

    try:
        serial_lines(name)
    except DongleLinkError as exc:
        raise ValueError(str(exc)) from None
    return name


def check_range(value: float, low: float, high: float) -> float:
    """``value`` when it lies in low..high: the rule for every numeric key and flag."""
    if not low <= value <= high:
        raise ValueError(f"must be between {low:g} and {high:g}, got {value:g}")
    return value


STATUS_INTERVAL = (0.0, 86400.0)
FLUSH_INTERVAL = (0.1, 3600.0)


def check_profile(name: str) -> str:
    if name not in PROFILES:
        raise ValueError(f"unknown radio profile {name!r}; see `tinyssb dongle profiles`")
    return name


def _parse(source: str, text: str) -> GatewayConfig:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    lines = TomlLines(text)
    top = _Reader(source, lines, None, {k: v for k, v in data.items()})
    cfg = GatewayConfig(source=source)
    cfg.name = top.get("name", str, cfg.name) or cfg.name
    cfg.status_interval = top.number("status_interval", cfg.status_interval, *STATUS_INTERVAL)
    cfg.flush_interval = top.number("flush_interval", cfg.flush_interval, *FLUSH_INTERVAL)
    capture = top.get("capture", str, "")
    cfg.capture = Path(capture).expanduser() if capture else None
    for table in ("policy", *_TABLES):
        if table in data and not isinstance(data[table], dict):
            raise top.error(table, "must be a table: [" + table + "]")
    cfg.policy_table = dict(data.get("policy", {}))
    try:
        cfg.policy = policy_from_mapping(cfg.policy_table)
    except ValueError as exc:
        bad = re.search(r"'([^']+)'", str(exc))
        # the setting it names, or else the preset (an unknown preset names its value)
        key = bad.group(1) if bad and bad.group(1) in cfg.policy_table else "preset"
        line = lines.find("policy", None, key)
        where = f"{source}:{line}" if line else source
        raise ConfigError(f"{where}: [policy]: {exc}") from None

    ws = _Reader(source, lines, "websocket", data.get("websocket", {}))
    for item in ws.get("listen", list, []):
        try:
            cfg.ws_listen.append(parse_listen(item))
        except ValueError as exc:
            raise ws.error("listen", str(exc)) from None
    for url in ws.get("connect", list, []):
        try:
            cfg.ws_connect.append(check_ws_url(str(url)))
        except ValueError as exc:
            raise ws.error("connect", str(exc)) from None

    if "udp" in data:
        udp = _Reader(source, lines, "udp", data["udp"])
        if udp.get("enabled", bool, True):
            cfg.udp = UdpConfig(udp.get("group", str, "239.5.5.8"), udp.port("port", 1558),
                                udp.get("interface", str, "0.0.0.0"),
                                udp.get("loopback", bool, False))

    if "serial" in data:
        ser = _Reader(source, lines, "serial", data["serial"])
        port = ser.get("port", str, "")
        if port:
            name = ser.get("profile", str, "EU868.a")
            try:
                check_profile(name)
            except ValueError as exc:
                raise ser.error("profile", str(exc)) from None
            power = ser.get("power", int, None)
            if power is not None:
                try:
                    check_power(name, power)
                except ValueError as exc:
                    raise ser.error("power", str(exc)) from None
            board = ser.get("board", str, "") or None
            try:
                check_board(board)
            except ValueError as exc:
                raise ser.error("board", str(exc)) from None
            cfg.serial = SerialConfig(port, name, board,
                                      ser.number("duty_cycle", 0.01, 0.0, 1.0), power)

    if "ble" in data:
        ble = _Reader(source, lines, "ble", data["ble"])
        if ble.get("enabled", bool, True):
            cfg.ble = BleConfig(ble.get("address", str, "") or None,
                                int(ble.number("max_peers", 4, 1, 16)))
    return cfg


def load_config(path: Path, *, required: bool) -> GatewayConfig:
    """Read ``path``; without it, the defaults (or an error when ``required``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise ConfigError(f"config file {path} not found; create it or leave out "
                              "--config") from None
        return GatewayConfig()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    return _parse(str(path), text)
