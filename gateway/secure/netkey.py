"""Network keys: which SHS network a gateway belongs to.

The network key (SHS's "network identifier") is mixed into every handshake message: a
peer with another key cannot even get past the first message. Each deployment should
pick its own (``tinyssb network-key`` prints a fresh one); gateways that set none use
the tinySSB default, which is public and so only keeps tinySSB gateways apart from
other SHS networks. It is ``sha256("tinySSB gateway network v1")``, deliberately not
Scuttlebutt's main-net key, so our gateways never answer SSB peers by accident.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib

__all__ = ["DEFAULT_NETWORK_KEY", "DEFAULT_NETWORK_LABEL", "SSB_MAIN_NETWORK_KEY",
           "describe_network_key", "parse_network_key"]

DEFAULT_NETWORK_LABEL = b"tinySSB gateway network v1"
DEFAULT_NETWORK_KEY = bytes.fromhex(
    "ddd79d54b7b282dec7e54048fe7044758c64ff88ddcade940f9346f5a3224de0")
"""``sha256(DEFAULT_NETWORK_LABEL)``: the tinySSB default (public: pick your own)."""

SSB_MAIN_NETWORK_KEY = bytes.fromhex(
    "d4a1cb88a66f02f8db635ce26441cc5dac1b08420ceaac230839b755845a9ffb")
"""Scuttlebutt's main network (the protocol guide); only ever used when asked for."""


def parse_network_key(text: str) -> bytes:
    """64 hex digits or base64 of 32 bytes; ValueError naming the accepted forms."""
    text = text.strip()
    if len(text) == 64:
        with contextlib.suppress(ValueError):  # not hex: try base64 below
            return bytes.fromhex(text)
    try:
        key = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) == 32:
        return key
    raise ValueError("a network key is 32 bytes as 64 hex digits or base64 (44 characters); "
                     "`tinyssb network-key` makes one")


def describe_network_key(key: bytes) -> str:
    """How logs name a key without revealing it: default, SSB main net, or a fingerprint."""
    if key == DEFAULT_NETWORK_KEY:
        return "the tinySSB default network key"
    if key == SSB_MAIN_NETWORK_KEY:
        return "Scuttlebutt's main-net key"
    return f"network key {hashlib.sha256(key).hexdigest()[:8]}"
