"""The links a :class:`GatewayConfig` asks for, built (not started) in a fixed order."""

from __future__ import annotations

from ..transports.base import Link
from .config import GatewayConfig

__all__ = ["build_links"]


def build_links(cfg: GatewayConfig) -> list[Link]:
    """Servers first, then the multicast group, the dongle, BLE, and outgoing peers last,
    so a peer that connects at once finds every face of ours ready."""
    links: list[Link] = []
    if cfg.ws_listen or cfg.ws_connect:
        from ..transports.websocket import WebSocketClient, WebSocketServer

        links.extend(WebSocketServer(port, host) for host, port in cfg.ws_listen)
    sec = cfg.secure
    if sec.active():
        from ..transports.secure import SecureClient, SecureServer, SecureSettings

        settings = SecureSettings(handshake_timeout=sec.handshake_timeout)
        links.extend(SecureServer(port, host, network_key=sec.network_key, allow=sec.allowed(),
                                  settings=settings) for host, port in sec.listen)
    if cfg.udp is not None:
        from ..transports.udp import UdpMulticast

        u = cfg.udp
        links.append(UdpMulticast(u.group, u.port, interface=u.interface, loopback=u.loopback,
                                  rate=u.rate, burst=u.burst))
    if cfg.serial is not None:
        from ..transports.dongle_face import SerialDongle

        s = cfg.serial
        links.append(SerialDongle(s.port, s.profile, duty_cycle=s.duty_cycle, board=s.board,
                                  params=s.params))
    if cfg.ble is not None:
        from ..transports.ble import BleCentral

        links.append(BleCentral(cfg.ble.address, max_peers=cfg.ble.max_peers))
    if cfg.ws_connect:
        links.extend(WebSocketClient(url) for url in cfg.ws_connect)
    if sec.connect:
        links.extend(SecureClient(p.host, p.port, p.peer, network_key=sec.network_key,
                                  settings=settings) for p in sec.connect)
    return links
