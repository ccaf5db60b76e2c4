"""UDP multicast link on the loopback interface only (127.0.0.1): nothing leaves the host."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.replication.faces import IP_MTU, FaceKind
from gateway.transports.base import Backoff, LinkError
from gateway.transports.udp import UDP_BURST, UDP_RATE, UdpMulticast

from .test_websocket import FakeHost, run

GROUP = "239.5.5.8"
LO = "127.0.0.1"
FAST = Backoff(initial=0.01, maximum=0.05, jitter=0.0)


def lo_link(port: int = 0, name: str = "udp") -> UdpMulticast:
    return UdpMulticast(GROUP, port, interface=LO, loopback=True, name=name, backoff=FAST)


def lo_sender() -> socket.socket:
    """A plain socket multicasting on the loopback interface, as another program would."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(LO))
    s.bind((LO, 0))
    return s


def report_send_error(link: UdpMulticast, code: int) -> None:
    """What asyncio does when sendto() fails: error_received on the send endpoint."""
    assert link._tx is not None
    endpoint = link._tx.get_protocol()
    assert isinstance(endpoint, asyncio.DatagramProtocol)
    endpoint.error_received(OSError(code, os.strerror(code)))


def test_two_links_exchange_datagrams_and_ignore_their_own() -> None:
    async def go() -> None:
        a, a_host = lo_link(name="udp-a"), FakeHost()
        await a.start(a_host)
        b, b_host = lo_link(a.port, name="udp-b"), FakeHost()
        await b.start(b_host)
        face = a_host.faces["udp-a"]
        assert face.crc is True and face.kind is FaceKind.BROADCAST
        assert (face.rate, face.burst, face.mtu) == (UDP_RATE, UDP_BURST, IP_MTU)
        assert a_host.sends["udp-a"](b"A" * 124)
        await b_host.until(lambda: b_host.frames == [("udp-b", b"A" * 124)])
        assert b_host.sends["udp-b"](b"B" * 124)
        await a_host.until(lambda: a_host.frames == [("udp-a", b"B" * 124)])
        # each heard its own datagram before the other's (one socket, in order): dropped
        assert a.counters.own_echoes == 1 and b.counters.own_echoes == 1
        assert a.counters.dropped_in == 0 and a.counters.frames_out == 1
        assert a.describe()["peers"] == ["udp-a"] and a.describe()["state"] == "up"
        assert a.describe()["source"].startswith("127.0.0.1:")
        await a.close()
        await b.close()
        assert a_host.events == [("up", "udp-a"), ("down", "udp-a")]
        assert b.describe()["state"] == "closed" and not b.describe()["peers"]
    run(go)


def test_oversize_and_empty_datagrams_dropped() -> None:
    async def go() -> None:
        link, host = lo_link(), FakeHost()
        await link.start(host)
        with lo_sender() as s:
            s.sendto(b"x" * (link.max_datagram + 1), (GROUP, link.port))
            s.sendto(b"", (GROUP, link.port))
            s.sendto(b"y" * link.max_datagram, (GROUP, link.port))
            await host.until(lambda: len(host.frames) == 1)
        assert host.frames == [("udp", b"y" * link.max_datagram)]
        assert link.counters.dropped_in == 2 and link.counters.own_echoes == 0
        assert not link.send(b"z" * (link.max_datagram + 1)) and link.counters.dropped_out == 1
        await link.close()
    run(go)


def test_socket_error_reopens_with_backoff() -> None:
    async def go() -> None:
        link, host = lo_link(), FakeHost()
        await link.start(host)
        report_send_error(link, errno.ENETUNREACH)  # the network went away
        assert not link.send(b"lost") and link.describe()["state"] == "reopening"
        await host.until(lambda: [e for e, _ in host.events] == ["up", "down", "up"])
        assert link.counters.faults == 1 and link.counters.connects == 2
        with lo_sender() as s:
            s.sendto(b"after", (GROUP, link.port))
            await host.until(lambda: host.frames == [("udp", b"after")])
        await link.close()
    run(go)


def test_transient_send_error_keeps_the_face() -> None:
    async def go() -> None:
        link, host = lo_link(), FakeHost()
        await link.start(host)
        report_send_error(link, errno.ENOBUFS)  # one datagram lost, the socket is fine
        assert link.describe()["state"] == "up" and link.counters.faults == 1
        await link.close()
        assert host.events == [("up", "udp"), ("down", "udp")]
    run(go)


def test_busy_port_is_one_line_link_error() -> None:
    async def go() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as blocker:
            blocker.bind((GROUP, 0))  # no SO_REUSEADDR: the port is taken
            port = blocker.getsockname()[1]
            with pytest.raises(LinkError) as err:
                await lo_link(port).start(FakeHost())
        assert str(err.value) == f"cannot listen on {GROUP}:{port}: address already in use"
    run(go)


@pytest.mark.parametrize(("kw", "message"), [
    ({"interface": "eth0"}, "must be the IPv4 address of a local interface"),
    ({"group": "127.0.0.1"}, "is not a multicast group"),
    ({"group": "not-a-group"}, "is not an IPv4 address"),
])
def test_bad_addresses_are_one_line_link_errors(kw: dict[str, str], message: str) -> None:
    async def go() -> None:
        args = {"group": GROUP, "interface": LO} | kw
        link = UdpMulticast(args["group"], 0, interface=args["interface"])
        with pytest.raises(LinkError, match=message):
            await link.start(FakeHost())
        assert link.describe()["state"] == "new"
    run(go)


def test_close_while_reopening_takes_the_face_down_once() -> None:
    async def go() -> None:
        link, host = lo_link(), FakeHost()
        await link.start(host)
        report_send_error(link, errno.EADDRNOTAVAIL)  # the interface lost its address
        await link.close()  # before the re-open task ran at all
        assert host.events == [("up", "udp"), ("down", "udp")]
        d = link.describe()
        assert (d["state"], d["peers"], d["source"]) == ("closed", [], None)
    run(go)


def test_a_face_on_loopback_ignores_the_group_on_another_interface() -> None:
    """Issue 15 item 4: bound to 127.0.0.1, the link hears nothing that arrives on
    another interface, although a program there joined the group on the same port.
    Runs in a fresh user and network namespace with a veth pair standing for eth0
    (tests/transports/netns_udp_child.py), so nothing touches the host's network."""
    unshare = shutil.which("unshare")
    if unshare is None or not sys.platform.startswith("linux"):
        pytest.skip("needs Linux and unshare(1) for a private network namespace")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([unshare, "-rn", sys.executable, "-m",
                           "tests.transports.netns_udp_child"], cwd=root,
                          capture_output=True, text=True, timeout=60, check=False)
    if done.returncode == 3 or (done.returncode and "unshare" in done.stderr):
        pytest.skip(f"cannot set up a network namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    heard = json.loads(done.stdout.strip().splitlines()[-1])
    assert heard["eth0"] == ["from-eth0"]  # the datagram did reach the host on "eth0"
    assert heard["link"] == ["from-lo"]  # ... but not our loopback face
