"""Secure links, sans-I/O: the Secret Handshake and the box stream (no sockets here)."""

from .boxstream import BoxDecoder, BoxEncoder, BoxStreamError
from .netkey import DEFAULT_NETWORK_KEY, SSB_MAIN_NETWORK_KEY, parse_network_key
from .shs import HandshakeFailed, Identity, Session, ShsClient, ShsServer

__all__ = [
    "DEFAULT_NETWORK_KEY",
    "SSB_MAIN_NETWORK_KEY",
    "BoxDecoder",
    "BoxEncoder",
    "BoxStreamError",
    "HandshakeFailed",
    "Identity",
    "Session",
    "ShsClient",
    "ShsServer",
    "parse_network_key",
]
