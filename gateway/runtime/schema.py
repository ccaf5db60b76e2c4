"""The rules for the gateway's settings: one set of pydantic models for the config file
and the command-line flags alike.

The file's TOML becomes a mapping, each flag given becomes an :class:`Override` of one
key in that mapping (``--power 14`` sets ``serial.power``), and the merged mapping is
validated once by :class:`GatewaySettings`. So a value means the same and is checked
the same, with the same message, wherever it came from; only the place named in front
differs: ``gateway.toml:3: serial.power: ...`` for the file, ``--power: ...`` for a flag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from ..wire.lora import PROFILES, check_power

__all__ = [
    "GatewaySettings",
    "Override",
    "SettingsProblem",
    "check_board",
    "check_profile",
    "check_ws_url",
    "parse_listen",
    "problems",
]


# --- the single-value rules (also used by code that takes one value alone) -------------

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
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ValueError(f"not a WebSocket URL (ws://HOST:PORT): {url!r}")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise ValueError(f"bad port in {url!r}") from None
    return url


def check_profile(name: str) -> str:
    if name not in PROFILES:
        raise ValueError(f"unknown radio profile {name!r}; see `tinyssb dongle profiles`")
    return name


def check_board(name: str) -> str:
    """``name`` when hardware/boards knows it ("" for none)."""
    if not name:
        return name
    from ..transports.serial_dongle import DongleLinkError, serial_lines

    try:
        serial_lines(name)
    except DongleLinkError as exc:
        raise ValueError(str(exc)) from None
    return name


def _listen(item: int | str) -> int | str:
    parse_listen(item)  # the check; the runtime config keeps (host, port)
    return item


def _between(low: float, high: float, *, whole: bool = False) -> AfterValidator:
    def check(value: float) -> float:
        if not low <= value <= high:
            if whole:
                raise ValueError(f"must be a whole number from {low} to {high}, got {value}")
            raise ValueError(f"must be between {low:g} and {high:g}, got {value:g}")
        return value
    return AfterValidator(check)


def _port(value: int) -> int:
    if not 0 < value < 65536:
        raise ValueError(f"a port is 1..65535, got {value}")
    return value


# --- the models ---------------------------------------------------------------------------

class _Table(BaseModel):
    # strict: true is no number, "8080" is no port; unknown keys are mistakes
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class WebSocketTable(_Table):
    listen: list[Annotated[int | str, AfterValidator(_listen)]] = []
    connect: list[Annotated[str, AfterValidator(check_ws_url)]] = []


class UdpTable(_Table):
    enabled: bool = True
    group: str = "239.5.5.8"
    port: Annotated[int, AfterValidator(_port)] = 1558
    interface: str = "0.0.0.0"
    loopback: bool = False
    rate: Annotated[float, _between(0.0, 100000.0)] = 25.0  # frames/s after a burst; 0: no pace
    burst: Annotated[int, _between(1, 1024, whole=True)] = 4  # frames sent back to back


class SerialTable(_Table):
    port: str = ""
    profile: Annotated[str, AfterValidator(check_profile)] = "EU868.a"
    board: Annotated[str, AfterValidator(check_board)] = ""
    duty_cycle: Annotated[float, _between(0.0, 1.0)] = 0.01
    power: int | None = None  # dBm; None: the profile's legal default

    @field_validator("power")
    @classmethod
    def _legal(cls, power: int | None, info: ValidationInfo) -> int | None:
        name = info.data.get("profile")
        if power is not None and name is not None:  # no profile: its own error is shown
            check_power(name, power)
        return power


class BleTable(_Table):
    enabled: bool = True
    address: str = ""
    max_peers: Annotated[int, _between(1, 16)] = 4


class IspTable(_Table):
    # seconds of silence from a contract's peer that end an unfinished farewell here
    farewell_timeout: Annotated[float, _between(1.0, 30 * 86400.0)] = 300.0


def _secure_peer(text: str) -> str:
    from .secure_config import parse_secure_peer

    parse_secure_peer(text)  # the check; the runtime config keeps the parsed peer
    return text


def _allowed(text: str) -> str:
    from .secure_config import parse_allowed

    parse_allowed(text)
    return text


def _network_key(text: str) -> str:
    from ..secure.netkey import parse_network_key

    if text:
        parse_network_key(text)
    return text


class SecureTable(_Table):
    listen: list[Annotated[int | str, AfterValidator(_listen)]] = []
    connect: list[Annotated[str, AfterValidator(_secure_peer)]] = []
    network_key: Annotated[str, AfterValidator(_network_key)] = ""  # "": the default key
    allow: list[Annotated[str, AfterValidator(_allowed)]] = []
    allow_any: bool = False
    handshake_timeout: Annotated[float, _between(0.1, 600)] = 10.0


class GatewaySettings(_Table):
    name: str = "gateway"
    status_interval: Annotated[float, _between(0, 86400)] = 10.0
    flush_interval: Annotated[float, _between(0.1, 3600)] = 5.0
    scrub_interval: Annotated[float, _between(0, 86400)] = 5.0  # 0: no background scrub
    scrub_batch: Annotated[int, _between(1, 100000, whole=True)] = 100
    capture: str = ""
    policy: dict[str, Any] = Field(default_factory=dict)  # checked by policy_from_mapping
    websocket: WebSocketTable = WebSocketTable()
    udp: UdpTable | None = None
    serial: SerialTable | None = None
    ble: BleTable | None = None
    isp: IspTable = IspTable()
    secure: SecureTable = SecureTable()


# --- flags and errors -----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Override:
    """One flag's value for one key of the settings (``append`` adds to a list)."""

    flag: str
    key: tuple[str, ...]
    value: Any
    append: bool = False

    def apply(self, data: dict[str, Any]) -> None:
        table = data
        for part in self.key[:-1]:
            inner = table.get(part)
            if not isinstance(inner, dict):  # a bad table in the file: its own error
                inner = {}
                table[part] = inner
            table = inner
        last = self.key[-1]
        if self.append:
            old = table.get(last)
            table[last] = [*(old if isinstance(old, list) else []), self.value]
        else:
            table[last] = self.value


@dataclass(frozen=True, slots=True)
class SettingsProblem:
    """One mistake: where it is (``key``, and the flag when a flag gave the value), what."""

    key: tuple[str, ...]
    message: str


_TYPE_NAMES = {"bool": "bool (true or false)", "int": "int", "float": "a number",
               "str": "str", "list": "a list", "dict": "a table"}


def _message(err: Any, model: type[BaseModel]) -> str:
    kind = err["type"]
    loc = tuple(str(p) for p in err["loc"] if not isinstance(p, int))
    value = err.get("input")
    if kind == "extra_forbidden":
        known = _fields_at(model, loc[:-1])
        return f"unknown key {loc[-1]!r}; known: {', '.join(sorted(known))}"
    if kind == "value_error":
        return str(err["ctx"]["error"])
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"must be a table: [{'.'.join(loc)}]"
    if kind.endswith(("_type", "_parsing")):
        if isinstance(value, bool) and kind.startswith(("int", "float")):
            return "expected a number, not true/false"
        want = kind.split("_")[0]
        return f"expected {_TYPE_NAMES.get(want, want)}, got {value!r}"
    return str(err["msg"])


def _fields_at(model: type[BaseModel], path: tuple[str, ...]) -> set[str]:
    for part in path:
        annotation = model.model_fields[part].annotation
        inner = next((a for a in getattr(annotation, "__args__", (annotation,))
                      if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if inner is None:
            return set()
        model = inner
    return set(model.model_fields)


def problems(data: dict[str, Any]) -> tuple[GatewaySettings | None, list[SettingsProblem]]:
    """Validate ``data``: the settings, or the mistakes in it (the first ones first)."""
    try:
        return GatewaySettings.model_validate(data), []
    except ValidationError as exc:
        found = []
        for err in exc.errors(include_url=False):
            if err["type"] == "none_required":  # ``X | None``: the X member's error says it
                continue
            # a union (``UdpTable | None``) reports under the member's name: drop it
            loc = tuple(str(p) for p in err["loc"] if not isinstance(p, int)
                        and not str(p).endswith("Table") and p != "none")
            found.append(SettingsProblem(loc, _message({**err, "loc": loc},
                                                       GatewaySettings)))
        return None, found
