"""An in-memory feed store with the same interface as the disk store (for the simulator)."""

from __future__ import annotations

from .base import FeedStore
from .replica import FeedBackend, Frontier


class MemoryFeed:
    """Entries and chunks of one feed, held in lists."""

    __slots__ = ("chunks", "entries")

    def __init__(self) -> None:
        self.entries: list[bytes] = []
        self.chunks: dict[int, list[bytes]] = {}

    def append_entry(self, seq: int, packet: bytes, durable: bool) -> None:
        self.entries.append(packet)

    def append_chunk(self, seq: int, cnr: int, chunk: bytes, durable: bool) -> None:
        self.chunks.setdefault(seq, []).append(chunk)

    def read_entry(self, seq: int) -> bytes | None:
        return self.entries[seq - 1] if 1 <= seq <= len(self.entries) else None

    def read_chunks(self, seq: int) -> list[bytes]:
        return list(self.chunks.get(seq, ()))

    def read_chunk(self, seq: int, cnr: int) -> bytes | None:
        chain = self.chunks.get(seq)
        return chain[cnr] if chain is not None and 0 <= cnr < len(chain) else None

    def mark(self) -> tuple[int, int]:
        """Where the feed ends now: (entries, chunks of the entry after them)."""
        return len(self.entries), len(self.chunks.get(len(self.entries) + 1, ()))

    def rollback(self, mark: tuple[int, int]) -> None:
        n_entries, n_chunks = mark
        del self.entries[n_entries:]
        for seq in [s for s in self.chunks if s > n_entries]:
            del self.chunks[seq][n_chunks if seq == n_entries + 1 else 0:]
            if not self.chunks[seq]:
                del self.chunks[seq]

    def lost_tail(self, max_seq: int) -> tuple[int, bytes] | None:
        """Memory loses nothing it held (it has no checkpoint to disagree with)."""
        return None

    def checkpoint(self, frontier: Frontier, durable: bool) -> None:
        """Nothing to do: memory holds the frontier already."""


class MemoryStore(FeedStore):
    """Feeds kept in memory only; lost when the object goes."""

    def _new_backend(self, fid: bytes) -> tuple[FeedBackend, Frontier]:
        return MemoryFeed(), Frontier.empty(fid)

    def _drop_backend(self, fid: bytes) -> None:
        """The replica held the only reference to the lists; dropping it frees them."""
