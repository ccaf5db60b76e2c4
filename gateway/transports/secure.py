"""Secure links: tinySSB frames over the Secret Handshake and the box stream on TCP.

:class:`SecureServer` listens and opens one point-to-point face per peer that passes
the handshake; :class:`SecureClient` connects to one ``HOST:PORT`` whose identity it
knows and keeps that connection up, reconnecting with :class:`~.base.Backoff`. The
protocol work is sans-I/O in :mod:`gateway.secure`; this module only moves its bytes.

A connection runs SHS first (client hello, server hello, client authenticate, server
accept), keyed by the deployment's network key; the server accepts only identities on
its allow-list, checked inside the handshake before it answers message 3. Only then
does a face come up: one tinySSB frame per box, no CRC trailer (the box's MAC is
stronger). Our identity is the node's feed key: the runtime's ``key`` attribute
(:attr:`Gateway.key <gateway.runtime.gateway.Gateway>`), unless one is given.

Refusals are quiet: a wrong network key, an identity not allowed, a tampered or
truncated handshake, a handshake that takes longer than ``handshake_timeout``: the
connection closes and one log line names the peer's address and the reason; the Node
never hears of it. A box that does not open (tampered, replayed, reordered) after the
handshake closes the face the same way. Leaving sends the box stream's goodbye.

Pacing, as on the WebSocket link: the frames of one read (up to ``read_size`` bytes,
some 400 boxes) go to the host ``burst`` at a time, the gateway's loop running between
bursts, and the send buffers are small (``send_buffer`` in the kernel, ``write_limit`` in
the transport). Handed over all at once, behind megabytes of autotuned kernel buffer,
they kept the gateway from asking and answering while it took them in: replication ran
at 61 % of plain WebSocket's rate on the same CPU time (docs/gateway.md, "Speed").

Face names: ``shs:HOST:PORT`` (the peer's address and source port for a server's peer,
the server's address for a client, which keeps its name across reconnects).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..replication.faces import Face, FaceKind
from ..secure import BoxDecoder, BoxEncoder, BoxStreamError, HandshakeFailed, Identity
from ..secure.boxstream import MAX_BODY
from ..secure.netkey import describe_network_key
from ..secure.shs import Phase, ShsClient, ShsServer
from ..wire.entry import FeedKey
from ..wire.ident import format_id
from .base import Backoff, Link, LinkError, LinkHost, Outbox, os_reason, reconnect

__all__ = ["SecureClient", "SecureServer", "SecureSettings"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SecureSettings:
    handshake_timeout: float = 10.0  # s from accept/connect to the last handshake message
    outbox_size: int = 1024  # frames queued per peer before new ones are dropped
    queue_size: int = 512  # the face's send queue in the Node
    read_size: int = 65536  # bytes per read from the socket
    close_timeout: float = 5.0  # wait this long for our goodbye to leave
    burst: int = 16  # frames handed to the host before the gateway's loop gets its turn
    # kernel send buffer per connection (None: the system's, autotuned to megabytes) and
    # the transport's write buffer limit: what may wait between our Node and the peer's
    send_buffer: int | None = 65536
    write_limit: int = 32768


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _tune(writer: asyncio.StreamWriter, settings: SecureSettings) -> None:
    """Small frames go out at once; a dead peer is noticed by TCP keepalive; the send
    buffers stay small (the module notes say why)."""
    with contextlib.suppress(OSError, RuntimeError, ValueError):
        writer.transport.set_write_buffer_limits(high=settings.write_limit)
    sock = writer.get_extra_info("socket")
    if sock is None:
        return
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        if settings.send_buffer is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, settings.send_buffer)


async def _run_handshake(shs: ShsClient | ShsServer, reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter, settings: SecureSettings) -> None:
    """Move the handshake's bytes until it is done; HandshakeFailed with the reason."""
    try:
        async with asyncio.timeout(settings.handshake_timeout):
            while True:
                out = shs.data_to_send()
                if out:
                    writer.write(out)
                    await writer.drain()
                if shs.done:
                    return
                data = await reader.read(settings.read_size)
                if not data:
                    raise HandshakeFailed(_hung_up(shs))
                shs.receive_data(data)
    except TimeoutError:
        raise HandshakeFailed("handshake not finished within "
                              f"{settings.handshake_timeout:g} s") from None
    except OSError as exc:
        raise HandshakeFailed(f"{os_reason(exc)} during the handshake") from None


def _hung_up(shs: ShsClient | ShsServer) -> str:
    if isinstance(shs, ShsServer):
        return "closed by the client during the handshake"
    if shs.phase is Phase.HELLO:
        return "the server hung up after our hello (a different network key?)"
    return ("the server hung up after our authentication (we are not on its allow-list, "
            "or it is not the identity we expect)")


async def _close(writer: asyncio.StreamWriter, timeout: float) -> None:
    writer.close()
    with contextlib.suppress(OSError, TimeoutError):
        async with asyncio.timeout(timeout):
            await writer.wait_closed()


class _Peer:
    """One authenticated connection carried as a point-to-point face."""

    __slots__ = ("_closing", "_decoder", "_down", "_encoder", "_host", "_link", "_outbox",
                 "_reader", "_rest", "_settings", "_writer", "counters", "identity", "name")

    def __init__(self, link: SecureServer | SecureClient, name: str, host: LinkHost,
                 reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 shs: ShsClient | ShsServer, closing: Callable[[], bool]) -> None:
        session = shs.session
        assert session is not None
        self.name = name
        self.identity = format_id(session.peer)
        self.counters = counters = link.counters
        self._link = link.name
        self._settings = link.settings
        self._host = host
        self._reader = reader
        self._writer = writer
        self._closing = closing
        self._rest = shs.rest
        self._encoder = BoxEncoder(session.encrypt_key, session.encrypt_nonce)
        self._decoder = BoxDecoder(session.decrypt_key, session.decrypt_nonce)
        self._down = False
        self._outbox = Outbox(name, self._write, counters, size=link.settings.outbox_size,
                              on_error=self._write_failed)
        counters.connects += 1
        host.face_up(Face(name, kind=FaceKind.POINT_TO_POINT,
                          queue_size=link.settings.queue_size), self._outbox.put)

    async def _write(self, frame: bytes) -> None:
        if not 0 < len(frame) <= MAX_BODY:
            self.counters.dropped_out += 1  # the Node's frames are 120 B; never happens
            return
        self._writer.write(self._encoder.encode(frame))
        await self._writer.drain()

    def _write_failed(self, exc: BaseException) -> None:
        # the connection broke; carry()'s read ends too and closes the face
        log.debug("%s: sending to %s failed: %s", self._link, self.name, exc)

    async def _deliver(self, data: bytes) -> None:
        frames = self._decoder.receive_data(data)
        burst = max(1, self._settings.burst)
        for i, frame in enumerate(frames, 1):
            self.counters.frames_in += 1
            self.counters.bytes_in += len(frame)
            self._host.frame_in(self.name, frame)
            if i % burst == 0 and i < len(frames):
                await asyncio.sleep(0)  # the gateway answers and asks between bursts

    async def carry(self) -> None:
        """Move frames to the host until the connection ends, then close the face."""
        reason, goodbye = "link closed", True
        try:
            await self._deliver(self._rest)
            while not self._decoder.closed:
                data = await self._reader.read(self._settings.read_size)
                if not data:
                    reason = "the connection ended without the box stream's goodbye"
                    self.counters.faults += 1
                    break
                await self._deliver(data)
            else:
                reason = "the peer said goodbye"
        except BoxStreamError as exc:
            self.counters.faults += 1
            self.counters.dropped_in += 1
            reason, goodbye = f"bad box: {exc}", False
        except OSError as exc:
            if not self._closing():
                self.counters.faults += 1
                reason, goodbye = os_reason(exc), False
        except Exception as exc:  # the host failed on a frame: report it, drop the peer
            log.exception("%s: handling a frame from %s failed; closing the connection",
                          self._link, self.name)
            self.counters.faults += 1
            reason = f"internal error: {exc}"
        finally:
            await self.stop(reason, goodbye=goodbye)

    async def stop(self, reason: str, *, goodbye: bool = True) -> None:
        """Close the face (once), the outbox and the connection (with our goodbye)."""
        if self._down:
            return
        self._down = True
        log.info("%s: %s (%s) disconnected: %s", self._link, self.name, self.identity, reason)
        self._host.face_down(self.name, reason)
        await self._outbox.close()
        if goodbye and not self._encoder.closed and not self._writer.is_closing():
            with contextlib.suppress(OSError):
                self._writer.write(self._encoder.goodbye())
        await _close(self._writer, self._settings.close_timeout)


def _identity_of(host: LinkHost, given: Identity | None, name: str) -> Identity:
    """The identity given, or else the host's feed key (the gateway's ``key``)."""
    if given is not None:
        return given
    key = getattr(host, "key", None)
    if not isinstance(key, FeedKey):
        raise LinkError(f"{name}: the runtime gave no identity for the handshake")
    return Identity.from_seed(key.seed)


class SecureServer(Link):
    """Accept SHS peers on ``host:port``; one point-to-point face per authenticated peer.

    ``allow`` is the allow-list of long-term public keys (None: any peer that knows the
    network key). ``port`` 0 picks a free port; :attr:`port` tells which once started.
    """

    kind = "secure-listen"

    def __init__(self, port: int, host: str = "0.0.0.0", *, network_key: bytes,
                 allow: frozenset[bytes] | None, identity: Identity | None = None,
                 name: str | None = None, settings: SecureSettings | None = None) -> None:
        super().__init__(name or f"secure-listen:{_bracket(host)}:{port}")
        self.host = host
        self.port = port
        self.network_key = bytes(network_key)
        self.allow = allow
        self.identity = identity
        self.settings = settings if settings is not None else SecureSettings()
        self.refused = 0
        self._server: asyncio.Server | None = None
        self._link_host: LinkHost | None = None
        self._peers: dict[str, _Peer] = {}
        self._handlers: set[asyncio.Task[None]] = set()
        self._closing = False

    @property
    def address(self) -> str:
        return f"{_bracket(self.host)}:{self.port}"

    async def start(self, host: LinkHost) -> None:
        if self._server is not None:
            raise LinkError(f"{self.name} is already started")
        self.identity = _identity_of(host, self.identity, self.name)
        self._link_host = host
        self._closing = False
        try:
            self._server = await asyncio.start_server(self._handle, self.host, self.port)
        except OSError as exc:
            raise LinkError(f"cannot listen on {self.address}: {os_reason(exc)}") from None
        if self.port == 0 and self._server.sockets:
            self.port = self._server.sockets[0].getsockname()[1]
        allowed = ("any identity with the key" if self.allow is None
                   else f"allow-list of {len(self.allow)}")
        log.info("%s: listening on %s as %s (%s, %s)", self.name, self.address,
                 format_id(self.identity.public), describe_network_key(self.network_key),
                 allowed)

    def _authorize(self, public: bytes) -> bool:
        return self.allow is None or public in self.allow

    async def _handle(self, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            await self._serve(reader, writer)
        finally:
            if task is not None:
                self._handlers.discard(task)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self._link_host is not None and self.identity is not None
        peer = writer.get_extra_info("peername")
        address = f"{_bracket(str(peer[0]))}:{peer[1]}" if peer else "unknown"
        if self._closing:
            await _close(writer, 0)
            return
        _tune(writer, self.settings)
        shs = ShsServer(self.identity, self.network_key, authorize=self._authorize)
        try:
            await _run_handshake(shs, reader, writer, self.settings)
        except HandshakeFailed as exc:
            self.refused += 1
            log.info("%s: refused %s: %s", self.name, address, exc.reason)
            await _close(writer, 0)
            return
        name = f"shs:{address}"
        conn = _Peer(self, name, self._link_host, reader, writer, shs, lambda: self._closing)
        log.info("%s: %s connected as %s", self.name, name, conn.identity)
        self._peers[name] = conn
        try:
            await conn.carry()
        finally:
            if self._peers.get(name) is conn:
                del self._peers[name]

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._closing = True
        server.close()
        for conn in list(self._peers.values()):
            await conn.stop("link closed")
        for task in list(self._handlers):
            task.cancel()
        for task in list(self._handlers):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await server.wait_closed()
        self._peers.clear()
        log.info("%s: closed", self.name)

    def describe(self) -> dict[str, Any]:
        if self._server is not None:
            state = "listening"
        else:
            state = "closed" if self._closing else "new"
        return {"state": state, "peers": sorted(self._peers), "host": self.host,
                "port": self.port,
                "identity": format_id(self.identity.public) if self.identity else None,
                "identities": {name: p.identity for name, p in sorted(self._peers.items())},
                "network": describe_network_key(self.network_key),
                "allowed": None if self.allow is None else len(self.allow),
                "refused": self.refused, "counters": self.counters.as_dict()}


class _ConnectFailed(Exception):
    """One connection attempt failed; the message is the reason, one line."""


class SecureClient(Link):
    """Connect to ``host:port``, which must prove to be ``peer``; one point-to-point face.

    After a drop the face goes down and the client reconnects with ``backoff`` (reset
    once connected); the face comes back under the same name.
    """

    kind = "secure-connect"

    def __init__(self, host: str, port: int, peer: bytes, *, network_key: bytes,
                 identity: Identity | None = None, name: str | None = None,
                 backoff: Backoff | None = None, settings: SecureSettings | None = None,
                 connect_timeout: float = 10.0) -> None:
        self.address = f"{_bracket(host)}:{port}"
        super().__init__(name or f"secure-connect:{self.address}")
        self.host = host
        self.port = port
        self.peer = bytes(peer)
        self.network_key = bytes(network_key)
        self.identity = identity
        self.face_name = f"shs:{self.address}"
        self.backoff = backoff if backoff is not None else Backoff()
        self.settings = settings if settings is not None else SecureSettings()
        self.connect_timeout = connect_timeout
        self._link_host: LinkHost | None = None
        self._conn: _Peer | None = None
        self._task: asyncio.Task[None] | None = None
        self._state = "new"
        self._closing = False

    async def start(self, host: LinkHost) -> None:
        if self._task is not None:
            raise LinkError(f"{self.name} is already started")
        self.identity = _identity_of(host, self.identity, self.name)
        self._link_host = host
        self._closing = False
        self._state = "connecting"
        try:
            conn = await self._connect()
        except _ConnectFailed as exc:
            self._state = "closed"
            raise LinkError(f"cannot connect to {self.address} ({format_id(self.peer)}): "
                            f"{exc}") from None
        log.info("%s: connected to %s", self.name, conn.identity)
        self._task = asyncio.get_running_loop().create_task(
            self._keep(conn), name=f"{self.name} keeper")

    async def _connect(self) -> _Peer:
        """One attempt: TCP, then the handshake; :class:`_ConnectFailed` with the reason."""
        assert self._link_host is not None and self.identity is not None
        try:
            async with asyncio.timeout(self.connect_timeout):
                reader, writer = await asyncio.open_connection(self.host, self.port)
        except TimeoutError:
            raise _ConnectFailed(f"no answer within {self.connect_timeout:g} s") from None
        except OSError as exc:
            raise _ConnectFailed(os_reason(exc)) from None
        _tune(writer, self.settings)
        shs = ShsClient(self.identity, self.peer, self.network_key)
        try:
            await _run_handshake(shs, reader, writer, self.settings)
        except HandshakeFailed as exc:
            await _close(writer, 0)
            raise _ConnectFailed(f"handshake refused: {exc.reason}") from None
        self._state = "up"
        self._conn = _Peer(self, self.face_name, self._link_host, reader, writer, shs,
                           lambda: self._closing)
        return self._conn

    async def _keep(self, conn: _Peer) -> None:
        while True:
            await conn.carry()
            self._conn = None
            if self._closing:
                return
            conn = await self._reconnect()

    async def _reconnect(self) -> _Peer:
        self._state = "connecting"
        conn, attempts = await reconnect(self.name, self.address, self.backoff,
                                         self.counters, self._connect, _ConnectFailed, log)
        log.info("%s: reconnected to %s after %d attempt(s)", self.name, conn.identity,
                 attempts)
        return conn

    async def close(self) -> None:
        self._closing = True
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.stop("link closed")
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._state != "new":
            log.info("%s: closed", self.name)
        self._state = "closed"

    def describe(self) -> dict[str, Any]:
        conn = self._conn
        return {"state": self._state, "peers": [conn.name] if conn is not None else [],
                "address": self.address, "peer_id": format_id(self.peer),
                "identity": format_id(self.identity.public) if self.identity else None,
                "identities": {conn.name: conn.identity} if conn is not None else {},
                "network": describe_network_key(self.network_key),
                "counters": self.counters.as_dict()}
