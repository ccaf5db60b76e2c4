"""Secure links over loopback TCP: SHS, then one box per frame; refusals are quiet."""

from __future__ import annotations

import asyncio
import logging

import pytest

from gateway.replication.faces import FaceKind
from gateway.secure import BoxEncoder, Identity, ShsClient
from gateway.transports.base import Backoff, LinkError
from gateway.transports.secure import SecureClient, SecureServer, SecureSettings
from gateway.wire.ident import format_id

from .test_websocket import FakeHost, free_port, run

FAST = Backoff(initial=0.02, maximum=0.1, jitter=0.0)
NET = bytes(range(32))
A = Identity.from_seed(bytes([0xA]) * 32)  # the server
B = Identity.from_seed(bytes([0xB]) * 32)  # an allowed client
C = Identity.from_seed(bytes([0xC]) * 32)  # not allowed
LOG = "gateway.transports.secure"


async def listen(allow: frozenset[bytes] | None = frozenset({B.public}),
                 **settings: float) -> tuple[SecureServer, FakeHost]:
    server, host = SecureServer(0, "127.0.0.1", network_key=NET, allow=allow, identity=A,
                                settings=SecureSettings(**settings)), FakeHost()  # type: ignore[arg-type]
    await server.start(host)
    return server, host


def client(port: int, *, who: Identity = B, net: bytes = NET,
           peer: Identity = A) -> SecureClient:
    return SecureClient("127.0.0.1", port, peer.public, network_key=net, identity=who,
                        backoff=FAST)


def refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOG and "refused" in
            r.getMessage()]


def test_frames_both_ways_and_both_identities_known() -> None:
    async def go() -> None:
        server, s_host = await listen()
        c = client(server.port)
        c_host = FakeHost()
        await c.start(c_host)
        await s_host.until(lambda: len(s_host.up()) == 1)
        peer = s_host.up()[0]
        assert c_host.up() == [f"shs:127.0.0.1:{server.port}"]
        assert peer.startswith("shs:127.0.0.1:")
        assert s_host.faces[peer].kind is FaceKind.POINT_TO_POINT and not s_host.faces[peer].crc
        assert server.describe()["identities"] == {peer: format_id(B.public)}
        assert c.describe()["identities"] == {c.face_name: format_id(A.public)}
        for i in range(50):
            assert c_host.sends[c.face_name](bytes([i]) * 120)
        assert s_host.sends[peer](b"\x02" * 120)
        await s_host.until(lambda: len(s_host.frames) == 50)
        await c_host.until(lambda: c_host.frames == [(c.face_name, b"\x02" * 120)])
        assert [f for _, f in s_host.frames] == [bytes([i]) * 120 for i in range(50)]
        await c.close()  # sends the goodbye
        await s_host.until(lambda: s_host.events[-1] == ("down", peer))
        assert server.counters.faults == 0
        await server.close()
    run(go)


@pytest.mark.parametrize(("who", "net", "peer", "server_says", "client_says"), [
    (B, bytes(32), A, "client hello failed authentication (wrong network key?)",
     "a different network key"),
    (C, NET, A, f"identity {format_id(C.public)} is not on the allow-list",
     "not on its allow-list"),
    (B, NET, C, "client authenticate did not open", "not on its allow-list, or it is not"),
])
def test_refused_peers_get_no_face_and_one_log_line(
        caplog: pytest.LogCaptureFixture, who: Identity, net: bytes, peer: Identity,
        server_says: str, client_says: str) -> None:
    async def go() -> None:
        server, s_host = await listen()
        c = client(server.port, who=who, net=net, peer=peer)
        with pytest.raises(LinkError, match=client_says):
            await c.start(FakeHost())
        await s_host.until(lambda: server.refused == 1)
        assert s_host.events == [] and s_host.frames == []
        await server.close()

    caplog.set_level(logging.INFO, LOG)
    run(go)
    lines = refusals(caplog)
    assert len(lines) == 1 and "refused 127.0.0.1:" in lines[0] and server_says in lines[0]


async def raw_handshake(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter,
                                              BoxEncoder]:
    """Connect as B by hand; the box encoder of our direction."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    shs = ShsClient(B, A.public, NET)
    while not shs.done:
        writer.write(shs.data_to_send())
        shs.receive_data(await reader.readexactly(shs.expected()))
    writer.write(shs.data_to_send())
    assert shs.session is not None
    return reader, writer, BoxEncoder(shs.session.encrypt_key, shs.session.encrypt_nonce)


@pytest.mark.parametrize("attack", ["flip", "replay", "truncate"])
def test_a_bad_box_closes_the_face_and_reaches_nothing(
        caplog: pytest.LogCaptureFixture, attack: str) -> None:
    async def go() -> None:
        server, s_host = await listen()
        reader, writer, enc = await raw_handshake(server.port)
        await s_host.until(lambda: len(s_host.up()) == 1)
        good = enc.encode(b"\x01" * 120)
        writer.write(good)
        await s_host.until(lambda: len(s_host.frames) == 1)
        if attack == "flip":
            box = enc.encode(b"\x02" * 120)
            bad = box[:40] + bytes([box[40] ^ 0x10]) + box[41:]  # a bit of the body
        elif attack == "replay":
            bad = good
        else:
            bad = enc.encode(b"\x03" * 120)[:-5]
        writer.write(bad)
        if attack == "truncate":
            writer.close()
        await s_host.until(lambda: not s_host.up())
        assert [f for _, f in s_host.frames] == [b"\x01" * 120]
        assert await reader.read() == b""  # no goodbye to an impostor stream, just closed
        writer.close()
        await server.close()

    caplog.set_level(logging.INFO, LOG)
    run(go)
    why = {"flip": "bad box: a body box did not open", "replay": "bad box: a header box",
           "truncate": "without the box stream's goodbye"}[attack]
    assert any(why in r.getMessage() for r in caplog.records if r.name == LOG)


@pytest.mark.parametrize(("send", "why"), [
    (b"\x00" * 30, "closed by the client during the handshake"),  # truncated hello
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"\x00" * 40, "client hello failed"),
    (b"", "handshake not finished within 0.2 s"),
])
def test_garbage_and_silence_are_refused(caplog: pytest.LogCaptureFixture, send: bytes,
                                         why: str) -> None:
    async def go() -> None:
        server, s_host = await listen(handshake_timeout=0.2)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(send)
        if len(send) < 64 and send:
            writer.write_eof()
        assert await reader.read() == b""  # the server never answers
        writer.close()
        assert server.refused == 1 and s_host.events == []
        await server.close()

    caplog.set_level(logging.INFO, LOG)
    run(go)
    lines = refusals(caplog)
    assert len(lines) == 1 and why in lines[0]


def test_any_identity_with_the_network_key_when_no_allow_list() -> None:
    async def go() -> None:
        server, s_host = await listen(allow=None)
        c = client(server.port, who=C)
        await c.start(FakeHost())
        await s_host.until(lambda: len(s_host.up()) == 1)
        assert list(server.describe()["identities"].values()) == [format_id(C.public)]
        await c.close()
        await server.close()
    run(go)


def test_client_reconnects_after_server_restart() -> None:
    async def go() -> None:
        server, _ = await listen()
        port = server.port
        c, c_host = client(port), FakeHost()
        await c.start(c_host)
        await server.close()
        await c_host.until(lambda: c_host.events[-1] == ("down", c.face_name))
        again = SecureServer(port, "127.0.0.1", network_key=NET, allow=frozenset({B.public}),
                             identity=A)
        s_host = FakeHost()
        await again.start(s_host)
        await c_host.until(lambda: c_host.events[-1] == ("up", c.face_name))
        await s_host.until(lambda: len(s_host.up()) == 1)
        assert c_host.sends[c.face_name](b"\x05" * 120)
        await s_host.until(lambda: [f for _, f in s_host.frames] == [b"\x05" * 120])
        await c.close()
        await again.close()
    run(go)


def test_unreachable_and_busy_are_one_line_link_errors() -> None:
    async def go() -> None:
        port = free_port()
        with pytest.raises(LinkError, match=f"cannot connect to 127.0.0.1:{port} .*: "
                           "connection refused"):
            await client(port).start(FakeHost())
        server, _ = await listen()
        busy = SecureServer(server.port, "127.0.0.1", network_key=NET, allow=None, identity=A)
        with pytest.raises(LinkError, match="address already in use"):
            await busy.start(FakeHost())
        await server.close()
        nobody = SecureServer(0, "127.0.0.1", network_key=NET, allow=None)
        with pytest.raises(LinkError, match="no identity"):
            await nobody.start(FakeHost())
    run(go)
