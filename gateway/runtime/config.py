"""The gateway's configuration: a TOML file, then command-line flags on top.

The file is ``gateway.toml`` in the data directory unless ``--config`` names another;
a missing default file is fine (flags alone), a missing named file is an error. Every
mistake becomes a :class:`ConfigError` naming the file, the line and the key.
``docs/gateway.md`` shows a complete file; :data:`EXAMPLE` is the same text.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..replication.policy import Policy, policy_from_mapping
from ..tomllines import TomlLines
from ..wire.lora import LoRaParams, profile
from .schema import GatewaySettings, Override, parse_listen, problems
from .secure_config import EXAMPLE_TABLE as SECURE_EXAMPLE
from .secure_config import SecureConfig, secure_config

__all__ = [
    "CONFIG_FILE",
    "EXAMPLE",
    "BleConfig",
    "ConfigError",
    "GatewayConfig",
    "Override",
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
scrub_interval = 5.0      # seconds between background scrub steps; 0 turns the scrub off
scrub_batch = 100         # records (entries, chunks) each scrub step verifies (~1.5 ms)
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
rate = 25.0               # frames per second after a burst (0: no pacing)
burst = 4                 # frames sent back to back (an ESP32 queues 4)

[serial]
port = ""                 # the LoRa dongle, e.g. "/dev/ttyUSB0" ("" = none)
profile = "EU868.a"       # radio plan (868.3 MHz, 125 kHz, SF7): tinyssb dongle profiles
# power = 14              # transmit power in dBm; unset: the profile's legal default
                          # (14 on EU868, 10 on EU433, 20 on US915/AU915); never above
                          # the region's limit
board = ""                # board name from hardware/boards, for its serial lines
duty_cycle = 0.01         # share of airtime the gateway may use

[isp]
farewell_timeout = 300.0  # seconds of silence from a contract's peer after which an
                          # unfinished farewell ends here (its feeds and keys deleted)

[ble]
enabled = false           # BLE central: connect to tinySSB peripherals
address = ""              # one device ("" = scan for the tinySSB service)
max_peers = 4

""" + SECURE_EXAMPLE


class ConfigError(Exception):
    """A mistake in the configuration: one line naming the file, line and key."""


@dataclass(slots=True)
class UdpConfig:
    group: str = "239.5.5.8"
    port: int = 1558
    interface: str = "0.0.0.0"
    loopback: bool = False
    rate: float = 25.0
    burst: int = 4


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
    scrub_interval: float = 5.0
    scrub_batch: int = 100
    capture: Path | None = None
    policy: Policy = field(default_factory=lambda: policy_from_mapping({}))
    policy_table: dict[str, Any] = field(default_factory=dict)
    ws_listen: list[tuple[str, int]] = field(default_factory=list)
    ws_connect: list[str] = field(default_factory=list)
    udp: UdpConfig | None = None
    serial: SerialConfig | None = None
    ble: BleConfig | None = None
    isp_farewell_timeout: float = 300.0
    secure: SecureConfig = field(default_factory=SecureConfig)
    source: str = "(flags)"

    def has_faces(self) -> bool:
        return bool(self.ws_listen or self.ws_connect or self.udp or self.serial or self.ble
                    or self.secure.active())

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


# --- reading -------------------------------------------------------------------------

def load_config(path: Path, *, required: bool, overrides: Sequence[Override] = ()
                ) -> GatewayConfig:
    """Read ``path`` (without it: the defaults, or an error when ``required``), put the
    flags' ``overrides`` on top and check the whole once (:mod:`.schema`)."""
    text, source = "", "(flags)"
    try:
        text = path.read_text(encoding="utf-8")
        source = str(path)
    except FileNotFoundError:
        if required:
            raise ConfigError(f"config file {path} not found; create it or leave out "
                              "--config") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    lines = TomlLines(text)
    flagged = _needs_a_dongle(overrides)
    for override in overrides:
        override.apply(data)
    settings, found = problems(data)
    if settings is None:
        first = found[0]
        raise ConfigError(_where(source, lines, first.key, overrides) + first.message)
    cfg = _to_config(settings, source)
    try:
        cfg.policy = policy_from_mapping(cfg.policy_table)
    except ValueError as exc:
        bad = re.search(r"'([^']+)'", str(exc))
        # the setting it names, or else the preset (an unknown preset names its value)
        key = bad.group(1) if bad and bad.group(1) in cfg.policy_table else "preset"
        line = lines.find("policy", None, key)
        where = f"{source}:{line}" if line else source
        raise ConfigError(f"{where}: [policy]: {exc}") from None
    if flagged is not None and cfg.serial is None:
        raise ConfigError(f"{flagged} needs a dongle: give --serial PORT too")
    return cfg


def _needs_a_dongle(overrides: Sequence[Override]) -> str | None:
    """The first flag that sets a dongle option other than its port."""
    return next((o.flag for o in overrides if o.key[0] == "serial" and o.key[-1] != "port"),
                None)


def _where(source: str, lines: TomlLines, key: tuple[str, ...],
           overrides: Sequence[Override]) -> str:
    """``--flag: `` when a flag gave the value at ``key``, else ``FILE:LINE: KEY: ``."""
    for o in reversed(overrides):
        if o.key[:len(key)] == key or key[:len(o.key)] == o.key:
            return f"{o.flag}: "
    line = lines.find(key[0] if len(key) > 1 else "", None, key[-1]) if key else None
    where = f"{source}:{line}" if line else source
    return f"{where}: {'.'.join(key)}: " if key else f"{where}: "


def _to_config(s: GatewaySettings, source: str) -> GatewayConfig:
    cfg = GatewayConfig(name=s.name or "gateway", status_interval=s.status_interval,
                        flush_interval=s.flush_interval,
                        scrub_interval=s.scrub_interval, scrub_batch=s.scrub_batch,
                        capture=Path(s.capture).expanduser() if s.capture else None,
                        policy_table=dict(s.policy),
                        isp_farewell_timeout=s.isp.farewell_timeout, source=source)
    cfg.ws_listen = [parse_listen(item) for item in s.websocket.listen]
    cfg.ws_connect = list(s.websocket.connect)
    if s.udp is not None and s.udp.enabled:
        cfg.udp = UdpConfig(s.udp.group, s.udp.port, s.udp.interface, s.udp.loopback,
                            s.udp.rate, s.udp.burst)
    if s.serial is not None and s.serial.port:
        cfg.serial = SerialConfig(s.serial.port, s.serial.profile, s.serial.board or None,
                                  s.serial.duty_cycle, s.serial.power)
    if s.ble is not None and s.ble.enabled:
        cfg.ble = BleConfig(s.ble.address or None, s.ble.max_peers)
    cfg.secure = secure_config(s.secure)
    return cfg
