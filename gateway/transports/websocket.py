"""WebSocket links: one tinySSB packet per binary message, no CRC trailer.

:class:`WebSocketServer` listens and opens one point-to-point face per connected peer;
:class:`WebSocketClient` connects to one URL and keeps that connection up, reconnecting
with :class:`~.base.Backoff` after a drop. Both use the asyncio API of ``websockets``.

What the reference peers expect (``shared/docs/wire-compat.md`` section 5): every
packet is one binary message. A text message crashes the Python reference's handler
and the Android app ignores it, so we never send one, and a text message we receive is
dropped and counted (``counters.dropped_in``) while the connection stays up.

Choices (:class:`WsSettings`):

* per-message compression (permessage-deflate) is off: packets are 120 bytes of mostly
  signatures and hashes, which do not compress, and each compressed connection keeps
  two zlib contexts (tens of KiB) alive. It is negotiated, so peers that offer it
  simply go without.
* ``max_size`` is 4096 bytes: ample for 120-byte packets, and a peer sending a giant
  message is refused (the connection closes with 1009, "message too big"). The face's
  MTU (``mtu``, :data:`~gateway.replication.faces.IP_MTU`) bounds the WANT/CHNK
  vectors the Node takes from a peer; longer messages are dropped and counted there.
* keepalive pings every 20 s, and a peer whose pong is 20 s late is dropped.

Face names: ``ws:HOST:PORT`` for a server's peer (the peer's address and source port,
IPv6 hosts in brackets) and ``ws:HOST:PORT[/PATH]`` for a client (the URL's host, its
port or the scheme's default, and its path when there is one), so a client's face keeps
its name across reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import SplitResult, urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import (
    ConnectionClosed,
    ConnectionClosedError,
    InvalidHandshake,
    InvalidStatus,
    InvalidURI,
)

from ..replication.faces import IP_MTU, Face, FaceKind
from .base import Backoff, Link, LinkError, LinkHost, Outbox, os_reason, reconnect

__all__ = ["MAX_MESSAGE", "WebSocketClient", "WebSocketServer", "WsSettings",
           "client_face_name"]

log = logging.getLogger(__name__)

MAX_MESSAGE = 4096
"""Largest message we accept, in bytes; a tinySSB packet is 120."""

_Connection = ServerConnection | ClientConnection


@dataclass(frozen=True, slots=True)
class WsSettings:
    """How each WebSocket connection is run (the module's notes give the reasons)."""

    outbox_size: int = 1024  # frames queued per peer before new ones are dropped
    queue_size: int = 512  # the face's send queue in the Node (answers to one request)
    max_size: int = MAX_MESSAGE  # largest message accepted, bytes
    mtu: int = IP_MTU  # longest packet the Node takes from a peer (a WANT/CHNK vector)
    ping_interval: float | None = 20.0  # keepalive ping every ... s (None: no pings)
    ping_timeout: float | None = 20.0  # drop a peer whose pong is this late
    close_timeout: float = 5.0  # wait this long for the peer's close frame
    burst: int = 16  # messages handled per connection before the others get their turn
    stall_timeout: float = 5.0  # drop a peer that takes nothing this long, outbox full
    # kernel send buffer per connection, bytes: what a peer that stops reading can absorb
    # before its outbox fills (64 KiB carries ~5,000 packets/s at a 100 ms round trip)
    send_buffer: int | None = 65536

    def connection_options(self) -> dict[str, Any]:
        """Keyword arguments for ``websockets``' ``serve`` and ``connect``."""
        return {"compression": None, "max_size": self.max_size,
                "ping_interval": self.ping_interval, "ping_timeout": self.ping_timeout,
                "close_timeout": self.close_timeout}


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _closed_reason(exc: ConnectionClosed) -> str:
    if exc.rcvd is not None:
        return f"closed by the peer: {exc.rcvd}"
    if exc.sent is not None:
        return f"closed by us: {exc.sent}"
    return "connection lost"


class _Peer:
    """One open WebSocket connection carried as a point-to-point face."""

    __slots__ = ("_burst", "_closing", "_down", "_host", "_link", "_outbox", "_stalled", "conn",
                 "counters", "name")

    def __init__(self, link: WebSocketServer | WebSocketClient, conn: _Connection, name: str,
                 host: LinkHost, closing: Callable[[], bool]) -> None:
        self.conn = conn
        self.name = name
        self.counters = counters = link.counters
        self._link = link.name
        self._host = host
        self._closing = closing
        self._down = False
        self._stalled: str | None = None
        self._burst = max(1, link.settings.burst)
        if link.settings.send_buffer is not None:
            sock = conn.transport.get_extra_info("socket") if conn.transport else None
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF,
                                    link.settings.send_buffer)
        self._outbox = Outbox(name, self._write, counters, size=link.settings.outbox_size,
                              on_error=self._write_failed, on_stall=self._not_reading,
                              stall_after=link.settings.stall_timeout)
        counters.connects += 1
        host.face_up(Face(name, kind=FaceKind.POINT_TO_POINT, mtu=link.settings.mtu,
                          queue_size=link.settings.queue_size), self._outbox.put)

    async def _write(self, frame: bytes) -> None:
        await self.conn.send(frame)
        log.debug("%s: tx %d B", self.name, len(frame))

    def _write_failed(self, exc: BaseException) -> None:
        # a send fails only on a closed connection, which also ends carry()'s recv
        log.debug("%s: sending to %s failed: %s", self._link, self.name, exc)

    def _not_reading(self, seconds: float) -> None:
        """The peer took nothing for ``seconds`` while its outbox was full: drop it (its
        buffered frames would otherwise keep costing the gateway time)."""
        self._stalled = f"peer does not read: nothing taken for {seconds:.0f} s"
        self.counters.faults += 1
        log.warning("%s: %s %s; disconnecting it", self._link, self.name, self._stalled[5:])
        transport = getattr(self.conn, "transport", None)
        if transport is not None:
            transport.abort()  # no closing handshake: it would not read that either

    async def carry(self) -> None:
        """Move messages to the host until the connection ends, then close the face.

        Fairness: after ``burst`` messages the other connections (and the gateway's own
        loop) get their turn; messages from a peer whose outbox is full are dropped
        unread (it takes less than it asks for), and a peer that takes nothing at all
        for ``stall_timeout`` is disconnected."""
        reason = "link closed"
        handled = 0
        try:
            while True:
                message = await self.conn.recv()
                handled += 1
                if handled % self._burst == 0:
                    await asyncio.sleep(0)
                if self._outbox.full():
                    self.counters.dropped_in += 1
                    self._outbox.check_stall()
                    continue
                if isinstance(message, str):
                    self.counters.dropped_in += 1
                    log.debug("%s: text message (%d chars) dropped: tinySSB is binary only",
                              self.name, len(message))
                    continue
                self.counters.frames_in += 1
                self.counters.bytes_in += len(message)
                log.debug("%s: rx %d B", self.name, len(message))
                self._host.frame_in(self.name, message)
        except ConnectionClosed as exc:
            if self._stalled is not None:
                reason = self._stalled
            elif not self._closing():
                reason = _closed_reason(exc)
                if isinstance(exc, ConnectionClosedError):
                    self.counters.faults += 1
        except Exception as exc:  # the host failed on a frame: report it, drop the peer
            log.exception("%s: handling a frame from %s failed; closing the connection",
                          self._link, self.name)
            self.counters.faults += 1
            reason = f"internal error: {exc}"
        finally:
            await self.stop(reason)

    async def stop(self, reason: str) -> None:
        """Close the face (once), its outbox and the connection."""
        if not self._down:
            self._down = True
            log.info("%s: %s disconnected (%s)", self._link, self.name, reason)
            self._host.face_down(self.name, reason)
        await self._outbox.close()
        await self.conn.close()


class WebSocketServer(Link):
    """Accept WebSocket peers on ``host:port``; one point-to-point face per peer.

    ``port`` 0 picks a free port; :attr:`port` tells which once started.
    """

    kind = "ws-listen"

    def __init__(self, port: int, host: str = "0.0.0.0", *, name: str | None = None,
                 settings: WsSettings | None = None) -> None:
        super().__init__(name or f"ws-listen:{_bracket(host)}:{port}")
        self.host = host
        self.port = port
        self.settings = settings if settings is not None else WsSettings()
        self._server: Server | None = None
        self._link_host: LinkHost | None = None
        self._peers: dict[str, _Peer] = {}
        self._closing = False
        self._unnamed = 0

    @property
    def address(self) -> str:
        return f"{_bracket(self.host)}:{self.port}"

    async def start(self, host: LinkHost) -> None:
        if self._server is not None:
            raise LinkError(f"{self.name} is already started")
        self._link_host = host
        self._closing = False
        try:
            self._server = await serve(self._handle, self.host, self.port,
                                       **self.settings.connection_options())
        except OSError as exc:
            raise LinkError(f"cannot listen on {self.address}: {os_reason(exc)}") from None
        if self.port == 0 and self._server.sockets:
            self.port = self._server.sockets[0].getsockname()[1]
        log.info("%s: listening on %s", self.name, self.address)

    def _face_name(self, conn: ServerConnection) -> str:
        peer = conn.remote_address
        if peer:
            return f"ws:{_bracket(str(peer[0]))}:{peer[1]}"
        self._unnamed += 1  # the socket closed before we asked; a name is still needed
        return f"ws:unknown-{self._unnamed}"

    async def _handle(self, conn: ServerConnection) -> None:
        assert self._link_host is not None
        if self._closing:
            return
        name = self._face_name(conn)
        log.info("%s: %s connected", self.name, name)
        peer = _Peer(self, conn, name, self._link_host, lambda: self._closing)
        self._peers[name] = peer
        try:
            await peer.carry()
        finally:
            if self._peers.get(name) is peer:
                del self._peers[name]

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._closing = True
        server.close()
        await server.wait_closed()  # every handler has returned: each face is down
        for peer in list(self._peers.values()):
            await peer.stop("link closed")
        self._peers.clear()
        log.info("%s: closed", self.name)

    def describe(self) -> dict[str, Any]:
        if self._server is not None:
            state = "listening"
        else:
            state = "closed" if self._closing else "new"
        return {"state": state, "peers": sorted(self._peers), "host": self.host,
                "port": self.port, "counters": self.counters.as_dict()}


def _parse_url(url: str) -> tuple[SplitResult, int]:
    """The URL's parts and port; ValueError with a reason when it is no WebSocket URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss"):
        raise ValueError("the URL must start with ws:// or wss://")
    if not parts.hostname:
        raise ValueError("the URL names no host")
    try:
        port = parts.port
    except ValueError:
        raise ValueError("the URL's port is not a number from 0 to 65535") from None
    return parts, port or (443 if parts.scheme == "wss" else 80)


def client_face_name(url: str) -> str:
    """The face name a :class:`WebSocketClient` for ``url`` uses: ``ws:HOST:PORT[/PATH]``."""
    try:
        parts, port = _parse_url(url)
    except ValueError:
        return f"ws:{url}"
    path = parts.path if parts.path not in ("", "/") else ""
    return f"ws:{_bracket(parts.hostname or '')}:{port}{path}"


class _ConnectFailed(Exception):
    """One connection attempt failed; the message is the reason, one line. ``lasting``
    when trying again cannot help (a bad URL, a server that is no WebSocket)."""

    def __init__(self, reason: str, *, lasting: bool = False) -> None:
        super().__init__(reason)
        self.lasting = lasting


class WebSocketClient(Link):
    """Connect to ``url`` and keep the connection up: one point-to-point face.

    After a drop the face goes down and the client reconnects with ``backoff`` (reset
    once connected); the face comes back under the same name (:func:`client_face_name`).
    ``proxy`` is passed to ``websockets`` (True: from the environment; None: direct).
    """

    kind = "ws-connect"

    def __init__(self, url: str, *, name: str | None = None, backoff: Backoff | None = None,
                 settings: WsSettings | None = None, open_timeout: float = 10.0,
                 proxy: str | Literal[True] | None = True) -> None:
        super().__init__(name or f"ws-connect:{url}")
        self.url = url
        self.face_name = client_face_name(url)
        self.backoff = backoff if backoff is not None else Backoff()
        self.settings = settings if settings is not None else WsSettings()
        self.open_timeout = open_timeout
        self.proxy = proxy
        self._link_host: LinkHost | None = None
        self._peer: _Peer | None = None
        self._task: asyncio.Task[None] | None = None
        self._state = "new"
        self._closing = False

    async def start(self, host: LinkHost) -> None:
        if self._task is not None:
            raise LinkError(f"{self.name} is already started")
        self._link_host = host
        self._closing = False
        self._state = "connecting"
        try:
            conn = await self._connect()
        except _ConnectFailed as exc:
            if exc.lasting:
                self._state = "closed"
                raise LinkError(f"cannot connect to {self.url}: {exc}") from None
            # a peer that is down now (a service manager starting both sides at once) is
            # tried again with the backoff used after a lost connection
            self.counters.faults += 1
            log.warning("%s: cannot connect to %s (%s); retrying", self.name, self.url, exc)
            self._task = asyncio.get_running_loop().create_task(
                self._keep(None), name=f"{self.name} keeper")
            return
        log.info("%s: connected to %s", self.name, self.url)
        peer = self._adopt(conn)
        self._task = asyncio.get_running_loop().create_task(
            self._keep(peer), name=f"{self.name} keeper")

    async def _connect(self) -> ClientConnection:
        """One attempt; :class:`_ConnectFailed` with a one-line reason when it fails."""
        try:
            _parse_url(self.url)
        except ValueError as exc:
            raise _ConnectFailed(str(exc), lasting=True) from None
        try:
            return await connect(self.url, open_timeout=self.open_timeout, proxy=self.proxy,
                                 **self.settings.connection_options())
        except InvalidStatus as exc:
            raise _ConnectFailed(f"the server answered HTTP {exc.response.status_code}, "
                                 "not a WebSocket", lasting=True) from None
        except InvalidURI as exc:
            raise _ConnectFailed(str(exc), lasting=True) from None
        except InvalidHandshake as exc:
            reason = f"handshake failed: {exc}"
        except TimeoutError:
            reason = f"no answer within {self.open_timeout:g} s"
        except OSError as exc:
            reason = os_reason(exc)
        raise _ConnectFailed(reason)

    def _adopt(self, conn: ClientConnection) -> _Peer:
        assert self._link_host is not None
        self._state = "up"
        self._peer = _Peer(self, conn, self.face_name, self._link_host, lambda: self._closing)
        return self._peer

    async def _keep(self, peer: _Peer | None) -> None:
        if peer is None:  # the first connection failed: start by reconnecting
            peer = await self._reconnect()
        while True:
            await peer.carry()
            self._peer = None
            if self._closing:
                return
            peer = await self._reconnect()

    async def _reconnect(self) -> _Peer:
        self._state = "connecting"
        conn, attempts = await reconnect(self.name, self.url, self.backoff, self.counters,
                                         self._connect, _ConnectFailed, log)
        log.info("%s: reconnected to %s after %d attempt(s)", self.name, self.url, attempts)
        return self._adopt(conn)

    async def close(self) -> None:
        self._closing = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        peer, self._peer = self._peer, None
        if peer is not None:  # cancelled before carry() could close it
            await peer.stop("link closed")
        if self._state != "new":
            log.info("%s: closed", self.name)
        self._state = "closed"

    def describe(self) -> dict[str, Any]:
        peers = [self._peer.name] if self._peer is not None else []
        return {"state": self._state, "peers": peers, "url": self.url,
                "counters": self.counters.as_dict()}
