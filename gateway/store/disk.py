"""The on-disk feed store: one append-only log per feed plus a frontier checkpoint.

Layout under the data directory::

    feeds/<fid hex>/log        entry packets, 120 B each; seq n at offset (n-1)*120
    feeds/<fid hex>/chunks     128-B records: seq (u32 BE) | cnr (u32 BE) | chunk (120 B)
    feeds/<fid hex>/frontier   JSON checkpoint: max_seq, prev, bytes of log and chunks
                               covered, incomplete side chains
    lock                       held (flock) by the one process that may write

The logs are the truth; the frontier is a checkpoint that saves re-reading them. Write
order: log records are appended first, the frontier is replaced atomically afterwards
(write a temporary file, fsync, rename). On opening, records past the checkpoint are
verified again (DMX chain, signature, chunk hashes) and adopted; a torn or invalid tail is
cut off. Durability: an entry we author (``publish``) is fsynced, with its chunks, before
``publish`` returns. Replicated entries and chunks are written at once but fsynced only by
:meth:`DiskStore.flush` (the gateway calls it periodically and at shutdown); a crash may
lose the last unflushed ones, which are simply fetched again.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
import struct
from pathlib import Path

from ..wire.entry import PACKET_LEN, genesis_prev, verify_entry
from ..wire.errors import WireError
from .base import FeedStore, StoreError
from .replica import FeedBackend, Frontier, PendingChain, pending_of

log = logging.getLogger(__name__)

CHUNK_HEADER = struct.Struct(">II")
CHUNK_RECORD_LEN = CHUNK_HEADER.size + PACKET_LEN  # 128
FRONTIER_VERSION = 1
QUARANTINE_DIR = "quarantine"  # inside a feed directory: damaged records, kept not deleted


class StoreLockedError(StoreError):
    """The data directory is held by another writing process."""


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, durable: bool = True, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or the new file."""
    tmp = path.with_name(path.name + ".tmp")
    with contextlib.suppress(FileNotFoundError):  # a stale one would keep its old mode
        os.unlink(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if durable:
        _fsync_dir(path.parent)


class DiskFeed:
    """The files of one feed. Implements :class:`gateway.store.replica.FeedBackend`."""

    def __init__(self, path: Path, fid: bytes, readonly: bool) -> None:
        self.path = path
        self.fid = fid
        self.readonly = readonly
        flags = os.O_RDONLY if readonly else os.O_RDWR | os.O_CREAT | os.O_APPEND
        self.log_fd = os.open(path / "log", flags, 0o644)
        self.chunk_fd = os.open(path / "chunks", flags, 0o644)
        self.log_len = 0
        self.chunk_len = 0
        self._dirty_log = False
        self._dirty_chunks = False
        self._chunk_index: dict[int, list[int]] | None = None  # built on first read
        self._checkpointed = (-1, -1)  # (log_len, chunk_len) the frontier file describes
        self.claim: tuple[int, bytes] | None = None  # see lost_tail()
        self._claim_on_file = False
        # a full verification (``tinyssb verify --repair``, the gateway's scrub) is asked
        # for: its caller reports the damage in one line, the cut details go to INFO
        self._asked = False

    # --- opening and recovery ---------------------------------------------------------
    def recover(self, full: bool = False) -> Frontier:
        """Load the checkpoint and roll forward over (or cut off) what follows it.

        The checkpoint is adopted only if the last entry it names verifies alone (its
        ``before`` prev, its signature, its msg-id); otherwise the whole log is verified
        from its start. If the verified log ends before an entry the checkpoint once
        covered, that entry is remembered as the feed's *lost tail* (kept in the frontier
        until the log reaches it again): our own feed must not sign that seq a second time.
        ``full`` verifies the whole log whatever the checkpoint says (``tinyssb verify``).
        """
        self._asked = full
        log_size = os.fstat(self.log_fd).st_size
        chunk_size = os.fstat(self.chunk_fd).st_size
        raw_log, raw_chunks = log_size, chunk_size
        log_size -= log_size % PACKET_LEN  # a torn final record is ignored (and cut below)
        chunk_size -= chunk_size % CHUNK_RECORD_LEN
        loaded = self._load_frontier()
        claim = self.claim
        if loaded is not None:
            checkpointed, log_from, chunk_from, claim = loaded
            if log_from > log_size:
                log.warning("feed %s: log holds %d entries, its checkpoint says %d; "
                            "rebuilding from the log", self.fid.hex()[:16],
                            log_size // PACKET_LEN, checkpointed.max_seq)
                loaded = None
            elif full or chunk_from > chunk_size or not self._tail_proven(checkpointed):
                loaded = None
        if loaded is None:
            frontier, log_from, chunk_from = Frontier.empty(self.fid), 0, 0
        else:
            frontier = loaded[0]
        self.log_len = self._roll_entries(frontier, log_from, log_size)
        self.chunk_len = self._roll_chunks(frontier, chunk_from, chunk_size)
        cutting = (self.log_len, self.chunk_len) != (log_size, chunk_size)
        if loaded is not None and cutting and not self.readonly:
            # Something would be cut. Before cutting, make sure the checkpoint itself is not
            # what is wrong (a damaged frontier could otherwise cut valid records and make
            # us reuse a sequence number): verify the whole log from its start.
            log.warning("feed %s: records past the checkpoint do not fit; re-verifying the "
                        "whole log", self.fid.hex()[:16])
            loaded, frontier = None, Frontier.empty(self.fid)
            self.log_len = self._roll_entries(frontier, 0, log_size)
            self.chunk_len = self._roll_chunks(frontier, 0, chunk_size)
        if loaded is not None:
            self._checkpointed = (log_from, chunk_from)
        self.claim = claim if claim is not None and claim[0] > frontier.max_seq else None
        if self.claim is not None:
            quiet = self._claim_on_file or self._asked  # known already, or reported by the caller
            (log.info if quiet else log.warning)("feed %s: the log ends at entry %d, but entry %d was stored before "
                        "(lost tail)", self.fid.hex()[:16], frontier.max_seq, self.claim[0])
        if not self.readonly:
            self._cut(self.log_fd, "log", self.log_len, raw_log, PACKET_LEN)
            self._cut(self.chunk_fd, "chunks", self.chunk_len, raw_chunks, CHUNK_RECORD_LEN,
                      self._orphans_only(frontier.max_seq, raw_chunks))
            self.checkpoint(frontier, durable=True)
        return frontier

    def _tail_proven(self, frontier: Frontier) -> bool:
        """Is entry ``max_seq`` of the log the one the checkpoint describes?"""
        if frontier.max_seq == 0:
            return frontier.prev == genesis_prev(self.fid)
        if frontier.before is None:
            return False  # a checkpoint without the proof: verify the whole log once
        packet = os.pread(self.log_fd, PACKET_LEN, (frontier.max_seq - 1) * PACKET_LEN)
        try:
            entry = verify_entry(self.fid, frontier.max_seq, frontier.before, packet)
        except WireError as exc:
            log.warning("feed %s: entry %d does not match its checkpoint (%s); verifying "
                        "the whole log", self.fid.hex()[:16], frontier.max_seq, exc)
            return False
        if entry.msg_id != frontier.prev:
            log.warning("feed %s: checkpoint prev differs from entry %d; verifying the "
                        "whole log", self.fid.hex()[:16], frontier.max_seq)
            return False
        return True

    def quarantine(self, name: str, data: bytes) -> Path:
        """Keep ``data`` (records cut off a log, a damaged file) in ``quarantine/``."""
        qdir = self.path / QUARANTINE_DIR
        qdir.mkdir(exist_ok=True)
        n = 0
        while (target := qdir / f"{name}.{n}").exists():
            n += 1
        write_atomic(target, data, durable=True)
        (log.info if self._asked else log.warning)(
            "feed %s: kept %d damaged bytes in %s", self.fid.hex()[:16], len(data),
                    target)
        return target

    def _orphans_only(self, max_seq: int, size: int) -> bool:
        """Do the chunk records past ``chunk_len`` all belong to entries after the log's
        end (chunks of a publish a crash interrupted, written before their entry)?"""
        data = os.pread(self.chunk_fd, max(0, size - self.chunk_len), self.chunk_len)
        return all(CHUNK_HEADER.unpack_from(data, off)[0] > max_seq
                   for off in range(0, len(data) - CHUNK_RECORD_LEN + 1, CHUNK_RECORD_LEN))

    def _cut(self, fd: int, name: str, keep: int, size: int, record: int,
             crash_trace: bool = False) -> None:
        """Cut a log file to ``keep`` bytes; whole records cut off go to quarantine first
        (a torn final record or ``crash_trace``, what a crash leaves, is simply dropped)."""
        if size <= keep:
            return
        if size - keep >= record and not crash_trace:
            self.quarantine(f"{name}@{keep}", os.pread(fd, size - keep, keep))
        self._truncate(fd, keep)

    def _load_frontier(self) -> tuple[Frontier, int, int, tuple[int, bytes] | None] | None:
        path = self.path / "frontier"
        try:
            data = json.loads(path.read_text())
            if data.get("version") != FRONTIER_VERSION:
                return None
            pending = {int(seq): PendingChain(int(n), int(c), bytes.fromhex(h))
                       for seq, (n, c, h) in data["pending"].items()}
            before = data.get("before")
            frontier = Frontier(int(data["max_seq"]), bytes.fromhex(data["prev"]), pending,
                                None if before is None else bytes.fromhex(before))
            log_bytes, chunk_bytes = int(data["log_bytes"]), int(data["chunk_bytes"])
            claim = data.get("claim")
            self._claim_on_file = claim is not None  # reported when it was found already
            lost = None if claim is None else (int(claim[0]), bytes.fromhex(claim[1]))
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            if not self.readonly:  # it would stop every checkpoint: move it aside
                qdir = self.path / QUARANTINE_DIR
                qdir.mkdir(exist_ok=True)
                os.replace(path, qdir / f"frontier-dir.{os.getpid()}.{id(self)}")
            log.warning("feed %s: frontier is a directory; rebuilding from the log",
                        self.fid.hex()[:16])
            return None
        except (ValueError, KeyError, TypeError, AttributeError, IndexError, OSError) as exc:
            log.warning("feed %s: frontier unreadable (%s); rebuilding from the log",
                        self.fid.hex()[:16], exc)
            return None
        if (frontier.max_seq < 0 or log_bytes != frontier.max_seq * PACKET_LEN
                or len(frontier.prev) != 20 or chunk_bytes < 0
                or chunk_bytes % CHUNK_RECORD_LEN
                or (frontier.before is not None and len(frontier.before) != 20)
                or any(not 1 <= seq <= frontier.max_seq or not 0 <= p.next_cnr < p.n_chunks
                       or len(p.next_hash) != 20 for seq, p in pending.items())):
            log.warning("feed %s: frontier inconsistent; rebuilding", self.fid.hex()[:16])
            return None
        if lost is not None and (lost[0] <= 0 or len(lost[1]) != 20):
            lost = None
        if lost is None or lost[0] < frontier.max_seq:
            lost = (frontier.max_seq, frontier.prev) if frontier.max_seq else None
        return frontier, log_bytes, chunk_bytes, lost

    def lost_tail(self, max_seq: int) -> tuple[int, bytes] | None:
        """The last entry a checkpoint once covered, if the log has not reached it again
        (records lost or cut as damaged): ``(seq, msg_id)``; None if nothing is lost."""
        if self.claim is not None and self.claim[0] <= max_seq:
            self.claim = None
        return self.claim

    def _roll_entries(self, frontier: Frontier, start: int, end: int) -> int:
        pos, problem = self.verify_entries(frontier, start, end)
        if problem is not None:
            (log.info if self._asked else log.warning)(
                "feed %s: log record %d invalid (%s); cutting the log there",
                        self.fid.hex()[:16], frontier.max_seq + 1, problem)
        return pos

    def verify_entries(self, frontier: Frontier, start: int, end: int
                       ) -> tuple[int, str | None]:
        """Advance ``frontier`` over the entry records in ``[start, end)`` of the log while
        they verify; return where that stopped and why (None: all of them verified)."""
        pos = start
        if end > start:
            data = os.pread(self.log_fd, end - start, start)
            for off in range(0, len(data) - PACKET_LEN + 1, PACKET_LEN):
                packet = data[off : off + PACKET_LEN]
                seq = frontier.max_seq + 1
                try:
                    entry = verify_entry(self.fid, seq, frontier.prev, packet)
                    pend = pending_of(packet)
                except WireError as exc:
                    return pos, str(exc)
                frontier.advance_entry(entry, pend)
                pos += PACKET_LEN
        return pos, None

    def _roll_chunks(self, frontier: Frontier, start: int, end: int) -> int:
        pos, problem = self.verify_chunks(frontier, start, end)
        if problem is not None:
            log.info("feed %s: %s; cutting the chunk log there", self.fid.hex()[:16], problem)
        return pos

    def verify_chunks(self, frontier: Frontier, start: int, end: int
                      ) -> tuple[int, str | None]:
        """Like :meth:`verify_entries` for the chunk records (hash chain of each entry)."""
        pos = start
        if end > start:
            data = os.pread(self.chunk_fd, end - start, start)
            for off in range(0, len(data) - CHUNK_RECORD_LEN + 1, CHUNK_RECORD_LEN):
                seq, cnr = CHUNK_HEADER.unpack_from(data, off)
                chunk = data[off + CHUNK_HEADER.size : off + CHUNK_RECORD_LEN]
                pend = frontier.pending.get(seq)
                if pend is None or pend.next_cnr != cnr:
                    return pos, f"chunk record (seq {seq}, cnr {cnr}) belongs to no entry"
                if not frontier.chunk_fits(seq, chunk):
                    return pos, f"chunk {cnr} of entry {seq} does not match its hash"
                frontier.advance_chunk(seq, chunk)
                pos += CHUNK_RECORD_LEN
        return pos, None

    def chunk_record_seq(self, offset: int) -> int:
        """The entry the chunk record at ``offset`` names (0 if there is none)."""
        head = os.pread(self.chunk_fd, CHUNK_HEADER.size, offset)
        return CHUNK_HEADER.unpack(head)[0] if len(head) == CHUNK_HEADER.size else 0

    def _truncate(self, fd: int, length: int) -> None:
        if os.fstat(fd).st_size != length:
            os.ftruncate(fd, length)
            os.fsync(fd)

    # --- FeedBackend --------------------------------------------------------------------
    def append_entry(self, seq: int, packet: bytes, durable: bool) -> None:
        if self.readonly:
            raise StoreError("store opened read-only")
        if self.log_len != (seq - 1) * PACKET_LEN:
            raise StoreError(f"feed {self.fid.hex()}: log out of step at seq {seq}")
        self._write(self.log_fd, packet, self.log_len)
        self.log_len += PACKET_LEN
        self._dirty_log = True
        if durable:
            self.sync()

    def append_chunk(self, seq: int, cnr: int, chunk: bytes, durable: bool) -> None:
        if self.readonly:
            raise StoreError("store opened read-only")
        self._write(self.chunk_fd, CHUNK_HEADER.pack(seq, cnr) + chunk, self.chunk_len)
        if self._chunk_index is not None:
            self._chunk_index.setdefault(seq, []).append(self.chunk_len)
        self.chunk_len += CHUNK_RECORD_LEN
        self._dirty_chunks = True
        if durable:
            self.sync()

    @staticmethod
    def _write(fd: int, data: bytes, length_before: int) -> None:
        """Append ``data`` whole, or cut the file back to ``length_before`` and raise."""
        try:
            written = os.write(fd, data)
            if written != len(data):  # regular files write short only when the disk is full
                raise StoreError(f"short write ({written} of {len(data)} bytes); disk full?")
        except BaseException:
            os.ftruncate(fd, length_before)
            raise

    def read_entry(self, seq: int) -> bytes | None:
        off = (seq - 1) * PACKET_LEN
        if seq < 1 or off + PACKET_LEN > self.log_len:
            return None
        return os.pread(self.log_fd, PACKET_LEN, off)

    def _index(self) -> dict[int, list[int]]:
        if self._chunk_index is None:
            index: dict[int, list[int]] = {}
            data = os.pread(self.chunk_fd, self.chunk_len, 0) if self.chunk_len else b""
            for off in range(0, len(data), CHUNK_RECORD_LEN):
                seq, _ = CHUNK_HEADER.unpack_from(data, off)
                index.setdefault(seq, []).append(off)
            self._chunk_index = index
        return self._chunk_index

    def read_chunks(self, seq: int) -> list[bytes]:
        return [os.pread(self.chunk_fd, PACKET_LEN, off + CHUNK_HEADER.size)
                for off in self._index().get(seq, ())]

    def read_chunk(self, seq: int, cnr: int) -> bytes | None:
        offs = self._index().get(seq, ())
        if not 0 <= cnr < len(offs):
            return None
        return os.pread(self.chunk_fd, PACKET_LEN, offs[cnr] + CHUNK_HEADER.size)

    def sync(self) -> None:
        if self._dirty_chunks:
            os.fsync(self.chunk_fd)
            self._dirty_chunks = False
        if self._dirty_log:
            os.fsync(self.log_fd)
            self._dirty_log = False

    def mark(self) -> tuple[int, int]:
        """Where the logs end now, for :meth:`rollback`."""
        return self.log_len, self.chunk_len

    def rollback(self, mark: tuple[int, int]) -> None:
        """Cut both logs back to ``mark`` (after a failed publish) and make that durable."""
        self.log_len, self.chunk_len = mark
        self._truncate(self.log_fd, self.log_len)
        self._truncate(self.chunk_fd, self.chunk_len)
        self._chunk_index = None

    def checkpoint(self, frontier: Frontier, durable: bool) -> None:
        if self.readonly or self._checkpointed == (self.log_len, self.chunk_len):
            return
        lost = self.lost_tail(frontier.max_seq)
        if durable:
            self.sync()  # the frontier must never cover records that are not durable
        data = {
            "version": FRONTIER_VERSION,
            "max_seq": frontier.max_seq,
            "prev": frontier.prev.hex(),
            "log_bytes": self.log_len,
            "chunk_bytes": self.chunk_len,
            "pending": {str(seq): [p.n_chunks, p.next_cnr, p.next_hash.hex()]
                        for seq, p in frontier.pending.items()},
        }
        if frontier.before is not None:
            data["before"] = frontier.before.hex()
        if lost is not None:
            data["claim"] = [lost[0], lost[1].hex()]
        write_atomic(self.path / "frontier", json.dumps(data).encode(), durable)
        self._checkpointed = (self.log_len, self.chunk_len)

    def close(self) -> None:
        os.close(self.log_fd)
        os.close(self.chunk_fd)


class DiskStore(FeedStore):
    """Feeds in a data directory. ``readonly`` opens without the lock and never writes."""

    def __init__(self, root: str | os.PathLike[str], readonly: bool = False) -> None:
        super().__init__()
        self.root = Path(root)
        self.readonly = readonly
        self._lock_fd: int | None = None
        self._feeds: dict[bytes, DiskFeed] = {}
        feeds_dir = self.root / "feeds"
        try:
            if not readonly:
                feeds_dir.mkdir(parents=True, exist_ok=True)
                self._lock()
            names = sorted(os.listdir(feeds_dir)) if feeds_dir.exists() else []
            for name in names:
                try:
                    fid = bytes.fromhex(name)
                except ValueError:
                    fid = b""
                if len(fid) != 32 or not (feeds_dir / name).is_dir():
                    log.warning("ignoring %s: not a feed directory", feeds_dir / name)
                    continue
                try:
                    self._open_feed(fid)
                except FileNotFoundError:
                    if not readonly:
                        raise
                    # a writer is creating this feed right now: it holds nothing yet
                    log.debug("skipping %s: being created", feeds_dir / name)
        except PermissionError as exc:
            self.close()
            raise StoreError(f"cannot use data directory {self.root}: {exc.strerror} "
                             f"({exc.filename}); fix its permissions or pick --data DIR") from exc
        except OSError as exc:
            self.close()
            raise StoreError(f"cannot use data directory {self.root}: {exc}") from exc

    def _lock(self) -> None:
        self._lock_fd = os.open(self.root / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            self._lock_fd = None
            raise StoreLockedError(
                f"data directory {self.root} is in use by another tinyssb process; "
                "stop it or pick another --data DIR") from None

    def _feed_dir(self, fid: bytes) -> Path:
        return self.root / "feeds" / fid.hex()

    def _open_feed(self, fid: bytes) -> None:
        feed = DiskFeed(self._feed_dir(fid), fid, self.readonly)
        self._feeds[fid] = feed
        self._register(fid, feed, feed.recover())

    def feed_files(self, fid: bytes) -> DiskFeed:
        """The files of a feed held (for :mod:`.scrub`)."""
        self.replica(fid)  # UnknownFeedError if not held
        return self._feeds[fid]

    def reopen_verified(self, fid: bytes) -> None:
        """Verify feed ``fid`` from its start and cut it at its first damaged record
        (what is cut goes to its quarantine); the replica starts over from what verified."""
        if self.readonly:
            raise StoreError("store opened read-only")
        self._unregister(self.replica(fid))
        self._feeds.pop(fid).close()
        feed = DiskFeed(self._feed_dir(fid), fid, False)
        self._feeds[fid] = feed
        self._register(fid, feed, feed.recover(full=True))

    def _new_backend(self, fid: bytes) -> tuple[FeedBackend, Frontier]:
        if self.readonly:
            raise StoreError("store opened read-only")
        path = self._feed_dir(fid)
        path.mkdir(exist_ok=True)
        _fsync_dir(path.parent)
        feed = DiskFeed(path, fid, False)
        self._feeds[fid] = feed
        frontier = feed.recover()
        return feed, frontier

    def _drop_backend(self, fid: bytes) -> None:
        if self.readonly:
            raise StoreError("store opened read-only")
        feed = self._feeds.pop(fid)
        feed.close()
        shutil.rmtree(feed.path)
        _fsync_dir(feed.path.parent)

    def flush(self) -> None:
        """fsync every feed's logs, then checkpoint every frontier."""
        if self.readonly:
            return
        for fid, feed in self._feeds.items():
            replica = self.get(fid)
            if replica is not None:
                feed.checkpoint(replica.frontier, durable=True)

    def close(self) -> None:
        try:
            self.flush()
        finally:
            for feed in self._feeds.values():
                feed.close()
            self._feeds.clear()
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None
