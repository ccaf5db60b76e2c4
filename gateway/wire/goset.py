"""GOSET packet formats: claims, novelties (and zaps, recognised only to be dropped).

The GOSET is the grow-only set of feed ids two peers replicate. Keys are sorted as unsigned
byte strings; the set's state is the XOR of all keys. Packets (wire-compat.md section 3):

* claim, 105 B: ``GOSET_DMX | 'c' | lo (32) | hi (32) | xor of keys lo..hi (32) | cnt (1)``
* novelty, 40 B: ``GOSET_DMX | 'n' | key (32)``
* zap, 47 B (ESP32 debug feature): ``GOSET_DMX | 'z' | nonce (32) | 3 zero B | index (int32 BE)``

Receivers require the exact lengths; this module does too.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from nacl.bindings import crypto_core_ed25519_is_valid_point

from .entry import DMX_LEN, FID_LEN, PFX
from .errors import PacketError

GOSET_DMX = hashlib.sha256(b"tinySSB-0.1 GOset 1").digest()[:DMX_LEN]
MAX_KEYS = 100  # every reference implementation caps the set here
CLAIM_LEN = DMX_LEN + 1 + 3 * FID_LEN + 1  # 105
NOVELTY_LEN = DMX_LEN + 1 + FID_LEN  # 40
ZAP_LEN = DMX_LEN + 1 + FID_LEN + 3 + 4  # 47
ZERO_KEY = bytes(FID_LEN)


@dataclass(slots=True, frozen=True)
class Claim:
    lo: bytes
    hi: bytes
    xor: bytes
    cnt: int

    def encode(self) -> bytes:
        return GOSET_DMX + b"c" + self.lo + self.hi + self.xor + bytes([self.cnt])


@dataclass(slots=True, frozen=True)
class Novelty:
    key: bytes

    def encode(self) -> bytes:
        return GOSET_DMX + b"n" + self.key


@dataclass(slots=True, frozen=True)
class Zap:
    """An ESP32 zap (wipe) request. Decoded so it can be counted and dropped, never sent."""

    nonce: bytes
    index: int


GosetPacket = Claim | Novelty | Zap


def xor_keys(keys: Sequence[bytes]) -> bytes:
    """XOR of 32-byte keys (32 zero bytes for none)."""
    acc = 0
    for key in keys:
        acc ^= int.from_bytes(key, "big")
    return acc.to_bytes(FID_LEN, "big")


def plausible_key(key: bytes) -> bool:
    """Could ``key`` be a feed id? Feed ids are Ed25519 public keys: a valid point of
    the main subgroup (about 1 in 16 random 32-byte strings passes)."""
    return len(key) == FID_LEN and bool(crypto_core_ed25519_is_valid_point(bytes(key)))


def make_claim(keys_sorted: Sequence[bytes], lo: int, hi: int) -> Claim:
    """The claim over indices ``lo..hi`` (inclusive) of a sorted key list."""
    if not 0 <= lo <= hi < len(keys_sorted):
        raise PacketError(f"claim range {lo}..{hi} outside a set of {len(keys_sorted)}")
    span = keys_sorted[lo : hi + 1]
    if len(span) > 255:
        raise PacketError("a claim covers at most 255 keys")
    return Claim(bytes(keys_sorted[lo]), bytes(keys_sorted[hi]), xor_keys(span), len(span))


def want_dmx(state: bytes) -> bytes:
    """DMX of WANT packets between peers whose GOSET XOR is ``state``."""
    return hashlib.sha256(PFX + b"want" + bytes(state)).digest()[:DMX_LEN]


def chnk_dmx(state: bytes) -> bytes:
    """DMX of CHNK packets between peers whose GOSET XOR is ``state``."""
    return hashlib.sha256(PFX + b"blob" + bytes(state)).digest()[:DMX_LEN]


def decode_goset(packet: bytes) -> GosetPacket:
    """Decode a packet that starts with the GOSET DMX; :class:`PacketError` if malformed."""
    if type(packet) is bytes:  # (immutable: the same bytes decode the same)
        return _decode_bytes(packet)
    return _decode(packet)


# every radio around a sender decodes the very same packet, in a simulated mesh one after
# the other; the packets decoded are frozen, so all of them can share one (a malformed
# packet raises each time: lru_cache keeps no exceptions)
@functools.lru_cache(maxsize=256)
def _decode_bytes(packet: bytes) -> GosetPacket:
    return _decode(packet)


def _decode(packet: bytes) -> GosetPacket:
    if packet[:DMX_LEN] != GOSET_DMX:
        raise PacketError("not a GOSET packet")
    if len(packet) <= DMX_LEN:
        raise PacketError("GOSET packet without a type byte")
    kind = packet[DMX_LEN]
    body = bytes(packet[DMX_LEN + 1 :])
    if kind == 0x63:  # 'c'
        if len(packet) != CLAIM_LEN:
            raise PacketError(f"a claim is {CLAIM_LEN} bytes, got {len(packet)}")
        return Claim(body[0:32], body[32:64], body[64:96], body[96])
    if kind == 0x6E:  # 'n'
        if len(packet) != NOVELTY_LEN:
            raise PacketError(f"a novelty is {NOVELTY_LEN} bytes, got {len(packet)}")
        return Novelty(body)
    if kind == 0x7A:  # 'z'
        if len(packet) != ZAP_LEN:
            raise PacketError(f"a zap is {ZAP_LEN} bytes, got {len(packet)}")
        return Zap(body[0:32], int.from_bytes(body[35:39], "big", signed=True))
    raise PacketError(f"unknown GOSET packet type 0x{kind:02x}")
