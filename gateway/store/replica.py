"""One replicated feed: its frontier and the rules for what may be appended next.

A :class:`Replica` is storage-agnostic. It checks every entry and chunk against the feed's
state (expected DMX, signature, hash pointer) and hands the accepted bytes to a
:class:`FeedBackend`, which the disk and in-memory stores implement.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..wire.entry import (
    CHUNK_CONTENT_LEN,
    PACKET_LEN,
    Entry,
    ExpectedEntry,
    chunks_needed,
    genesis_prev,
    hash20,
    parse_chain20,
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
    # the prev of entry max_seq (None: unknown): with it the last entry can be verified
    # alone, which proves that (max_seq, prev) is the tail of the log
    before: bytes | None = None

    @classmethod
    def empty(cls, fid: bytes) -> Frontier:
        return cls(0, genesis_prev(fid))

    def advance_entry(self, entry: Entry, pend: PendingChain | None) -> None:
        """Move past ``entry`` (verified as the next one), which still waits for the side
        chain ``pend`` (None: it is complete, or we hold its chunks)."""
        self.before = entry.prev
        self.max_seq = entry.seq
        self.prev = entry.msg_id
        if pend is not None:
            self.pending[entry.seq] = pend

    def chunk_fits(self, seq: int, chunk: bytes) -> bool:
        """Is ``chunk`` the next chunk entry ``seq`` waits for?"""
        pend = self.pending.get(seq)
        return pend is not None and len(chunk) == PACKET_LEN and hash20(chunk) == pend.next_hash

    def advance_chunk(self, seq: int, chunk: bytes) -> tuple[int, bytes | None]:
        """Move past ``chunk`` (checked with :meth:`chunk_fits`); return its chunk number
        and the hash the chain waits for next (None once the chain is complete)."""
        pend = self.pending[seq]
        cnr = pend.next_cnr
        pend.next_cnr += 1
        if pend.next_cnr >= pend.n_chunks:
            del self.pending[seq]
            return cnr, None
        pend.next_hash = bytes(chunk[CHUNK_CONTENT_LEN:])
        return cnr, pend.next_hash


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
    def lost_tail(self, max_seq: int) -> tuple[int, bytes] | None: ...


def pending_of(entry_packet: bytes) -> PendingChain | None:
    """The side chain an entry announces, or None if it carries all of its content."""
    n_chunks = chunks_needed(entry_packet)
    if n_chunks == 0:
        return None
    return PendingChain(n_chunks, 0, parse_chain20(entry_packet).ptr)


class Replica:
    """The state of one feed plus the checks that guard its log."""

    __slots__ = ("_expected", "backend", "fid", "frontier")

    def __init__(self, fid: bytes, frontier: Frontier, backend: FeedBackend) -> None:
        self.fid = fid
        self.frontier = frontier
        self.backend = backend
        self._expected: ExpectedEntry | None = None

    @property
    def max_seq(self) -> int:
        return self.frontier.max_seq

    @property
    def prev(self) -> bytes:
        return self.frontier.prev

    @property
    def pending(self) -> dict[int, PendingChain]:
        return self.frontier.pending

    def expected(self) -> ExpectedEntry:
        """The entry this replica waits for next (seq = max_seq + 1), name and DMX cached."""
        if self._expected is None:
            self._expected = ExpectedEntry.of(self.fid, self.frontier.max_seq + 1,
                                              self.frontier.prev)
        return self._expected

    def next_dmx(self) -> bytes:
        """DMX of the entry this replica expects next."""
        return self.expected().dmx

    def accept_entry(self, packet: bytes, durable: bool = False) -> tuple[StoredEntry, Entry]:
        """Verify ``packet`` as the next entry and append it. Raises a WireError if not."""
        entry = self.expected().verify(packet)
        pend = pending_of(entry.packet)  # a malformed chain20 payload is refused here
        self.backend.append_entry(entry.seq, entry.packet, durable)
        self._advance(entry, pend)
        return StoredEntry(self.fid, entry.seq, entry.msg_id, pend.n_chunks if pend else 0), entry

    def append_own(self, entry: Entry) -> None:
        """Append an entry we built, with all of its chunks, durably.

        Chunks first, and durable before the entry is written: an entry must never be
        durable without the content it points to. If anything fails (disk full, I/O
        error), both logs are cut back so that no orphan chunk can sit in front of the
        chunks of the next attempt.
        """
        if entry.seq != self.frontier.max_seq + 1 or entry.prev != self.frontier.prev:
            raise PacketError(f"entry {entry.seq} does not follow entry {self.max_seq}")
        mark = self.backend.mark()
        last = len(entry.chunks) - 1
        try:
            for cnr, chunk in enumerate(entry.chunks):
                self.backend.append_chunk(entry.seq, cnr, chunk, durable=cnr == last)
            self.backend.append_entry(entry.seq, entry.packet, durable=True)
        except BaseException:
            self.backend.rollback(mark)
            raise
        self._advance(entry, None)  # we hold its chunks already

    def _advance(self, entry: Entry, pend: PendingChain | None) -> None:
        self._expected = None
        self.frontier.advance_entry(entry, pend)

    def accept_chunk(self, seq: int, chunk: bytes, durable: bool = False) -> StoredChunk:
        """Verify ``chunk`` as the next chunk of entry ``seq`` and append it."""
        pend = self.frontier.pending.get(seq)
        if pend is None:
            raise PacketError(f"entry {seq} expects no chunk")
        old_hash = pend.next_hash
        if not self.frontier.chunk_fits(seq, chunk):
            raise PacketError("chunk does not match its hash pointer")
        self.backend.append_chunk(seq, pend.next_cnr, bytes(chunk), durable)
        cnr, next_hash = self.frontier.advance_chunk(seq, chunk)
        return StoredChunk(self.fid, seq, cnr, next_hash is None, old_hash, next_hash)

    def missing_chunks(self) -> int:
        return sum(p.n_chunks - p.next_cnr for p in self.frontier.pending.values())

    def is_complete(self, seq: int) -> bool:
        return 1 <= seq <= self.frontier.max_seq and seq not in self.frontier.pending
