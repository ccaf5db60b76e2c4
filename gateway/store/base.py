"""The feed store interface shared by the on-disk store and the in-memory store.

The store holds one :class:`Replica` per feed and the table of side-chain chunks it
expects next (keyed by their 20-byte hash), which the replication Node uses for dispatch.
Subclasses provide persistence only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Self

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # installed without the dev tools: nothing is compiled anyway
    def mypyc_attr(*attrs: str, **kwattrs: object) -> Any:  # type: ignore[misc]
        return lambda cls: cls

from ..wire.entry import (
    PACKET_LEN,
    TYPE_CHAIN20,
    Entry,
    FeedKey,
    build_entry,
    chunks_needed,
    content_of,
    hash20,
)
from ..wire.errors import PacketError
from .replica import FeedBackend, Frontier, Replica, StoredChunk, StoredEntry

DEFAULT_MAX_CHAIN_CHUNKS = 10_000  # about 1 MB of content per entry


class StoreError(Exception):
    """A store that cannot be used as asked (unknown feed, unreadable directory, ...)."""


class UnknownFeedError(StoreError):
    """A feed id the store does not hold."""


class LostTailError(StoreError):
    """Our own feed's log ends before an entry it once held: publishing would fork it."""


@dataclass(slots=True, frozen=True)
class FeedInfo:
    """What ``tinyssb feeds`` shows about a feed."""

    fid: bytes
    length: int  # highest sequence number held
    missing_chunks: int  # side-chain chunks still to arrive, over all entries
    incomplete: tuple[tuple[int, int, int], ...]  # (seq, chunks held, chunks needed)


# compiled with mypyc (gateway/accel.py); the stores built on it are plain Python
@mypyc_attr(allow_interpreted_subclasses=True)
class FeedStore(ABC):
    """Replicas of many feeds plus the expected-chunk table. Not thread-safe."""

    def __init__(self) -> None:
        self._replicas: dict[bytes, Replica] = {}
        # chunk hash -> the (replica, seq) chains waiting for it; identical content gives
        # identical chunks, so one hash may be awaited by several chains at once
        self._expected: dict[bytes, list[tuple[Replica, int]]] = {}
        # longest side chain fetched and tracked, in chunks (100 B of content each);
        # entries announcing longer ones are stored without their chain and counted
        self.max_chain_chunks = DEFAULT_MAX_CHAIN_CHUNKS
        self.chains_ignored = 0

    # --- what a concrete store provides ------------------------------------------------
    @abstractmethod
    def _new_backend(self, fid: bytes) -> tuple[FeedBackend, Frontier]:
        """Create (or reopen) the persistence of ``fid``; return it with its frontier."""

    @abstractmethod
    def _drop_backend(self, fid: bytes) -> None:
        """Delete everything held for ``fid``."""

    def flush(self) -> None:
        """Make everything appended so far durable."""

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- feeds ----------------------------------------------------------------------
    def _register(self, fid: bytes, backend: FeedBackend, frontier: Frontier) -> Replica:
        replica = Replica(fid, frontier, backend)
        self._replicas[fid] = replica
        for seq in [s for s, p in frontier.pending.items() if p.n_chunks > self.max_chain_chunks]:
            del frontier.pending[seq]  # (rolled forward from the log: see ingest_entry)
        for seq, pend in frontier.pending.items():
            self._expect(pend.next_hash, replica, seq)
        return replica

    def _expect(self, h: bytes, replica: Replica, seq: int) -> None:
        waiting = self._expected.get(h)
        if waiting is None:
            self._expected[h] = [(replica, seq)]
        else:
            waiting.append((replica, seq))

    def _unexpect(self, h: bytes, replica: Replica, seq: int) -> None:
        waiting = self._expected.get(h)
        if waiting is not None:
            waiting[:] = [w for w in waiting if w != (replica, seq)]
            if not waiting:
                del self._expected[h]

    def feeds(self) -> list[bytes]:
        """Feed ids held, sorted as the GOSET sorts them."""
        return sorted(self._replicas)

    def __contains__(self, fid: bytes) -> bool:
        return fid in self._replicas

    def __len__(self) -> int:
        return len(self._replicas)

    def replicas(self) -> Iterator[Replica]:
        return iter(self._replicas.values())

    def replica(self, fid: bytes) -> Replica:
        try:
            return self._replicas[fid]
        except KeyError:
            raise UnknownFeedError(f"unknown feed {fid.hex()}") from None

    def get(self, fid: bytes) -> Replica | None:
        return self._replicas.get(fid)

    def tops(self, fids: Iterable[bytes]) -> list[int]:
        """The ``max_seq`` of each of ``fids``, -1 where not held: one call for a whole
        WANT vector (built and answered per frame, a slot per GOSET key)."""
        # (map() looks the replicas up without a method lookup per slot)
        return [-1 if r is None else r.frontier.max_seq
                for r in map(self._replicas.get, fids)]

    def with_pending(self, fids: Iterable[bytes]) -> list[int]:
        """The positions in ``fids`` of the feeds held with an entry that still waits for
        side-chain chunks, ascending: a CHNK round looks at those only, not at every key."""
        return [i for i, r in enumerate(map(self._replicas.get, fids))
                if r is not None and r.frontier.pending]

    def add_feed(self, fid: bytes) -> Replica:
        """Start holding (replicating) ``fid``; returns its replica, new or existing."""
        replica = self._replicas.get(fid)
        if replica is None:
            if len(fid) != 32:
                raise StoreError(f"a feed id is 32 bytes, got {len(fid)}")
            backend, frontier = self._new_backend(bytes(fid))
            replica = self._register(bytes(fid), backend, frontier)
        return replica

    def remove_feed(self, fid: bytes) -> None:
        """Forget a feed and delete its log and chunks."""
        replica = self._replicas.get(fid)
        if replica is None:
            raise UnknownFeedError(f"unknown feed {fid.hex()}")
        self._drop_backend(fid)  # first: if it fails, the store still holds the feed
        self._unregister(replica)

    def _unregister(self, replica: Replica) -> None:
        del self._replicas[replica.fid]
        for seq, pend in replica.pending.items():
            self._unexpect(pend.next_hash, replica, seq)

    # --- appending ------------------------------------------------------------------
    def ingest_entry(self, fid: bytes, packet: bytes) -> StoredEntry:
        """Verify and append a received entry of ``fid`` (WireError if it is not the next)."""
        replica = self.replica(fid)
        stored, _ = replica.accept_entry(packet)
        if stored.n_chunks > self.max_chain_chunks:
            # a validly signed entry may claim a side chain of up to 2^69 bytes: tracking
            # it would keep its expectation (and checkpoint it) for good; counted, ignored
            del replica.pending[stored.seq]
            self.chains_ignored += 1
            return StoredEntry(stored.fid, stored.seq, stored.msg_id, 0)
        if stored.n_chunks:
            self._expect(replica.pending[stored.seq].next_hash, replica, stored.seq)
        return stored

    def expects_chunk(self, h: bytes) -> bool:
        return h in self._expected

    def has_pending_chains(self) -> bool:
        """Does any entry still wait for side-chain chunks?"""
        return bool(self._expected)

    def expected_chunks(self) -> dict[bytes, list[tuple[bytes, int]]]:
        """The 20-byte hash table: expected chunk hash -> [(feed id, seq), ...]."""
        return {h: [(r.fid, seq) for r, seq in w] for h, w in self._expected.items()}

    def ingest_chunk(self, chunk: bytes) -> list[StoredChunk]:
        """Append a chunk to every incomplete chain that expects it next.

        Returns what was stored: empty if no chain expects this chunk (it is then not a
        chunk of ours, or one we already hold).
        """
        if len(chunk) != PACKET_LEN:
            return []
        waiting = self._expected.pop(hash20(chunk), None)
        if waiting is None:
            return []
        stored_all = []
        for i, (replica, seq) in enumerate(waiting):
            try:
                stored = replica.accept_chunk(seq, chunk)
            except BaseException:  # (disk full) the chains not served yet still wait for it
                for rest_replica, rest_seq in waiting[i:]:
                    self._expect(hash20(chunk), rest_replica, rest_seq)
                raise
            if stored.next_hash is not None:
                self._expect(stored.next_hash, replica, seq)
            stored_all.append(stored)
        return stored_all

    def publish(self, key: FeedKey, content: bytes, typ: int = TYPE_CHAIN20) -> Entry:
        """Sign ``content`` as the next entry of ``key``'s feed; durable before returning."""
        replica = self.add_feed(key.fid)
        lost = replica.backend.lost_tail(replica.max_seq)
        if lost is not None:
            have = replica.max_seq
            raise LostTailError(
                f"own feed {key.fid.hex()[:16]}: the log verifies only to entry {have} but "
                f"entry {lost[0]} was stored before; publishing would reuse seq {have + 1} "
                f"(a fork), so it is refused. Run `tinyssb verify` for details; repair: run "
                f"the gateway until peers return entries {have + 1}..{lost[0]} (publishing "
                f"resumes then), or restore feeds/{key.fid.hex()} from a backup")
        entry = build_entry(key, replica.max_seq + 1, replica.prev, content, typ)
        replica.append_own(entry)
        return entry

    # --- reading --------------------------------------------------------------------
    def read_packet(self, fid: bytes, seq: int) -> bytes | None:
        replica = self._replicas.get(fid)
        if replica is None or not 1 <= seq <= replica.max_seq:
            return None
        return replica.backend.read_entry(seq)

    def read_chunk(self, fid: bytes, seq: int, cnr: int) -> bytes | None:
        """Chunk ``cnr`` of entry ``seq``, if held."""
        replica = self._replicas.get(fid)
        if replica is None or not 1 <= seq <= replica.max_seq or cnr < 0:
            return None
        pend = replica.pending.get(seq)
        if pend is not None and cnr >= pend.next_cnr:
            return None
        return replica.backend.read_chunk(seq, cnr)

    def read_content(self, fid: bytes, seq: int) -> bytes | None:
        """The full content of entry ``seq``, or None while it is absent or incomplete."""
        replica = self.replica(fid)
        if not replica.is_complete(seq):
            return None
        packet = replica.backend.read_entry(seq)
        if packet is None:
            return None
        chunks = replica.backend.read_chunks(seq)
        if not chunks and (n := chunks_needed(packet)) > self.max_chain_chunks:
            raise StoreError(f"entry {seq} announces a side chain of {n} chunks, more than "
                             f"this node fetches (max_chain_chunks {self.max_chain_chunks})")
        try:
            return content_of(packet, chunks)
        except PacketError as exc:
            raise StoreError(f"feed {fid.hex()} entry {seq} is damaged on disk ({exc}); run "
                             "`tinyssb verify --repair`") from exc

    def info(self, fid: bytes) -> FeedInfo:
        r = self.replica(fid)
        incomplete = tuple(sorted((seq, p.next_cnr, p.n_chunks) for seq, p in r.pending.items()))
        return FeedInfo(fid, r.max_seq, r.missing_chunks(), incomplete)

    def infos(self) -> list[FeedInfo]:
        return [self.info(fid) for fid in self.feeds()]
