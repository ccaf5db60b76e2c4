"""Log entries and side chains: the 120-byte packets of a tinySSB feed.

Layout (wire-compat.md section 2, which follows the reference code where it differs from
the draft spec):

* virtual name (never sent, 66 B): ``"tinyssb-v0" | FID (32) | SEQ (4, big-endian) | PREV (20)``;
  PREV of the first entry (seq 1) is ``FID[:20]``, afterwards the previous entry's msg-id;
* DMX = sha256(name)[:7];
* entry packet (120 B): ``DMX (7) | type (1) | payload (48) | signature (64)``, the
  signature covering ``name | packet[0:56]``;
* msg-id = sha256(name | packet)[:20];
* chain20 payload: ``VL | HEAD | PTR`` with VL the unsigned LEB128 content length, HEAD the
  first ``28 - |VL|`` content bytes (zero padded) and PTR (20 B) the hash of chunk 0;
* chunk (120 B): 100 content bytes | 20-byte hash of the next chunk (zeros in the last).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from nacl.bindings import crypto_sign, crypto_sign_open, crypto_sign_seed_keypair
from nacl.exceptions import BadSignatureError, CryptoError

from .crc import Buffer
from .errors import PacketError, SignatureError, VarintError
from .varint import decode_varint, encode_varint

PFX = b"tinyssb-v0"
PACKET_LEN = 120
DMX_LEN = 7
HASH_LEN = 20
FID_LEN = 32
SIG_LEN = 64
SEQ_LEN = 4
NAME_LEN = len(PFX) + FID_LEN + SEQ_LEN + HASH_LEN  # 66
PAYLOAD_LEN = 48
SIGNED_LEN = DMX_LEN + 1 + PAYLOAD_LEN  # 56 packet bytes covered by the signature
CHUNK_CONTENT_LEN = 100
CHAIN20_SLOT_LEN = PAYLOAD_LEN - HASH_LEN  # 28 bytes for VL and HEAD
MAX_SEQ = 2**32 - 1

TYPE_PLAIN48 = 0
TYPE_CHAIN20 = 1

ZERO_HASH = bytes(HASH_LEN)

_sha256 = hashlib.sha256


def sha256(data: bytes) -> bytes:
    return _sha256(data).digest()


_HASH20_KEPT = 4096  # hashes remembered (then forgotten all at once)
_hash20_of: dict[bytes, bytes] = {}


def hash20(data: Buffer) -> bytes:
    """The 20-byte hash pointer of a chunk (or of anything): sha256(data)[:20].

    Remembered for packets seen lately: a packet heard by many radios of a simulated
    mesh (or relayed back to a gateway) is hashed by each of them for the chunk table.
    """
    if type(data) is not bytes:  # a mutable buffer: its content may change
        return _sha256(data).digest()[:HASH_LEN]
    h = _hash20_of.get(data)
    if h is None:
        if len(_hash20_of) >= _HASH20_KEPT:
            _hash20_of.clear()
        h = _hash20_of[data] = _sha256(data).digest()[:HASH_LEN]
    return h


def genesis_prev(fid: bytes) -> bytes:
    """PREV of seq 1: the first 20 bytes of the feed id (every reference implementation)."""
    return bytes(fid[:HASH_LEN])


def entry_name(fid: bytes, seq: int, prev: bytes) -> bytes:
    """The 66-byte virtual name of entry ``seq`` of feed ``fid`` whose predecessor is ``prev``."""
    if len(fid) != FID_LEN:
        raise PacketError(f"feed id must be {FID_LEN} bytes, got {len(fid)}")
    if len(prev) != HASH_LEN:
        raise PacketError(f"prev must be {HASH_LEN} bytes, got {len(prev)}")
    if not 1 <= seq <= MAX_SEQ:
        raise PacketError(f"sequence number out of range: {seq}")
    return PFX + bytes(fid) + seq.to_bytes(SEQ_LEN, "big") + bytes(prev)


def dmx_of_name(name: bytes) -> bytes:
    return _sha256(name).digest()[:DMX_LEN]


def entry_dmx(fid: bytes, seq: int, prev: bytes) -> bytes:
    """The DMX a receiver arms to catch entry ``seq`` of ``fid``."""
    return dmx_of_name(entry_name(fid, seq, prev))


def msg_id_of(name: bytes, packet: bytes) -> bytes:
    return _sha256(name + packet).digest()[:HASH_LEN]


def chunk_count(length: int) -> int:
    """How many 100-byte side-chain chunks a chain20 content of ``length`` bytes needs."""
    head = CHAIN20_SLOT_LEN - len(encode_varint(length))
    rest = length - head
    return 0 if rest <= 0 else (rest + CHUNK_CONTENT_LEN - 1) // CHUNK_CONTENT_LEN


@dataclass(slots=True, frozen=True)
class Chain20:
    """The decoded payload of a chain20 entry."""

    length: int  # total content length L
    head: bytes  # the content bytes carried in the entry itself (min(L, 28-|VL|))
    ptr: bytes  # hash of chunk 0, zeros when there are no chunks
    n_chunks: int


def parse_chain20(packet: bytes) -> Chain20:
    """Decode the chain20 payload of a 120-byte entry packet (type byte not checked)."""
    if len(packet) < SIGNED_LEN:
        raise PacketError("packet too short for a chain20 payload")
    payload = packet[DMX_LEN + 1 : SIGNED_LEN]
    try:
        length, pos = decode_varint(payload, 0)
    except VarintError as exc:
        raise PacketError(f"bad chain20 length: {exc}") from exc
    if pos > CHAIN20_SLOT_LEN:
        raise PacketError("chain20 length field overruns its slot")
    room = CHAIN20_SLOT_LEN - pos
    rest = length - room  # counted from the field's actual width, as the reference does
    n = 0 if rest <= 0 else (rest + CHUNK_CONTENT_LEN - 1) // CHUNK_CONTENT_LEN
    head = bytes(payload[pos : pos + min(length, room)])
    return Chain20(length, head, bytes(payload[CHAIN20_SLOT_LEN:]), n)


def build_chain20(content: bytes) -> tuple[bytes, list[bytes]]:
    """Split ``content`` into a 48-byte chain20 payload and its chunks (built back to front)."""
    vl = encode_varint(len(content))
    if len(vl) >= CHAIN20_SLOT_LEN:
        raise PacketError("content too long for chain20")
    room = CHAIN20_SLOT_LEN - len(vl)
    head, rest = content[:room], content[room:]
    pieces = [rest[i : i + CHUNK_CONTENT_LEN] for i in range(0, len(rest), CHUNK_CONTENT_LEN)]
    chunks: list[bytes] = [b""] * len(pieces)
    ptr = ZERO_HASH
    for i in range(len(pieces) - 1, -1, -1):
        chunk = pieces[i].ljust(CHUNK_CONTENT_LEN, b"\x00") + ptr
        chunks[i] = chunk
        ptr = hash20(chunk)
    payload = vl + head.ljust(room, b"\x00") + ptr
    return payload, chunks


@dataclass(slots=True, frozen=True)
class FeedKey:
    """An Ed25519 feed key: ``fid`` is the public key, ``secret`` the 64-byte libsodium key."""

    seed: bytes
    fid: bytes
    secret: bytes

    @classmethod
    def from_seed(cls, seed: bytes) -> FeedKey:
        if len(seed) != 32:
            raise ValueError(f"an Ed25519 seed is 32 bytes, got {len(seed)}")
        pk, sk = crypto_sign_seed_keypair(bytes(seed))
        return cls(bytes(seed), pk, sk)

    def sign(self, message: bytes) -> bytes:
        return crypto_sign(message, self.secret)[:SIG_LEN]


@dataclass(slots=True, frozen=True)
class Entry:
    """A verified (or freshly built) entry with everything derived from it."""

    fid: bytes
    seq: int
    prev: bytes
    packet: bytes
    msg_id: bytes
    chunks: tuple[bytes, ...] = ()

    @property
    def dmx(self) -> bytes:
        return self.packet[:DMX_LEN]

    @property
    def type(self) -> int:
        return self.packet[DMX_LEN]


def build_entry(key: FeedKey, seq: int, prev: bytes, content: bytes,
                typ: int = TYPE_CHAIN20) -> Entry:
    """Build and sign entry ``seq`` of ``key``'s feed holding ``content``.

    ``typ`` 1 (chain20) takes content of any length and produces side-chain chunks; ``typ``
    0 (plain48) takes at most 48 bytes, zero-padded.
    """
    name = entry_name(key.fid, seq, prev)
    if typ == TYPE_CHAIN20:
        payload, chunks = build_chain20(bytes(content))
    elif typ == TYPE_PLAIN48:
        if len(content) > PAYLOAD_LEN:
            raise PacketError(f"plain48 content is at most {PAYLOAD_LEN} bytes")
        payload, chunks = bytes(content).ljust(PAYLOAD_LEN, b"\x00"), []
    else:
        raise PacketError(f"cannot build entries of type {typ}")
    signed = dmx_of_name(name) + bytes([typ]) + payload
    packet = signed + key.sign(name + signed)
    return Entry(key.fid, seq, bytes(prev), packet, msg_id_of(name, packet), tuple(chunks))


def build_feed(key: FeedKey, contents: Iterable[bytes | tuple[bytes, int]]) -> list[Entry]:
    """Build entries 1, 2, ... of ``key``'s feed, each chained to the one before.

    An item is the content (chain20) or a ``(content, type)`` pair.
    """
    prev, entries = genesis_prev(key.fid), []
    for seq, item in enumerate(contents, 1):
        content, typ = item if isinstance(item, tuple) else (item, TYPE_CHAIN20)
        entry = build_entry(key, seq, prev, content, typ)
        entries.append(entry)
        prev = entry.msg_id
    return entries


@dataclass(slots=True, frozen=True)
class ExpectedEntry:
    """Entry ``seq`` of ``fid`` after ``prev``, as a receiver waits for it: name and DMX
    computed once, so the DMX can be armed and the packet verified without rehashing."""

    fid: bytes
    seq: int
    prev: bytes
    name: bytes
    dmx: bytes

    @classmethod
    def of(cls, fid: bytes, seq: int, prev: bytes) -> ExpectedEntry:
        name = entry_name(fid, seq, prev)
        return cls(bytes(fid), seq, bytes(prev), name, dmx_of_name(name))

    def verify(self, packet: bytes) -> Entry:
        """Check that ``packet`` is this entry; return it as an :class:`Entry`.

        Raises :class:`PacketError` for a wrong length or DMX and :class:`SignatureError`
        for a signature that does not verify.
        """
        if len(packet) != PACKET_LEN:
            raise PacketError(f"an entry is {PACKET_LEN} bytes, got {len(packet)}")
        packet = bytes(packet)
        if packet[:DMX_LEN] != self.dmx:
            raise PacketError("DMX does not match the expected entry")
        if not _signature_ok(packet[SIGNED_LEN:] + self.name + packet[:SIGNED_LEN], self.fid):
            raise SignatureError("entry signature does not verify")
        return Entry(self.fid, self.seq, self.prev, packet, msg_id_of(self.name, packet))


@functools.lru_cache(maxsize=4096)
def _signature_ok(signed: bytes, fid: bytes) -> bool:
    """Does ``signed`` (signature, then message) verify under ``fid``? Remembered for the
    latest few thousand frames: the same entry reaches a node over several neighbours,
    and every node of a simulated mesh checks each entry (a pure function of its bytes)."""
    try:
        crypto_sign_open(signed, fid)
    except (BadSignatureError, CryptoError, ValueError):
        return False
    return True


def verify_entry(fid: bytes, seq: int, prev: bytes, packet: bytes) -> Entry:
    """Check that ``packet`` is entry ``seq`` of ``fid`` after ``prev``; return it as an Entry."""
    return ExpectedEntry.of(fid, seq, prev).verify(packet)


def chunks_needed(packet: bytes) -> int:
    """How many side-chain chunks an entry packet announces (0 for type 0 or short content)."""
    if packet[DMX_LEN] != TYPE_CHAIN20:
        return 0
    return parse_chain20(packet).n_chunks


def verify_chunk(expected_hash: bytes, chunk: bytes) -> bytes:
    """Check a side-chain chunk against the hash that points to it; return the next pointer."""
    if len(chunk) != PACKET_LEN:
        raise PacketError(f"a chunk is {PACKET_LEN} bytes, got {len(chunk)}")
    if hash20(chunk) != expected_hash:
        raise PacketError("chunk does not match its hash pointer")
    return bytes(chunk[CHUNK_CONTENT_LEN:])


def content_of(packet: bytes, chunks: list[bytes] | tuple[bytes, ...] = ()) -> bytes:
    """Reassemble the content of an entry from its packet and all of its chunks.

    Type 1 gives the chain20 content (exactly L bytes); any other type gives the 48 payload
    bytes, as the reference stores it.
    """
    if len(packet) != PACKET_LEN:
        raise PacketError(f"an entry is {PACKET_LEN} bytes, got {len(packet)}")
    if packet[DMX_LEN] != TYPE_CHAIN20:
        return bytes(packet[DMX_LEN + 1 : SIGNED_LEN])
    chain = parse_chain20(packet)
    if len(chunks) != chain.n_chunks:
        raise PacketError(f"entry needs {chain.n_chunks} chunks, got {len(chunks)}")
    parts, ptr = [chain.head], chain.ptr
    for chunk in chunks:  # a chunk damaged after it was stored must not pass as content
        nxt = verify_chunk(ptr, chunk)
        parts.append(bytes(chunk[:CHUNK_CONTENT_LEN]))
        ptr = nxt
    return b"".join(parts)[: chain.length]
