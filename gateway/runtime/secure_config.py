"""The ``[secure]`` table and ``--secure-*`` flags: SHS links, their keys and allow-list.

::

    [secure]
    listen = [8008]                 # ports (or "host:port") for SHS peers
    connect = ["192.0.2.7:8008@<base64>.ed25519"]
    network_key = ""                # 64 hex digits or base64; "" = the tinySSB default
    allow = ["@<base64>.ed25519"]   # who may connect to our listen ports
    allow_any = false               # true: anyone who knows the network key
    handshake_timeout = 10.0

The identities named in ``connect`` are trusted too: two gateways that connect to each
other need no ``allow`` entries. A listener with nobody allowed is a mistake unless
``allow_any`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..secure.netkey import DEFAULT_NETWORK_KEY, parse_network_key
from ..wire.errors import IdentityError
from ..wire.ident import parse_id
from .schema import parse_listen

if TYPE_CHECKING:
    from .schema import SecureTable

__all__ = ["EXAMPLE_TABLE", "SecureConfig", "SecurePeer", "parse_allowed",
           "parse_secure_peer", "secure_config"]

EXAMPLE_TABLE = """\
[secure]                  # SHS + box stream over TCP: only invited peers (docs/gateway.md)
listen = []               # ports (or "host:port") to accept secure peers on, e.g. [8008]
connect = []              # peers as "HOST:PORT@<peer id>", e.g. ["192.0.2.7:8008@<id>"]
network_key = ""          # 64 hex digits or base64 ("" = the public tinySSB default);
                          # `tinyssb network-key` makes a fresh one for your deployment
allow = []                # peer ids that may connect (those in connect are allowed too)
allow_any = false         # true: anyone who knows the network key may connect
handshake_timeout = 10.0  # seconds a peer has to finish the handshake
"""


@dataclass(frozen=True, slots=True)
class SecurePeer:
    """A peer to connect to: where, and which identity it must prove."""

    host: str
    port: int
    peer: bytes


@dataclass(slots=True)
class SecureConfig:
    listen: list[tuple[str, int]] = field(default_factory=list)
    connect: list[SecurePeer] = field(default_factory=list)
    network_key: bytes = DEFAULT_NETWORK_KEY
    allow: set[bytes] = field(default_factory=set)
    allow_any: bool = False
    handshake_timeout: float = 10.0

    def active(self) -> bool:
        return bool(self.listen or self.connect)

    def allowed(self) -> frozenset[bytes] | None:
        """Who may connect to our listeners: None for anyone with the network key."""
        if self.allow_any:
            return None
        return frozenset(self.allow | {p.peer for p in self.connect})

    def check(self) -> None:
        """ValueError (one line, naming the fix) when the links cannot work as given."""
        if self.listen and not self.allow_any and not self.allowed():
            raise ValueError("secure.listen: no peer may connect; name them with "
                             "--secure-allow ID (secure.allow) or set secure.allow_any = true")


def parse_secure_peer(text: str) -> SecurePeer:
    """``HOST:PORT@<peer id>`` (IPv6 hosts in brackets); ValueError naming the form."""
    where, at, ident = str(text).partition("@")
    form = f"expected HOST:PORT@<peer id>, got {text!r}"
    host, colon, port_text = where.rpartition(":")
    if not at or not colon or not host:
        raise ValueError(form)
    host = host.removeprefix("[").removesuffix("]")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"{form}: the port is not a number") from None
    if not 0 < port < 65536:
        raise ValueError(f"a port is 1..65535, got {port}")
    try:
        peer = parse_id(ident)
    except IdentityError as exc:
        raise ValueError(f"{text!r}: {exc}") from None
    return SecurePeer(host, port, peer)


def parse_allowed(text: str) -> bytes:
    try:
        return parse_id(str(text))
    except IdentityError as exc:
        raise ValueError(str(exc)) from None


def secure_config(table: SecureTable) -> SecureConfig:
    """The checked ``[secure]`` table (:class:`~.schema.SecureTable`) as the runtime's."""
    cfg = SecureConfig(allow_any=table.allow_any, handshake_timeout=table.handshake_timeout)
    cfg.listen = [parse_listen(x) for x in table.listen]
    cfg.connect = [parse_secure_peer(x) for x in table.connect]
    cfg.allow = {parse_allowed(x) for x in table.allow}
    if table.network_key:
        cfg.network_key = parse_network_key(table.network_key)
    return cfg
