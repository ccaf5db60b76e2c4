"""WebSocket links over loopback TCP: a server and a client link talking to each other."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

import pytest
from websockets.asyncio.client import connect

from gateway.replication.faces import Face, FaceKind
from gateway.transports.base import Backoff, LinkError, RadioMeta, SendFn
from gateway.transports.websocket import (
    WebSocketClient,
    WebSocketServer,
    WsSettings,
    client_face_name,
)

T = TypeVar("T")
WAIT = 3.0  # bound on any single wait; loopback answers in milliseconds
FAST = Backoff(initial=0.02, maximum=0.1, jitter=0.0)


def run(coro: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(4 * WAIT):
            return await coro()
    return asyncio.run(bounded())


@dataclass(slots=True)
class FakeHost:
    """A LinkHost that records what the link reports and lets a test await it."""

    events: list[tuple[str, str]] = field(default_factory=list)
    faces: dict[str, Face] = field(default_factory=dict)
    sends: dict[str, SendFn] = field(default_factory=dict)
    frames: list[tuple[str, bytes]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def face_up(self, face: Face, send: SendFn) -> None:
        self.events.append(("up", face.name))
        self.faces[face.name] = face
        self.sends[face.name] = send
        self.changed.set()

    def face_down(self, name: str, reason: str) -> None:
        self.events.append(("down", name))
        self.sends.pop(name, None)
        self.changed.set()

    def frame_in(self, face: str, frame: bytes, meta: RadioMeta | None = None) -> None:
        self.frames.append((face, frame))
        self.changed.set()

    def up(self) -> list[str]:
        return list(self.sends)

    async def until(self, check: Callable[[], bool]) -> None:
        async with asyncio.timeout(WAIT):
            while not check():
                self.changed.clear()
                await self.changed.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def pair() -> tuple[WebSocketServer, FakeHost, WebSocketClient, FakeHost]:
    server, s_host = WebSocketServer(0, "127.0.0.1"), FakeHost()
    await server.start(s_host)
    client, c_host = WebSocketClient(f"ws://127.0.0.1:{server.port}", backoff=FAST,
                                     proxy=None), FakeHost()
    await client.start(c_host)
    await s_host.until(lambda: len(s_host.up()) == 1)
    return server, s_host, client, c_host


def test_binary_frames_both_ways() -> None:
    async def go() -> None:
        server, s_host, client, c_host = await pair()
        assert c_host.up() == [f"ws:127.0.0.1:{server.port}"]
        assert c_host.faces[client.face_name].kind is FaceKind.POINT_TO_POINT
        peer = s_host.up()[0]
        assert peer.startswith("ws:127.0.0.1:") and s_host.faces[peer].crc is False
        assert c_host.sends[client.face_name](b"\x01" * 120)
        assert s_host.sends[peer](b"\x02" * 120)
        await s_host.until(lambda: s_host.frames == [(peer, b"\x01" * 120)])
        await c_host.until(lambda: c_host.frames == [(client.face_name, b"\x02" * 120)])
        assert server.describe()["peers"] == [peer]
        assert client.describe()["state"] == "up"
        await client.close()
        await s_host.until(lambda: s_host.events[-1] == ("down", peer))
        await server.close()
        assert c_host.events == [("up", client.face_name), ("down", client.face_name)]
        assert s_host.events == [("up", peer), ("down", peer)]
        assert client.counters.frames_out == 1 and client.counters.frames_in == 1
        assert server.counters.bytes_in == 120 and server.counters.connects == 1
    run(go)


def test_text_message_dropped_and_counted_connection_survives() -> None:
    async def go() -> None:
        server, s_host = WebSocketServer(0, "127.0.0.1"), FakeHost()
        await server.start(s_host)
        async with connect(f"ws://127.0.0.1:{server.port}", proxy=None) as ws:
            await s_host.until(lambda: len(s_host.up()) == 1)
            await ws.send("hello, not a packet")
            await ws.send(b"\x07" * 120)
            await s_host.until(lambda: len(s_host.frames) == 1)
            assert s_host.frames[0][1] == b"\x07" * 120
            assert server.counters.dropped_in == 1 and len(s_host.up()) == 1
            assert s_host.sends[s_host.up()[0]](b"\x08" * 10)
            assert await ws.recv() == b"\x08" * 10
        await s_host.until(lambda: not s_host.up())
        await server.close()
        assert [e for e, _ in s_host.events] == ["up", "down"]
    run(go)


def test_oversize_message_closes_that_peer_only() -> None:
    async def go() -> None:
        server, s_host = WebSocketServer(0, "127.0.0.1", settings=WsSettings(max_size=256)), FakeHost()
        await server.start(s_host)
        url = f"ws://127.0.0.1:{server.port}"
        async with connect(url, proxy=None) as good, connect(url, proxy=None) as bad:
            await s_host.until(lambda: len(s_host.up()) == 2)
            await bad.send(b"\x00" * 1000)
            await s_host.until(lambda: len(s_host.up()) == 1)
            await good.send(b"\x01" * 120)
            await s_host.until(lambda: len(s_host.frames) == 1)
        await server.close()
        assert s_host.frames[0][1] == b"\x01" * 120
    run(go)


def test_server_close_takes_every_face_down() -> None:
    async def go() -> None:
        server, s_host = WebSocketServer(0, "127.0.0.1"), FakeHost()
        await server.start(s_host)
        url = f"ws://127.0.0.1:{server.port}"
        async with connect(url, proxy=None), connect(url, proxy=None):
            await s_host.until(lambda: len(s_host.up()) == 2)
            await server.close()
            assert not s_host.up() and server.describe()["state"] == "closed"
        downs = [name for event, name in s_host.events if event == "down"]
        assert sorted(downs) == sorted(name for e, name in s_host.events if e == "up")
        assert len(downs) == 2
    run(go)


def test_busy_port_is_one_line_link_error() -> None:
    async def go() -> None:
        with socket.socket() as blocker:
            blocker.bind(("127.0.0.1", 0))
            blocker.listen()
            port = blocker.getsockname()[1]
            server = WebSocketServer(port, "127.0.0.1")
            with pytest.raises(LinkError) as err:
                await server.start(FakeHost())
        assert str(err.value) == f"cannot listen on 127.0.0.1:{port}: address already in use"
    run(go)


def test_a_peer_down_at_start_is_retried_with_backoff_until_it_answers() -> None:
    """Issue 18: `run --connect` exited 2 when the peer was down at start, so a service
    manager starting two gateways failed one of them."""
    async def go() -> None:
        port = free_port()  # nobody listens there yet
        client = WebSocketClient(f"ws://127.0.0.1:{port}", proxy=None,
                                 backoff=Backoff(initial=0.02, maximum=0.1))
        c_host = FakeHost()
        await client.start(c_host)  # no LinkError: the peer may come up later
        assert client.describe()["state"] == "connecting" and c_host.up() == []
        await asyncio.sleep(0.1)
        assert client.counters.faults >= 2  # tried again meanwhile
        server, s_host = WebSocketServer(port, "127.0.0.1"), FakeHost()
        await server.start(s_host)
        await c_host.until(lambda: c_host.up() == [client.face_name])
        assert c_host.sends[client.face_name](b"\x07" * 120)
        await s_host.until(lambda: [f for _, f in s_host.frames] == [b"\x07" * 120])
        await client.close()
        await server.close()
    run(go)


def test_a_url_that_cannot_work_is_one_line_link_error() -> None:
    async def go() -> None:
        bad = WebSocketClient("http://127.0.0.1:80/")
        with pytest.raises(LinkError, match="must start with ws:// or wss://"):
            await bad.start(FakeHost())
        assert bad.describe()["state"] == "closed" and bad.describe()["peers"] == []
    run(go)


def test_client_reconnects_after_server_restart() -> None:
    async def go() -> None:
        server, _, client, c_host = await pair()
        port, face = server.port, client.face_name
        await server.close()
        await c_host.until(lambda: c_host.events[-1] == ("down", face))
        assert client.describe()["state"] == "connecting"
        again, s_host2 = WebSocketServer(port, "127.0.0.1"), FakeHost()
        await again.start(s_host2)
        await c_host.until(lambda: c_host.events[-1] == ("up", face))
        await s_host2.until(lambda: len(s_host2.up()) == 1)
        assert c_host.sends[face](b"\x05" * 120)
        await s_host2.until(lambda: [f for _, f in s_host2.frames] == [b"\x05" * 120])
        assert s_host2.sends[s_host2.up()[0]](b"\x06" * 120)
        await c_host.until(lambda: [f for _, f in c_host.frames] == [b"\x06" * 120])
        await client.close()
        await again.close()
        assert c_host.events == [("up", face), ("down", face)] * 2
        assert client.counters.connects == 2
    run(go)


def test_client_face_names_are_stable() -> None:
    assert client_face_name("ws://Example.org") == "ws:example.org:80"
    assert client_face_name("wss://example.org/feed") == "ws:example.org:443/feed"
    assert client_face_name("ws://[::1]:8989/") == "ws:[::1]:8989"


def test_client_close_while_reconnecting() -> None:
    async def go() -> None:
        server, _, client, c_host = await pair()
        await server.close()
        await c_host.until(lambda: c_host.events[-1] == ("down", client.face_name))
        await client.close()  # in backoff or in a refused attempt: either way it stops
        assert c_host.events == [("up", client.face_name), ("down", client.face_name)]
        assert client.describe()["state"] == "closed"
    run(go)
