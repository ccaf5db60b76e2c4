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

from .disk import CHUNK_RECORD_LEN, QUARANTINE_DIR, DiskStore
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
