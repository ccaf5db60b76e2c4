"""Verify feeds on disk end to end (``tinyssb verify``, the gateway's background scrub).

Opening a feed trusts its checkpoint for everything the checkpoint covers (it only proves
the last entry). Bit rot inside that part is found here: every entry is verified again
from the feed's start (DMX chain, signature) and every chunk record against its hash
pointer. A damaged feed is repaired by cutting it at its first bad record: the records
cut go to the feed's ``quarantine/`` directory (never deleted), and what is gone is
fetched from peers again. For our own feed the cut entries are its *lost tail*:
publishing waits until peers have returned them (see :meth:`DiskFeed.lost_tail`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..wire.entry import PACKET_LEN
from .disk import CHUNK_RECORD_LEN, QUARANTINE_DIR, DiskFeed, DiskStore
from .replica import Frontier


@dataclass(slots=True, frozen=True)
class FeedCheck:
    """What verifying one feed from its start found."""

    fid: bytes
    entries: int  # entries the store holds (its frontier)
    entries_ok: int  # entries that verify from the start of the log
    entry_problem: str | None
    chunk_records: int
    chunk_records_ok: int
    chunk_problem: str | None
    checkpoint_ok: bool  # the in-memory frontier equals the one rebuilt from the log
    lost_tail: int | None  # an entry once held that the log no longer reaches
    quarantined: int  # files kept in the feed's quarantine directory

    @property
    def damaged(self) -> bool:
        return (self.entry_problem is not None or self.chunk_problem is not None
                or not self.checkpoint_ok)

    def describe(self) -> str:
        """One line for ``tinyssb verify``."""
        parts = []
        if self.entry_problem is not None:
            parts.append(f"entry {self.entries_ok + 1} of {self.entries} is damaged "
                         f"({self.entry_problem})")
        if self.chunk_problem is not None:
            parts.append(f"chunk record {self.chunk_records_ok + 1} of {self.chunk_records}: "
                         f"{self.chunk_problem}")
        if not self.checkpoint_ok and self.entry_problem is None and self.chunk_problem is None:
            parts.append("its checkpoint disagrees with the log")
        if self.lost_tail is not None:
            parts.append(f"entries {self.entries + 1}..{self.lost_tail} were lost and are "
                         "awaited from peers")
        if not parts:
            text = f"ok, {self.entries} entries, {self.chunk_records} chunks"
        else:
            text = "; ".join(parts)
        if self.quarantined:
            text += f" ({self.quarantined} file(s) in {QUARANTINE_DIR}/)"
        return text


def check_feed(store: DiskStore, fid: bytes) -> FeedCheck:
    """Verify feed ``fid`` from the start of its log; change nothing."""
    replica = store.replica(fid)
    feed = store.feed_files(fid)
    rebuilt = Frontier.empty(fid)
    log_ok, entry_problem = feed.verify_entries(rebuilt, 0, feed.log_len)
    chunk_ok, chunk_problem = feed.verify_chunks(rebuilt, 0, feed.chunk_len)
    if entry_problem is None and log_ok < feed.log_len:
        entry_problem = "torn record"
    for seq in [s for s, p in rebuilt.pending.items() if p.n_chunks > store.max_chain_chunks]:
        del rebuilt.pending[seq]  # chains too long to track (FeedStore.ingest_entry)
    held = replica.frontier
    checkpoint_ok = (rebuilt.max_seq, rebuilt.prev, rebuilt.pending) == (
        held.max_seq, held.prev, held.pending)
    lost = feed.lost_tail(replica.max_seq)
    qdir = feed.path / QUARANTINE_DIR
    quarantined = sum(1 for _ in qdir.iterdir()) if qdir.is_dir() else 0
    return FeedCheck(fid, replica.max_seq, rebuilt.max_seq, entry_problem,
                     feed.chunk_len // CHUNK_RECORD_LEN, chunk_ok // CHUNK_RECORD_LEN,
                     chunk_problem, checkpoint_ok, None if lost is None else lost[0],
                     quarantined)


def repair_feed(store: DiskStore, fid: bytes) -> FeedCheck:
    """Cut ``fid`` at its first damaged record (quarantined) and check it again."""
    store.reopen_verified(fid)
    return check_feed(store, fid)


# --- the gateway's background scrub: the same checks, a bounded number of records a step --

@dataclass(slots=True, frozen=True)
class ScrubFinding:
    """Damage the scrub found in one feed (and what it did about it)."""

    fid: bytes
    entries: int  # entries the feed held when the damage was found
    seq: int  # the first damaged entry (for a chunk: the entry the record names)
    problem: str  # "entry 6 of 12 is damaged (...)" / "chunk record 4: ..."
    cut_to: int | None  # entries kept after the cut; None: not cut (our own feed)


@dataclass(slots=True)
class ScrubStats:
    """What the scrub did so far (``tinyssb status``)."""

    passes: int = 0  # complete rounds over every feed
    feeds_checked: int = 0
    records_checked: int = 0  # entry and chunk records verified
    damage_found: int = 0
    feeds_cut: int = 0
    last_finding: ScrubFinding | None = None


@dataclass(slots=True)
class _Cursor:
    """Where the scrub stands in one feed: the records present when it started on it."""

    fid: bytes
    feed: DiskFeed
    frontier: Frontier
    log_end: int
    chunk_end: int
    log_pos: int = 0
    chunk_pos: int = 0


class Scrub:
    """Verify every feed of a :class:`DiskStore` from its start, one after another, at
    most ``batch`` records per :meth:`step`, and cut damaged feeds that are not ``own``
    as ``tinyssb verify --repair`` does (our own feed is only reported: cutting it would
    stop publishing until peers return the entries).

    Each feed is checked up to where its logs ended when the scrub reached it (entries
    and chunks written together, so the two ends agree); what arrives later is checked in
    the next pass. No clock inside: the caller paces the steps.
    """

    def __init__(self, store: DiskStore, own: frozenset[bytes] = frozenset(),
                 batch: int = 100) -> None:
        if batch < 1:
            raise ValueError(f"batch must be at least 1, got {batch}")
        self.store = store
        self.own = own
        self.batch = batch
        self.stats = ScrubStats()
        self._todo: list[bytes] = []  # feeds still to check in this pass
        self._cursor: _Cursor | None = None
        self._reported: set[tuple[bytes, int, str]] = set()  # own-feed damage logged once

    @property
    def position(self) -> tuple[bytes, int, int] | None:
        """(feed, entries verified, entries to verify) of the feed being checked."""
        c = self._cursor
        if c is None:
            return None
        return c.fid, c.frontier.max_seq, c.log_end // PACKET_LEN

    def step(self) -> ScrubFinding | None:
        """Verify at most ``batch`` records; the damage found (and handled), if any."""
        budget = self.batch
        while budget > 0:
            cursor = self._cursor or self._next_feed()
            if cursor is None:
                return None  # nothing held: nothing to do
            if self.store.get(cursor.fid) is None or \
                    self.store.feed_files(cursor.fid) is not cursor.feed or \
                    cursor.feed.log_len < cursor.log_end or \
                    cursor.feed.chunk_len < cursor.chunk_end:
                self._cursor = None  # dropped, cut or reopened meanwhile: start it again
                if self.store.get(cursor.fid) is not None:
                    self._todo.append(cursor.fid)
                continue
            used, damage = self._advance(cursor, budget)
            budget -= used
            self.stats.records_checked += used
            if damage is not None:
                finding = self._damaged(cursor, *damage)
                self._feed_done()
                return finding
            if cursor.log_pos >= cursor.log_end and cursor.chunk_pos >= cursor.chunk_end \
                    and self._feed_done():
                return None  # a pass ends a step (a store of empty feeds costs nothing)
        return None

    def _next_feed(self) -> _Cursor | None:
        if not self._todo:
            self._todo = list(reversed(self.store.feeds()))
        while self._todo:
            fid = self._todo.pop()
            if self.store.get(fid) is not None:
                feed = self.store.feed_files(fid)
                self._cursor = _Cursor(fid, feed, Frontier.empty(fid), feed.log_len,
                                       feed.chunk_len)
                return self._cursor
        return None

    def _feed_done(self) -> bool:
        """The feed being checked is done; True if that ends a pass."""
        self._cursor = None
        self.stats.feeds_checked += 1
        if self._todo:
            return False
        self.stats.passes += 1
        return True

    def _advance(self, c: _Cursor, budget: int) -> tuple[int, tuple[int, str] | None]:
        """Verify up to ``budget`` records of ``c``, entries first, then chunk records:
        how many it verified, and the first damage (entry seq, what) if it met one."""
        if c.log_pos < c.log_end:
            end = min(c.log_end, c.log_pos + budget * PACKET_LEN)
            pos, problem = c.feed.verify_entries(c.frontier, c.log_pos, end)
            used = (pos - c.log_pos) // PACKET_LEN
            c.log_pos = pos
            if problem is None:
                return used, None
            seq = c.frontier.max_seq + 1
            held = c.log_end // PACKET_LEN
            return used + 1, (seq, f"entry {seq} of {held} is damaged ({problem})")
        end = min(c.chunk_end, c.chunk_pos + budget * CHUNK_RECORD_LEN)
        pos, problem = c.feed.verify_chunks(c.frontier, c.chunk_pos, end)
        used = (pos - c.chunk_pos) // CHUNK_RECORD_LEN
        c.chunk_pos = pos
        if problem is None:
            return used, None
        return used + 1, (c.feed.chunk_record_seq(pos),
                          f"chunk record {pos // CHUNK_RECORD_LEN + 1}: {problem}")

    def _damaged(self, c: _Cursor, seq: int, problem: str) -> ScrubFinding | None:
        entries = self.store.replica(c.fid).max_seq
        if c.fid in self.own:
            key = (c.fid, seq, problem)
            if key in self._reported:
                return None  # reported in an earlier pass already
            self._reported.add(key)
            finding = ScrubFinding(c.fid, entries, seq, problem, None)
        else:
            self.store.reopen_verified(c.fid)
            self.stats.feeds_cut += 1
            finding = ScrubFinding(c.fid, entries, seq, problem,
                                   self.store.replica(c.fid).max_seq)
        self.stats.damage_found += 1
        self.stats.last_finding = finding
        return finding
