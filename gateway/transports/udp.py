"""UDP multicast link: one broadcast face, one tinySSB packet + CRC32 per datagram.

The reference Android app multicasts on 239.5.5.8:1558 with a 256-byte receive buffer
(``shared/docs/wire-compat.md`` section 5). The face has ``crc=True``: the Node adds
and checks the CRC32 trailer; this link only moves datagrams.

Two sockets:

* receive: bound to ``(group, port)`` with SO_REUSEADDR (and SO_REUSEPORT outside
  Linux, which needs it there), so several gateways on one host can share the port,
  and joined to the group on ``interface``. Binding to the group address (not to any address) keeps unicast
  datagrams to the port out. Datagrams longer than the face's MTU plus the CRC are
  dropped and counted: the MTU (:data:`~gateway.replication.faces.IP_MTU`, 1024 B)
  admits the reference tinyISP ISP's long CHNK vectors (356 B seen), which the
  Android app's 256-byte receive buffer would cut.
* the face is paced by a token bucket (``rate``, ``burst``: :data:`UDP_RATE`,
  :data:`UDP_BURST`), so that an answer burst does not overrun small peers.
* send: bound to an ephemeral port on ``interface`` and *connected* to the group, with
  IP_MULTICAST_IF, IP_MULTICAST_TTL and IP_MULTICAST_LOOP set. Connecting makes the
  kernel choose the source address up front (no packet is sent for it), so we know our
  own ``(ip, port)`` and drop datagrams coming from it: with loopback on (two gateways
  on one host) we would otherwise hear ourselves. Those count as ``own_echoes``, not as
  garbage.

``interface`` is the IPv4 address of the interface to use (``0.0.0.0``: the one the
routing table picks for the group). The receive socket hears the group on that
interface only (IP_MULTICAST_ALL off on Linux): without it, a gateway on 127.0.0.1
also heard what another host sent to the group on eth0 once anything on the host had
joined there. On the loopback interface use ``127.0.0.1``:
Linux joins and sends there although ``lo`` carries no MULTICAST flag and has no
multicast route; every datagram sent on ``lo`` reaches every member on the host once,
whatever IP_MULTICAST_LOOP says, so it is the own-echo filter that keeps a gateway from
hearing itself.

A socket error while running (ENETUNREACH when the network goes away, an interface
losing its address) is counted and logged; the face goes down and the link re-opens
both sockets with backoff, then brings the face up again.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import ipaddress
import logging
import socket
import struct
import sys
from dataclasses import dataclass
from typing import Any

from ..replication.faces import IP_MTU, Face, FaceKind
from ..wire.crc import CRC_LEN
from .base import Backoff, Link, LinkCounters, LinkError, LinkHost, RadioMeta, os_reason

__all__ = ["UDP_BURST", "UDP_RATE", "UdpCounters", "UdpMulticast"]

UDP_BURST = 4
UDP_RATE = 25.0
"""The face's pace: 4 frames back to back (the ESP32 firmware's radio receive queue
holds 4; more are lost with "rcvd too many LoRa pkts"), then 25 per second. 0: no pace."""

log = logging.getLogger(__name__)

_LINUX = sys.platform.startswith("linux")
_IP_MULTICAST_ALL: int | None = getattr(socket, "IP_MULTICAST_ALL", 49 if _LINUX else None)
"""Linux delivers a group's datagrams to every socket bound to its port, whichever
interface they arrived on and whichever joined the group there (the option's default,
1); 0 limits a socket to the (group, interface) pairs it joined itself. Elsewhere a
socket hears the groups it joined only, which is the same.

On Linux the receive socket shares the port through SO_REUSEADDR alone: with
SO_REUSEPORT too, a kernel that hands a multicast datagram to the one socket it matched
(early demux) may pass it to any socket of that socket's reuse-port group instead,
past the interface check (seen on 6.x: a socket joined on lo took what another
socket joined on eth0 was meant to get)."""

_TRANSIENT = frozenset({errno.EAGAIN, errno.EWOULDBLOCK, errno.ENOBUFS, errno.EINTR,
                        errno.EMSGSIZE})
"""Errors that lose one datagram but leave the sockets usable."""


@dataclass(slots=True)
class UdpCounters(LinkCounters):
    own_echoes: int = 0  # our own datagrams heard back (multicast loop): dropped


class _SetupError(Exception):
    """Opening the sockets failed; the message is one line for a person."""


class _Endpoint(asyncio.DatagramProtocol):
    """Hands one socket's datagrams and errors to the link, tagged with its generation."""

    __slots__ = ("_generation", "_link", "_role")

    def __init__(self, link: UdpMulticast, role: str, generation: int) -> None:
        self._link = link
        self._role = role
        self._generation = generation

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        if self._role == "rx":
            self._link._datagram(self._generation, data, addr)
        else:
            self._link._stray(self._generation, data, addr)

    def error_received(self, exc: Exception) -> None:
        self._link._socket_error(self._generation, self._role, exc)

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            self._link._socket_error(self._generation, self._role, exc)


class UdpMulticast(Link):
    """The multicast group as one broadcast face with CRC32 trailers.

    ``port`` 0 picks a free port (for tests); :attr:`port` tells which once started.
    """

    kind = "udp"

    def __init__(self, group: str = "239.5.5.8", port: int = 1558, *,
                 interface: str = "0.0.0.0", loopback: bool = False, ttl: int = 1,
                 name: str = "udp", backoff: Backoff | None = None,
                 mtu: int = IP_MTU, send_buffer: int = 16 * 1024, rate: float = UDP_RATE,
                 burst: int = UDP_BURST) -> None:
        super().__init__(name)
        self.counters: UdpCounters = UdpCounters()
        self.group = group
        self.port = port
        self.interface = interface
        self.loopback = loopback
        self.ttl = ttl
        self.max_datagram = mtu + CRC_LEN  # a packet of up to ``mtu`` B and its CRC
        self.send_buffer = send_buffer  # bytes waiting in the send transport before we drop
        self.backoff = backoff if backoff is not None else Backoff()
        # a burst of one request's answers must fit the receivers' socket buffers
        self.face = Face(name, kind=FaceKind.BROADCAST, mtu=mtu, crc=True, queue_size=64,
                         rate=rate, burst=burst)
        self._link_host: LinkHost | None = None
        self._rx: asyncio.DatagramTransport | None = None
        self._tx: asyncio.DatagramTransport | None = None
        self._own: tuple[str, int] | None = None
        self._generation = 0
        self._face_up = False
        self._reopen_task: asyncio.Task[None] | None = None
        self._state = "new"

    @property
    def address(self) -> str:
        return f"{self.group}:{self.port}"

    # -- life ---------------------------------------------------------------------------

    async def start(self, host: LinkHost) -> None:
        if self._state not in ("new", "closed"):
            raise LinkError(f"{self.name} is already started")
        self._check_addresses()
        self._link_host = host
        try:
            await self._open()
        except _SetupError as exc:
            self._state = "closed"
            raise LinkError(str(exc)) from None
        assert self._own is not None
        log.info("%s: joined %s on %s, sending from %s:%d (loopback %s, ttl %d)", self.name,
                 self.address, self.interface, *self._own, "on" if self.loopback else "off",
                 self.ttl)
        self._bring_up()

    def _check_addresses(self) -> None:
        try:
            group = ipaddress.IPv4Address(self.group)
        except ValueError:
            raise LinkError(f"{self.name}: group {self.group!r} is not an IPv4 address") from None
        if not group.is_multicast:
            raise LinkError(f"{self.name}: {self.group} is not a multicast group "
                            "(224.0.0.0 to 239.255.255.255)")
        try:
            ipaddress.IPv4Address(self.interface)
        except ValueError:
            raise LinkError(f"{self.name}: interface {self.interface!r} must be the IPv4 "
                            "address of a local interface (0.0.0.0: any, 127.0.0.1: "
                            "loopback)") from None
        if not 0 <= self.port < 65536:
            raise LinkError(f"{self.name}: port {self.port} is not in 0..65535")
        if not 0 <= self.ttl < 256:
            raise LinkError(f"{self.name}: ttl {self.ttl} is not in 0..255")

    async def close(self) -> None:
        task, self._reopen_task = self._reopen_task, None
        was, self._state = self._state, "closed"
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._drop_sockets()
        self._bring_down("link closed")
        if was in ("up", "reopening"):
            log.info("%s: left %s", self.name, self.address)

    def describe(self) -> dict[str, Any]:
        own = f"{self._own[0]}:{self._own[1]}" if self._own is not None else None
        return {"state": self._state, "peers": [self.name] if self._face_up else [],
                "group": self.group, "port": self.port, "interface": self.interface,
                "loopback": self.loopback, "ttl": self.ttl, "source": own,
                "counters": self.counters.as_dict()}

    def _bring_up(self) -> None:
        assert self._link_host is not None
        self._state = "up"
        self._face_up = True
        self.counters.connects += 1
        self._link_host.face_up(self.face, self.send)

    def _bring_down(self, reason: str) -> None:
        if self._face_up and self._link_host is not None:
            self._face_up = False
            self._link_host.face_down(self.name, reason)

    # -- sockets ------------------------------------------------------------------------

    def _open_sockets(self) -> tuple[socket.socket, socket.socket]:
        """Both sockets, configured; :class:`_SetupError` naming the step that failed."""
        group = socket.inet_aton(self.group)
        iface = socket.inet_aton(self.interface)
        rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        step = f"cannot listen on {self.address}"
        try:
            rx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if hasattr(socket, "SO_REUSEPORT") and not _LINUX:
                rx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            try:
                rx.bind((self.group, self.port))
            except OSError as exc:  # some systems cannot bind a group address
                if exc.errno != errno.EADDRNOTAVAIL:
                    raise
                rx.bind(("", self.port))
            self.port = rx.getsockname()[1]
            step = f"cannot join {self.group} on interface {self.interface}"
            rx.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                          struct.pack("4s4s", group, iface))
            if _IP_MULTICAST_ALL is not None:  # hear the group on our interface only
                rx.setsockopt(socket.IPPROTO_IP, _IP_MULTICAST_ALL, 0)
        except OSError as exc:
            rx.close()
            raise _SetupError(f"{step}: {os_reason(exc)}") from None
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        step = f"cannot send to {self.address} from {self.interface}"
        try:
            tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, iface)
            tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, self.ttl)
            tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, int(self.loopback))
            tx.bind((self.interface, 0))
            tx.connect((self.group, self.port))
        except OSError as exc:
            rx.close()
            tx.close()
            raise _SetupError(f"{step}: {os_reason(exc)}") from None
        return rx, tx

    async def _open(self) -> None:
        rx, tx = self._open_sockets()
        loop = asyncio.get_running_loop()
        self._generation += 1
        gen = self._generation
        opened: list[asyncio.DatagramTransport] = []
        try:
            for sock, role in ((rx, "rx"), (tx, "tx")):
                transport, _ = await loop.create_datagram_endpoint(
                    functools.partial(_Endpoint, self, role, gen), sock=sock)
                opened.append(transport)
        except BaseException as exc:  # also a cancelled re-open: leave no socket behind
            for transport in opened:
                transport.close()
            rx.close()
            tx.close()
            if isinstance(exc, OSError):
                raise _SetupError(f"cannot open {self.address}: {os_reason(exc)}") from None
            raise
        self._rx, self._tx = opened
        own = self._tx.get_extra_info("sockname")
        self._own = (own[0], own[1])

    def _drop_sockets(self) -> None:
        self._generation += 1  # callbacks still queued for the old sockets are ignored
        for transport in (self._rx, self._tx):
            if transport is not None:
                transport.close()
        self._rx = self._tx = None
        self._own = None

    # -- moving datagrams ---------------------------------------------------------------

    def send(self, frame: bytes) -> bool:
        """The face's send function: one datagram to the group, never blocking."""
        tx = self._tx
        if tx is None or tx.is_closing() or len(frame) > self.max_datagram:
            self.counters.dropped_out += 1
            return False
        # the selector and proactor transports buffer when the socket would block
        buffered = getattr(tx, "get_write_buffer_size", None)
        if buffered is not None and buffered() > self.send_buffer:
            self.counters.dropped_out += 1
            log.debug("%s: send buffer full, %d B dropped", self.name, len(frame))
            return False
        faults = self.counters.faults
        tx.sendto(frame)  # an error comes back at once through error_received
        if self.counters.faults != faults:
            self.counters.dropped_out += 1
            return False
        self.counters.frames_out += 1
        self.counters.bytes_out += len(frame)
        log.debug("%s: tx %d B", self.name, len(frame))
        return True

    def _datagram(self, generation: int, data: bytes, addr: tuple[Any, int]) -> None:
        if generation != self._generation or self._link_host is None:
            return
        if (addr[0], addr[1]) == self._own:
            self.counters.own_echoes += 1
            return
        if not data or len(data) > self.max_datagram:
            self.counters.dropped_in += 1
            log.debug("%s: %d-byte datagram from %s:%d dropped (limit %d)", self.name,
                      len(data), addr[0], addr[1], self.max_datagram)
            return
        self.counters.frames_in += 1
        self.counters.bytes_in += len(data)
        log.debug("%s: rx %d B from %s:%d", self.name, len(data), addr[0], addr[1])
        self._link_host.frame_in(self.name, data, RadioMeta(sender=f"{addr[0]}:{addr[1]}"))

    def _stray(self, generation: int, data: bytes, addr: tuple[Any, int]) -> None:
        """Something reached the send socket (it is connected to the group: unexpected)."""
        if generation == self._generation:
            self.counters.dropped_in += 1
            log.debug("%s: %d B from %s:%d on the send socket dropped", self.name,
                      len(data), addr[0], addr[1])

    def _socket_error(self, generation: int, role: str, exc: Exception) -> None:
        if generation != self._generation or self._state != "up":
            return
        self.counters.faults += 1
        code = exc.errno if isinstance(exc, OSError) else None
        reason = os_reason(exc) if isinstance(exc, OSError) else str(exc)
        if code in _TRANSIENT:
            log.debug("%s: %s socket: %s (datagram lost)", self.name, role, reason)
            return
        log.warning("%s: %s socket failed (%s); re-opening with backoff", self.name,
                    "receive" if role == "rx" else "send", reason)
        self._state = "reopening"
        self._drop_sockets()  # later sends are dropped at once
        self._reopen_task = asyncio.get_running_loop().create_task(
            self._reopen(f"socket error: {reason}"), name=f"{self.name} reopen")

    async def _reopen(self, reason: str) -> None:
        # face_down here, not in the error callback, which may run inside the host's send
        self._bring_down(reason)
        attempts = 0
        while True:
            await self.backoff.wait()
            attempts += 1
            try:
                await self._open()
            except _SetupError as exc:
                self.counters.faults += 1
                log.log(logging.WARNING if attempts == 1 else logging.DEBUG,
                        "%s: re-open failed: %s; retrying", self.name, exc)
                continue
            break
        self.backoff.reset()
        self._reopen_task = None
        log.info("%s: re-opened %s after %d attempt(s)", self.name, self.address, attempts)
        self._bring_up()
