"""A 356-byte CHNK vector, as the reference tinyISP ISP sends it, is answered by a running
gateway over UDP multicast and over WebSocket (issue 15, item 2). Loopback only."""

from __future__ import annotations

import asyncio
import socket
import struct
from pathlib import Path

from websockets.asyncio.client import connect

from gateway.replication.policy import IP
from gateway.transports.udp import UdpMulticast
from gateway.transports.websocket import WebSocketServer
from gateway.wire.crc import add_crc, strip_crc
from gateway.wire.entry import PACKET_LEN, hash20
from gateway.wire.goset import chnk_dmx

from ..replication.test_long_vectors import (
    CHUNK_AT,
    FEED,
    KEY,
    first_credit,
    reference_isp_chnk,
)
from .harness import populate, run, running, until

GROUP, LO = "239.5.5.8", "127.0.0.1"


def _asked() -> tuple[bytes, set[tuple[int, int]]]:
    frame, asked = reference_isp_chnk(chnk_dmx(KEY.fid))
    return frame, {(s, c) for s, _ in asked for c in range(3)}


def _member(port: int) -> socket.socket:
    """Another program on this host in the group, on the loopback interface."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind((GROUP, port))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                 struct.pack("4s4s", socket.inet_aton(GROUP), socket.inet_aton(LO)))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(LO))
    s.setblocking(False)
    return s


def test_a_356_byte_chnk_over_udp_is_answered(tmp_path: Path) -> None:
    populate(tmp_path / "gw", [FEED])
    frame, asked = _asked()

    async def scenario() -> None:
        link = UdpMulticast(GROUP, 0, interface=LO, loopback=True)
        async with running(tmp_path / "gw", [link], policy=IP, status_interval=0) as gw:
            got: list[tuple[int, int]] = []
            with _member(link.port) as peer:
                loop = asyncio.get_running_loop()
                await loop.sock_sendto(peer, add_crc(frame), (GROUP, link.port))

                async def collect() -> None:
                    while True:
                        data = await loop.sock_recv(peer, 2048)
                        if len(data) == PACKET_LEN + 4:
                            h = hash20(strip_crc(data))
                            if h in CHUNK_AT:
                                got.append(CHUNK_AT[h])

                task = asyncio.create_task(collect())
                await until(lambda: len(got) >= first_credit(IP))
                task.cancel()
            assert set(got) <= asked and len(got) <= IP.credit
            assert link.counters.dropped_in == 0
            assert gw.node is not None and gw.node.stats.drops["too_long"] == 0

    run(scenario)


def test_a_356_byte_chnk_over_websocket_is_answered(tmp_path: Path) -> None:
    populate(tmp_path / "gw", [FEED])
    frame, asked = _asked()

    async def scenario() -> None:
        server = WebSocketServer(0, LO)
        async with running(tmp_path / "gw", [server], policy=IP, status_interval=0):
            got: list[tuple[int, int]] = []
            async with connect(f"ws://{LO}:{server.port}") as ws:
                await ws.send(frame)
                async with asyncio.timeout(30):
                    while len(got) < first_credit(IP):
                        message = await ws.recv()
                        assert isinstance(message, bytes)
                        if len(message) == PACKET_LEN and hash20(message) in CHUNK_AT:
                            got.append(CHUNK_AT[hash20(message)])
            assert set(got) <= asked and len(got) == first_credit(IP)

    run(scenario)
