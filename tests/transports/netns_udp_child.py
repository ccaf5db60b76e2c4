"""Run inside a fresh network namespace (``unshare -rn``) by test_udp_interface.py.

Sets up two interfaces besides loopback: a veth pair v0 (10.99.0.1) <-> v1 (10.99.0.2),
standing for eth0 and the host on its other end. A UdpMulticast link joins the group on
127.0.0.1; another member (a second gateway) joins the same group and port on v0. Then
one datagram is multicast on lo and one arrives on v0 from v1. Prints one JSON line:
what the link and the v0 member heard. Exit 3: the namespace could not be set up.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import subprocess
import sys

from gateway.transports.udp import UdpMulticast
from tests.transports.test_websocket import FakeHost

GROUP, LO, V0, V1 = "239.5.5.8", "127.0.0.1", "10.99.0.1", "10.99.0.2"


def _setup() -> None:
    for cmd in ("ip link set lo up", "ip link add v0 type veth peer name v1",
                f"ip addr add {V0}/24 dev v0", f"ip addr add {V1}/24 dev v1",
                "ip link set v0 up", "ip link set v1 up",
                # v1's address is local too: let v0 take datagrams from it
                "sysctl -qw net.ipv4.conf.v0.accept_local=1",
                "sysctl -qw net.ipv4.conf.all.rp_filter=0",
                "sysctl -qw net.ipv4.conf.v0.rp_filter=0"):
        done = subprocess.run(cmd.split(), capture_output=True, text=True, check=False)
        if done.returncode:
            print(f"cannot run {cmd!r}: {done.stderr.strip()}", file=sys.stderr)
            sys.exit(3)


def _sock(iface: str, port: int, join: bool) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(iface))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
    if join:
        s.bind((GROUP, port))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                     struct.pack("4s4s", socket.inet_aton(GROUP), socket.inet_aton(iface)))
    else:
        s.bind((iface, 0))
    s.setblocking(False)
    return s


async def main() -> None:
    link, host = UdpMulticast(GROUP, 0, interface=LO, loopback=True), FakeHost()
    await link.start(host)
    member = _sock(V0, link.port, join=True)  # another gateway, on "eth0"
    far = _sock(V1, 0, join=False)  # a host on the other end of "eth0"
    local = _sock(LO, 0, join=False)  # another program on this host, on loopback
    far.sendto(b"from-eth0", (GROUP, link.port))
    local.sendto(b"from-lo", (GROUP, link.port))
    loop = asyncio.get_running_loop()
    heard = []
    try:
        async with asyncio.timeout(2.0):
            while "from-eth0" not in heard:
                heard.append((await loop.sock_recvfrom(member, 2048))[0].decode())
        await host.until(lambda: len(host.frames) >= 1)
    except TimeoutError:
        pass  # nothing more within 2 s: the check below decides
    await asyncio.sleep(0.3)  # anything else on its way arrives meanwhile
    print(json.dumps({"link": sorted(f.decode() for _, f in host.frames), "eth0": heard,
                      "dropped_in": link.counters.dropped_in}))
    await link.close()
    for s in (member, far, local):
        s.close()


if __name__ == "__main__":
    _setup()
    asyncio.run(main())
