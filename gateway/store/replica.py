"""One replicated feed: its frontier and the rules for what may be appended next.

A :class:`Replica` is storage-agnostic. It checks every entry and chunk against the feed's
state (expected DMX, signature, hash pointer) and hands the accepted bytes to a
:class:`FeedBackend`, which the disk and in-memory stores implement.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..wire.entry import (
    PACKET_LEN,
    TYPE_CHAIN20,
    Entry,
    entry_dmx,
    genesis_prev,
    parse_chain20,
    verify_chunk,
    verify_entry,
)
from ..wire.errors import PacketError


@dataclass(slots=True)
class PendingChain:
    """An entry whose side chain is not complete yet."""

    n_chunks: int
    next_cnr: int
    next_hash: bytes  # the hash the next chunk must have


@dataclass(slots=True)
class Frontier:
    """Where a feed stands: everything needed to accept the next entry and chunks."""

    max_seq: int
    prev: bytes
    pending: dict[int, PendingChain] = field(default_factory=dict)

    @classmethod
    def empty(cls, fid: bytes) -> Frontier:
        return cls(0, genesis_prev(fid))


@dataclass(slots=True, frozen=True)
class StoredEntry:
    """Result of appending an entry."""

    fid: bytes
    seq: int
    msg_id: bytes
    n_chunks: int  # chunks still to come (0: the entry is complete)


@dataclass(slots=True, frozen=True)
class StoredChunk:
    """Result of appending a chunk."""

    fid: bytes
    seq: int
    cnr: int
    chain_complete: bool
    old_hash: bytes  # the expectation this chunk fulfilled
    next_hash: bytes | None  # the new expectation, None when the chain is complete


class FeedBackend(Protocol):
    """Persistence of one feed; implemented by the disk and memory stores."""

    def append_entry(self, seq: int, packet: bytes, durable: bool) -> None: ...
    def append_chunk(self, seq: int, cnr: int, chunk: bytes, durable: bool) -> None: ...
    def read_entry(self, seq: int) -> bytes | None: ...
    def read_chunks(self, seq: int) -> list[bytes]: ...
    def read_chunk(self, seq: int, cnr: int) -> bytes | None: ...
    def checkpoint(self, frontier: Frontier, durable: bool) -> None: ...
    def mark(self) -> tuple[int, int]: ...
    def rollback(self, mark: tuple[int, int]) -> None: ...


def pending_of(entry_packet: bytes) -> PendingChain | None:
    """The side chain an entry announces, or None if it carries all of its content."""
    if entry_packet[7] != TYPE_CHAIN20:
        return None
    chain = parse_chain20(entry_packet)
    if chain.n_chunks == 0:
        return None
    return PendingChain(chain.n_chunks, 0, chain.ptr)


class Replica:
    """The state of one feed plus the checks that guard its log."""

    __slots__ = ("_next_dmx", "backend", "fid", "frontier")

    def __init__(self, fid: bytes, frontier: Frontier, backend: FeedBackend) -> None:
        self.fid = fid
        self.frontier = frontier
        self.backend = backend
        self._next_dmx: bytes | None = None

    @property
    def max_seq(self) -> int:
        return self.frontier.max_seq

    @property
    def prev(self) -> bytes:
        return self.frontier.prev

    @property
    def pending(self) -> dict[int, PendingChain]:
        return self.frontier.pending

    def next_dmx(self) -> bytes:
        """DMX of the entry this replica expects next (seq = max_seq + 1)."""
        if self._next_dmx is None:
            self._next_dmx = entry_dmx(self.fid, self.frontier.max_seq + 1, self.frontier.prev)
        return self._next_dmx

    def accept_entry(self, packet: bytes, durable: bool = False) -> tuple[StoredEntry, Entry]:
        """Verify ``packet`` as the next entry and append it. Raises a WireError if not."""
        seq = self.frontier.max_seq + 1
        if len(packet) != PACKET_LEN:
            raise PacketError(f"an entry is {PACKET_LEN} bytes, got {len(packet)}")
        if packet[:7] != self.next_dmx():
            raise PacketError("not the entry this feed expects next")
        entry = verify_entry(self.fid, seq, self.frontier.prev, packet)
        return self.append_verified(entry, durable), entry

    def append_verified(self, entry: Entry, durable: bool) -> StoredEntry:
        """Append an entry already known to be the next one (built by us or verified)."""
        pend = pending_of(entry.packet)
        self.backend.append_entry(entry.seq, entry.packet, durable)
        self.frontier.max_seq = entry.seq
        self.frontier.prev = entry.msg_id
        self._next_dmx = None
        if pend is not None:
            self.frontier.pending[entry.seq] = pend
        return StoredEntry(self.fid, entry.seq, entry.msg_id, pend.n_chunks if pend else 0)

    def accept_chunk(self, seq: int, chunk: bytes, durable: bool = False) -> StoredChunk:
        """Verify ``chunk`` as the next chunk of entry ``seq`` and append it."""
        pend = self.frontier.pending.get(seq)
        if pend is None:
            raise PacketError(f"entry {seq} expects no chunk")
        old_hash = pend.next_hash
        next_ptr = verify_chunk(old_hash, chunk)
        cnr = pend.next_cnr
        self.backend.append_chunk(seq, cnr, bytes(chunk), durable)
        pend.next_cnr += 1
        if pend.next_cnr >= pend.n_chunks:
            del self.frontier.pending[seq]
            return StoredChunk(self.fid, seq, cnr, True, old_hash, None)
        pend.next_hash = next_ptr
        return StoredChunk(self.fid, seq, cnr, False, old_hash, next_ptr)

    def missing_chunks(self) -> int:
        return sum(p.n_chunks - p.next_cnr for p in self.frontier.pending.values())

    def is_complete(self, seq: int) -> bool:
        return 1 <= seq <= self.frontier.max_seq and seq not in self.frontier.pending

