"""Behaviour of the feed stores (disk and memory), crash recovery of the disk store, keys.

Most tests run against both stores through the ``make_store`` fixture; the crash-recovery
tests damage the files of a closed (or "killed") DiskStore by hand and reopen it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)

from gateway.store import (
    DiskStore,
    FeedStore,
    MemoryStore,
    StoreError,
    StoreLockedError,
    UnknownFeedError,
)
from gateway.store.disk import CHUNK_HEADER, CHUNK_RECORD_LEN
from gateway.store.keys import (
    KeyFileError,
    key_path,
    load_key,
    load_or_create_key,
    save_key,
)
from gateway.wire.entry import (
    PACKET_LEN,
    TYPE_PLAIN48,
    Entry,
    FeedKey,
    build_entry,
    chunk_count,
    genesis_prev,
    hash20,
    parse_chain20,
    verify_entry,
)
from gateway.wire.errors import SignatureError, WireError

KEY_A = FeedKey.from_seed(bytes(range(32)))
KEY_B = FeedKey.from_seed(bytes(range(32, 64)))
KEY_C = FeedKey.from_seed(bytes(range(64, 96)))

# boundaries of chain20: 27 B fit the entry (VL 1 B), 28 and 127 need one chunk, 128 has a
# 2-byte VL and needs two; 1000 and 5000 give long side chains
LENGTHS = [0, 1, 27, 28, 127, 128, 1000, 5000]


def content(i: int, length: int) -> bytes:
    """Deterministic content, different for every ``i``."""
    return bytes((i * 31 + j * 7 + (j >> 8)) % 251 for j in range(length))


# --- helpers -------------------------------------------------------------------------

@pytest.fixture(params=["disk", "memory"])
def kind(request) -> str:
    return request.param


@pytest.fixture
def make_store(kind, tmp_path):
    """A factory of fresh stores of the parametrized kind; all are closed at teardown."""
    opened: list[FeedStore] = []

    def make() -> FeedStore:
        store = DiskStore(tmp_path / f"data{len(opened)}") if kind == "disk" else MemoryStore()
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def crash(store: DiskStore) -> None:
    """Let go of the store as a killed process would: file descriptors closed, no flush,
    no checkpoint (what was written stays in the page cache, as after SIGKILL)."""
    for feed in store._feeds.values():
        feed.close()
    store._feeds.clear()
    if store._lock_fd is not None:
        os.close(store._lock_fd)
        store._lock_fd = None


def feed_dir(root: Path, fid: bytes) -> Path:
    return root / "feeds" / fid.hex()


def append_file(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def chunk_record(seq: int, cnr: int, chunk: bytes) -> bytes:
    return CHUNK_HEADER.pack(seq, cnr) + chunk


def replicate_entries(src: FeedStore, dst: FeedStore, fid: bytes, upto: int | None = None):
    """Feed ``dst`` the entries of ``fid`` it lacks (up to ``upto``), in order."""
    dst.add_feed(fid)
    end = src.info(fid).length if upto is None else upto
    stored = []
    for seq in range(dst.info(fid).length + 1, end + 1):
        stored.append(dst.ingest_entry(fid, src.read_packet(fid, seq)))
    return stored


def replicate_chunks(src: FeedStore, dst: FeedStore, fid: bytes, limit: int | None = None):
    """Deliver the chunks ``dst`` waits for, chain by chain in chain order."""
    n = 0
    replica = dst.replica(fid)
    for seq in sorted(replica.pending):
        while seq in replica.pending:
            if limit is not None and n >= limit:
                return
            chunk = src.read_chunk(fid, seq, replica.pending[seq].next_cnr)
            assert chunk is not None
            assert dst.ingest_chunk(chunk), "an expected chunk was not taken"
            n += 1


def snapshot(store: FeedStore):
    """Everything observable about a store, comparable across reopen."""
    feeds = {}
    for fid in store.feeds():
        info = store.info(fid)
        seqs = range(1, info.length + 1)
        feeds[fid] = (
            info,
            [store.read_packet(fid, s) for s in seqs],
            [store.read_content(fid, s) for s in seqs],
            [[store.read_chunk(fid, s, c) for c in range(chunk_count_of(store, fid, s))]
             for s in seqs],
        )
    expected = {h: sorted(w) for h, w in store.expected_chunks().items()}
    return feeds, expected


def chunk_count_of(store: FeedStore, fid: bytes, seq: int) -> int:
    packet = store.read_packet(fid, seq)
    if packet is None or packet[7] != 1:
        return 0
    return parse_chain20(packet).n_chunks


def publish_all(store: FeedStore, key: FeedKey, contents) -> list[Entry]:
    return [store.publish(key, c) for c in contents]


def verify_chain(store: FeedStore, fid: bytes) -> bytes:
    """Re-verify every entry along the DMX/prev chain; return the last msg-id."""
    prev = genesis_prev(fid)
    for seq in range(1, store.info(fid).length + 1):
        prev = verify_entry(fid, seq, prev, store.read_packet(fid, seq)).msg_id
    return prev


# --- publish and read ------------------------------------------------------------------

def test_publish_returns_increasing_seqs_and_content_reads_back(make_store):
    store = make_store()
    for i, length in enumerate(LENGTHS):
        entry = store.publish(KEY_A, content(i, length))
        assert entry.seq == i + 1
        assert len(entry.chunks) == chunk_count(length)
    assert store.feeds() == [KEY_A.fid]
    info = store.info(KEY_A.fid)
    assert info.length == len(LENGTHS)
    assert info.missing_chunks == 0 and info.incomplete == ()
    for i, length in enumerate(LENGTHS):
        assert store.read_content(KEY_A.fid, i + 1) == content(i, length)
    verify_chain(store, KEY_A.fid)
    assert store.expected_chunks() == {}


@pytest.mark.parametrize("length", LENGTHS)
def test_each_length_alone(make_store, length):
    store = make_store()
    entry = store.publish(KEY_A, content(7, length))
    assert store.read_content(KEY_A.fid, 1) == content(7, length)
    assert store.read_packet(KEY_A.fid, 1) == entry.packet
    for cnr, chunk in enumerate(entry.chunks):
        assert store.read_chunk(KEY_A.fid, 1, cnr) == chunk
    assert store.read_chunk(KEY_A.fid, 1, len(entry.chunks)) is None


def test_publish_plain48(make_store):
    store = make_store()
    store.publish(KEY_A, b"hello", typ=TYPE_PLAIN48)
    store.publish(KEY_A, content(1, 300))
    assert store.read_content(KEY_A.fid, 1) == b"hello".ljust(48, b"\0")
    assert store.read_content(KEY_A.fid, 2) == content(1, 300)


def test_two_feeds_are_independent(make_store):
    store = make_store()
    a = publish_all(store, KEY_A, [content(i, 150) for i in range(3)])
    b = publish_all(store, KEY_B, [content(i + 10, 50) for i in range(2)])
    assert [e.seq for e in a] == [1, 2, 3] and [e.seq for e in b] == [1, 2]
    assert store.feeds() == sorted([KEY_A.fid, KEY_B.fid])
    assert [i.length for i in store.infos()] == [
        3 if f == KEY_A.fid else 2 for f in sorted([KEY_A.fid, KEY_B.fid])]
    assert store.read_content(KEY_B.fid, 2) == content(11, 50)


# --- replication ---------------------------------------------------------------------

def test_replicate_yields_identical_content(make_store):
    src, dst = make_store(), make_store()
    contents = [content(i, n) for i, n in enumerate(LENGTHS + LENGTHS[::-1])]
    publish_all(src, KEY_A, contents)
    stored = replicate_entries(src, dst, KEY_A.fid)
    assert [s.seq for s in stored] == list(range(1, len(contents) + 1))
    assert [s.n_chunks for s in stored] == [chunk_count(len(c)) for c in contents]
    assert [s.msg_id for s in stored][-1] == verify_chain(src, KEY_A.fid)
    total = sum(chunk_count(len(c)) for c in contents)
    assert dst.info(KEY_A.fid).missing_chunks == total
    # the entries alone: only chunkless contents are readable
    for seq, c in enumerate(contents, 1):
        expected = c if chunk_count(len(c)) == 0 else None
        assert dst.read_content(KEY_A.fid, seq) == expected
    replicate_chunks(src, dst, KEY_A.fid)
    info = dst.info(KEY_A.fid)
    assert info.missing_chunks == 0 and info.incomplete == ()
    for seq, c in enumerate(contents, 1):
        assert dst.read_content(KEY_A.fid, seq) == c
        assert dst.read_packet(KEY_A.fid, seq) == src.read_packet(KEY_A.fid, seq)
    assert dst.expected_chunks() == {}


def test_info_reports_missing_chunks_while_chains_are_incomplete(make_store):
    src, dst = make_store(), make_store()
    entries = publish_all(src, KEY_A, [content(0, 10), content(1, 450), content(2, 128)])
    assert [len(e.chunks) for e in entries] == [0, 5, 2]
    replicate_entries(src, dst, KEY_A.fid)
    info = dst.info(KEY_A.fid)
    assert info.length == 3
    assert info.missing_chunks == 7
    assert info.incomplete == ((2, 0, 5), (3, 0, 2))
    assert dst.infos() == [info]
    assert dst.expects_chunk(hash20(entries[1].chunks[0]))
    assert dst.expected_chunks() == {
        hash20(entries[1].chunks[0]): [(KEY_A.fid, 2)],
        hash20(entries[2].chunks[0]): [(KEY_A.fid, 3)],
    }

    r = dst.ingest_chunk(entries[1].chunks[0])
    assert [(s.fid, s.seq, s.cnr, s.chain_complete) for s in r] == [(KEY_A.fid, 2, 0, False)]
    assert r[0].old_hash == hash20(entries[1].chunks[0])
    assert r[0].next_hash == hash20(entries[1].chunks[1])
    r = dst.ingest_chunk(entries[1].chunks[1])
    assert dst.info(KEY_A.fid).incomplete == ((2, 2, 5), (3, 0, 2))
    assert dst.info(KEY_A.fid).missing_chunks == 5
    # held chunks read back, chunks not held yet do not
    assert dst.read_chunk(KEY_A.fid, 2, 1) == entries[1].chunks[1]
    assert dst.read_chunk(KEY_A.fid, 2, 2) is None
    assert dst.read_content(KEY_A.fid, 2) is None
    # a later chunk of the chain is not taken before its predecessor
    assert dst.ingest_chunk(entries[1].chunks[3]) == []
    for chunk in entries[2].chunks:
        dst.ingest_chunk(chunk)
    assert dst.info(KEY_A.fid).incomplete == ((2, 2, 5),)
    assert dst.read_content(KEY_A.fid, 3) == content(2, 128)
    for chunk in entries[1].chunks[2:]:
        r = dst.ingest_chunk(chunk)
    assert r[0].chain_complete and r[0].next_hash is None and r[0].cnr == 4
    assert dst.info(KEY_A.fid).missing_chunks == 0
    assert dst.read_content(KEY_A.fid, 2) == content(1, 450)


def test_ingest_entry_rejects_bad_packets_and_changes_nothing(make_store):
    src, dst = make_store(), make_store()
    entries = publish_all(src, KEY_A, [content(i, 300) for i in range(4)])
    other = src.publish(KEY_B, content(9, 300))
    replicate_entries(src, dst, KEY_A.fid, upto=2)
    before = snapshot(dst)

    def tampered(packet: bytes, pos: int) -> bytes:
        b = bytearray(packet)
        b[pos] ^= 0x01
        return bytes(b)

    p3 = entries[2].packet
    bad = [
        p3[:119],  # short
        p3 + b"\0",  # long
        b"",
        entries[3].packet,  # out of order (seq 4 before 3)
        entries[1].packet,  # replay of seq 2
        entries[0].packet,  # replay of seq 1
        other.packet,  # an entry of another feed
        tampered(p3, 0),  # DMX
        tampered(p3, 7),  # type byte (signed)
        tampered(p3, 20),  # payload
        tampered(p3, 50),  # PTR
        tampered(p3, 60),  # signature
        tampered(p3, 119),  # signature
        p3[:56] + bytes(64),  # zeroed signature
        build_entry(KEY_B, 3, entries[1].msg_id, content(2, 300)).packet,  # wrong signer
        build_entry(KEY_A, 3, bytes(20), content(2, 300)).packet,  # wrong prev
    ]
    for packet in bad:
        with pytest.raises(WireError):
            dst.ingest_entry(KEY_A.fid, packet)
        assert snapshot(dst) == before
    with pytest.raises(SignatureError):
        dst.ingest_entry(KEY_A.fid, tampered(p3, 60))
    with pytest.raises(UnknownFeedError):
        dst.ingest_entry(KEY_C.fid, p3)
    # and the right one is still accepted afterwards
    assert dst.ingest_entry(KEY_A.fid, p3).seq == 3


def test_chunks_nobody_expects_are_not_taken(make_store):
    src, dst = make_store(), make_store()
    entries = publish_all(src, KEY_A, [content(0, 250), content(1, 250)])
    replicate_entries(src, dst, KEY_A.fid, upto=1)
    before = snapshot(dst)
    assert dst.ingest_chunk(bytes(120)) == []
    assert dst.ingest_chunk(os.urandom(120)) == []
    assert dst.ingest_chunk(entries[1].chunks[0]) == []  # its entry is not held yet
    assert dst.ingest_chunk(entries[0].chunks[1]) == []  # not the next one of its chain
    assert dst.ingest_chunk(entries[0].chunks[0][:119]) == []  # wrong length
    assert dst.ingest_chunk(entries[0].chunks[0] + b"\0") == []
    assert snapshot(dst) == before
    for chunk in entries[0].chunks:
        assert len(dst.ingest_chunk(chunk)) == 1
    assert dst.ingest_chunk(entries[0].chunks[0]) == []  # already held
    assert dst.read_content(KEY_A.fid, 1) == content(0, 250)
    # a store that holds the feed itself expects nothing
    assert src.ingest_chunk(entries[0].chunks[0]) == []


def test_chunk_out_of_chain_order_keeps_the_expectation(make_store):
    src, dst = make_store(), make_store()
    e = src.publish(KEY_A, content(0, 250))
    replicate_entries(src, dst, KEY_A.fid)
    h0 = hash20(e.chunks[0])
    assert dst.ingest_chunk(e.chunks[1]) == []  # not the chunk this chain needs next
    assert dst.ingest_chunk(e.chunks[0][:119]) == []  # short packet
    assert dst.expects_chunk(h0)
    for chunk in e.chunks:
        assert len(dst.ingest_chunk(chunk)) == 1
    assert dst.read_content(KEY_A.fid, 1) == content(0, 250)


def test_identical_chunks_of_two_entries_complete_from_one_delivery(make_store):
    src, dst = make_store(), make_store()
    # same length, different first byte: HEAD differs, the 5 chunks are identical
    a = src.publish(KEY_A, b"a" + b"x" * 449)
    b = src.publish(KEY_A, b"b" + b"x" * 449)
    assert a.chunks == b.chunks and a.packet != b.packet and len(a.chunks) == 5
    replicate_entries(src, dst, KEY_A.fid)
    assert dst.expected_chunks() == {hash20(a.chunks[0]): [(KEY_A.fid, 1), (KEY_A.fid, 2)]}
    assert dst.info(KEY_A.fid).missing_chunks == 10
    for cnr, chunk in enumerate(a.chunks):
        stored = dst.ingest_chunk(chunk)
        assert sorted((s.seq, s.cnr) for s in stored) == [(1, cnr), (2, cnr)]
    assert dst.info(KEY_A.fid).incomplete == ()
    assert dst.read_content(KEY_A.fid, 1) == b"a" + b"x" * 449
    assert dst.read_content(KEY_A.fid, 2) == b"b" + b"x" * 449
    assert dst.expected_chunks() == {}


def test_same_content_in_two_feeds_completes_from_one_delivery(make_store):
    src, dst = make_store(), make_store()
    c = content(3, 777)
    a = src.publish(KEY_A, c)
    b = src.publish(KEY_B, c)
    assert a.chunks == b.chunks
    replicate_entries(src, dst, KEY_A.fid)
    replicate_entries(src, dst, KEY_B.fid)
    for chunk in a.chunks:
        stored = dst.ingest_chunk(chunk)
        assert sorted(s.fid for s in stored) == sorted([KEY_A.fid, KEY_B.fid])
    assert dst.read_content(KEY_A.fid, 1) == c
    assert dst.read_content(KEY_B.fid, 1) == c
    assert all(i.missing_chunks == 0 for i in dst.infos())


def test_shared_chunk_awaited_at_different_positions(make_store):
    """The tail of a long chain equals the whole chain of a shorter entry."""
    src, dst = make_store(), make_store()
    long = src.publish(KEY_A, b"L" * 26 + b"q" * 100 + b"r" * 100 + b"x" * 224)  # 5 chunks
    short = src.publish(KEY_B, b"S" * 26 + b"x" * 224)  # 3 chunks
    assert long.chunks[2:] == short.chunks
    replicate_entries(src, dst, KEY_A.fid)
    dst.ingest_chunk(long.chunks[0])
    dst.ingest_chunk(long.chunks[1])
    replicate_entries(src, dst, KEY_B.fid)
    assert {h: sorted(w) for h, w in dst.expected_chunks().items()} == {
        hash20(short.chunks[0]): sorted([(KEY_A.fid, 1), (KEY_B.fid, 1)])}
    for chunk in short.chunks:
        assert len(dst.ingest_chunk(chunk)) == 2
    assert dst.read_content(KEY_A.fid, 1) == src.read_content(KEY_A.fid, 1)
    assert dst.read_content(KEY_B.fid, 1) == src.read_content(KEY_B.fid, 1)


def test_read_returns_none_for_what_is_not_held(make_store):
    src, dst = make_store(), make_store()
    e = src.publish(KEY_A, content(0, 250))
    src.publish(KEY_A, content(1, 5))
    assert src.read_packet(KEY_B.fid, 1) is None
    assert src.read_chunk(KEY_B.fid, 1, 0) is None
    for seq in (0, -1, 3, 1000):
        assert src.read_packet(KEY_A.fid, seq) is None
        assert src.read_chunk(KEY_A.fid, seq, 0) is None
    assert src.read_chunk(KEY_A.fid, 1, -1) is None
    assert src.read_chunk(KEY_A.fid, 1, 3) is None
    assert src.read_chunk(KEY_A.fid, 2, 0) is None  # entry without chunks
    assert src.read_content(KEY_A.fid, 3) is None
    assert src.read_content(KEY_A.fid, 0) is None
    with pytest.raises(UnknownFeedError):
        src.read_content(KEY_B.fid, 1)
    with pytest.raises(UnknownFeedError):
        src.info(KEY_B.fid)
    replicate_entries(src, dst, KEY_A.fid, upto=1)
    assert dst.read_chunk(KEY_A.fid, 1, 0) is None  # pending, nothing held yet
    dst.ingest_chunk(e.chunks[0])
    assert dst.read_chunk(KEY_A.fid, 1, 0) == e.chunks[0]
    assert dst.read_chunk(KEY_A.fid, 1, 1) is None
    assert dst.read_packet(KEY_A.fid, 2) is None


def test_add_feed(make_store):
    store = make_store()
    r = store.add_feed(KEY_A.fid)
    assert store.add_feed(KEY_A.fid) is r
    assert KEY_A.fid in store and len(store) == 1
    assert store.info(KEY_A.fid).length == 0
    assert r.next_dmx() == build_entry(KEY_A, 1, genesis_prev(KEY_A.fid), b"").packet[:7]
    with pytest.raises(StoreError):
        store.add_feed(b"\x01" * 31)


def test_remove_feed(make_store, kind):
    src, dst = make_store(), make_store()
    publish_all(src, KEY_A, [content(i, 300) for i in range(3)])
    publish_all(src, KEY_B, [content(i + 10, 300) for i in range(2)])
    replicate_entries(src, dst, KEY_A.fid)
    replicate_entries(src, dst, KEY_B.fid)
    assert len(dst.expected_chunks()) == 5
    dst.remove_feed(KEY_A.fid)
    assert KEY_A.fid not in dst and dst.feeds() == [KEY_B.fid]
    assert all(fid == KEY_B.fid for w in dst.expected_chunks().values() for fid, _ in w)
    assert len(dst.expected_chunks()) == 2
    assert dst.read_packet(KEY_A.fid, 1) is None
    with pytest.raises(UnknownFeedError):
        dst.remove_feed(KEY_A.fid)
    src.remove_feed(KEY_A.fid)
    if kind == "disk":
        assert not feed_dir(src.root, KEY_A.fid).exists()
        assert not feed_dir(dst.root, KEY_A.fid).exists()
        assert feed_dir(dst.root, KEY_B.fid).is_dir()
    # the feed can be held again from scratch
    assert src.publish(KEY_A, b"again").seq == 1
    replicate_entries(src, dst, KEY_A.fid)
    assert dst.read_content(KEY_A.fid, 1) == b"again"


def test_context_manager(make_store):
    store = make_store()
    with store as s:
        s.publish(KEY_A, b"x")
    assert s is store


# --- disk: reopen and crash recovery ---------------------------------------------------

def disk_fixture_state(root: Path):
    """A data directory with an own feed (A) and a replicated feed (B) with pending chains.

    Returns (source MemoryStore of B, entries of A, entries of B); the DiskStore is closed.
    """
    src = MemoryStore()
    b_entries = publish_all(src, KEY_B, [content(i, n) for i, n in
                                         enumerate([5, 450, 128, 1000, 27, 300])])
    store = DiskStore(root)
    a_entries = publish_all(store, KEY_A, [content(i, n) for i, n in enumerate(LENGTHS)])
    replicate_entries(src, store, KEY_B.fid)
    replicate_chunks(src, store, KEY_B.fid, limit=7)  # some chains complete, some not
    info = store.info(KEY_B.fid)
    assert info.missing_chunks > 0 and info.incomplete
    store.close()
    return src, a_entries, b_entries


def check_files_consistent(root: Path, store: DiskStore) -> None:
    for fid in store.feeds():
        d = feed_dir(root, fid)
        assert (d / "log").stat().st_size == store.info(fid).length * PACKET_LEN
        assert (d / "chunks").stat().st_size % CHUNK_RECORD_LEN == 0


def test_disk_reopen_gives_the_same_state(tmp_path):
    root = tmp_path / "data"
    src, _, _ = disk_fixture_state(root)
    store = DiskStore(root)
    before = snapshot(store)
    store.close()
    store = DiskStore(root)
    assert snapshot(store) == before
    check_files_consistent(root, store)
    # pending chains still complete after reopening
    replicate_chunks(src, store, KEY_B.fid)
    assert store.info(KEY_B.fid).missing_chunks == 0
    for seq in range(1, src.info(KEY_B.fid).length + 1):
        assert store.read_content(KEY_B.fid, seq) == src.read_content(KEY_B.fid, seq)
    store.close()
    store = DiskStore(root)
    assert store.info(KEY_B.fid).missing_chunks == 0
    assert store.read_content(KEY_A.fid, 8) == content(7, 5000)
    store.close()


def test_disk_crash_without_flush_keeps_what_was_written(tmp_path):
    root = tmp_path / "data"
    src, _, _ = disk_fixture_state(root)
    store = DiskStore(root)
    more = publish_all(src, KEY_B, [content(20 + i, 333) for i in range(3)])
    replicate_entries(src, store, KEY_B.fid)
    store.ingest_chunk(more[0].chunks[0])
    store.publish(KEY_A, content(99, 640))
    before = snapshot(store)
    crash(store)  # no flush, frontier file stale
    store = DiskStore(root)
    assert snapshot(store) == before
    check_files_consistent(root, store)
    store.close()


def test_disk_torn_records_are_cut(tmp_path):
    root = tmp_path / "data"
    _, a_entries, _ = disk_fixture_state(root)
    store = DiskStore(root)
    before = snapshot(store)
    store.close()
    nxt = build_entry(KEY_A, len(a_entries) + 1, a_entries[-1].msg_id, content(50, 300))
    append_file(feed_dir(root, KEY_A.fid) / "chunks", chunk_record(9, 0, nxt.chunks[0])[:77])
    append_file(feed_dir(root, KEY_A.fid) / "log", nxt.packet[:50])
    append_file(feed_dir(root, KEY_B.fid) / "log", b"\x01" * 119)
    append_file(feed_dir(root, KEY_B.fid) / "chunks", b"\x02" * 127)
    store = DiskStore(root)
    assert snapshot(store) == before
    check_files_consistent(root, store)
    assert (feed_dir(root, KEY_B.fid) / "chunks").stat().st_size % CHUNK_RECORD_LEN == 0
    e = store.publish(KEY_A, content(51, 300))
    assert e.seq == len(a_entries) + 1
    store.close()
    store = DiskStore(root)
    assert store.read_content(KEY_A.fid, e.seq) == content(51, 300)
    verify_chain(store, KEY_A.fid)
    store.close()


def frontier_json(**fields) -> bytes:
    """A frontier file body: a valid empty checkpoint with ``fields`` overridden."""
    body = {"version": 1, "max_seq": 0, "prev": "00" * 20, "log_bytes": 0,
            "chunk_bytes": 0, "pending": {}}
    body.update(fields)
    return json.dumps(body).encode()


@pytest.mark.parametrize("garbage", [
    None,  # deleted
    b"",
    b"\xff\xfe\x00garbage",
    b"{",
    b"null",
    b"[]",
    b"42",
    b'{"version": 1}',
    frontier_json(version=99),
    frontier_json(max_seq=3, prev="zz", log_bytes=360),
    frontier_json(max_seq=3, prev="00", log_bytes=360),  # prev of the wrong length
    frontier_json(max_seq="three", log_bytes=360),
    frontier_json(max_seq=3, log_bytes=999),  # log_bytes inconsistent with max_seq
    frontier_json(max_seq=-3, log_bytes=-360),  # negative (was: EINVAL naming no file)
    frontier_json(max_seq=2, log_bytes=240, chunk_bytes=-128),
    frontier_json(pending={"1": [-1, -2, "00" * 20]}),
    frontier_json(chunk_bytes=12800000),  # beyond the end of the chunks
    frontier_json(pending=[1, 2]),
    frontier_json(pending={"1": [1, 2]}),
    frontier_json(pending={"x": [1, 2, "00"]}),
])
def test_disk_frontier_lost_or_garbage_is_rebuilt_from_the_logs(tmp_path, garbage):
    root = tmp_path / "data"
    _, a_entries, _ = disk_fixture_state(root)
    store = DiskStore(root)
    before = snapshot(store)
    store.close()
    for fid in (KEY_A.fid, KEY_B.fid):
        path = feed_dir(root, fid) / "frontier"
        if garbage is None:
            path.unlink()
        else:
            path.write_bytes(garbage)
    store = DiskStore(root)
    assert snapshot(store) == before
    check_files_consistent(root, store)
    # the rebuilt frontier is a valid checkpoint again
    data = json.loads((feed_dir(root, KEY_B.fid) / "frontier").read_text())
    assert data["max_seq"] == before[0][KEY_B.fid][0].length
    assert store.publish(KEY_A, b"next").seq == len(a_entries) + 1
    store.close()
    store = DiskStore(root)
    assert store.read_content(KEY_A.fid, len(a_entries) + 1) == b"next"
    store.close()


def test_disk_frontier_that_is_a_directory_is_moved_aside_and_rebuilt(tmp_path):
    root = tmp_path / "data"
    _, a_entries, _ = disk_fixture_state(root)
    path = feed_dir(root, KEY_A.fid) / "frontier"
    path.unlink()
    path.mkdir()
    with DiskStore(root) as store:
        assert store.info(KEY_A.fid).length == len(a_entries)
        assert store.publish(KEY_A, b"next").seq == len(a_entries) + 1
    assert path.is_file()
    assert [p.name.startswith("frontier-dir") for p in
            (feed_dir(root, KEY_A.fid) / "quarantine").iterdir()] == [True]


def test_disk_plausible_but_wrong_frontier_does_not_cut_the_log(tmp_path):
    root = tmp_path / "data"
    _, a_entries, _ = disk_fixture_state(root)
    path = feed_dir(root, KEY_A.fid) / "frontier"
    path.write_bytes(frontier_json(max_seq=3, prev="00" * 20, log_bytes=3 * PACKET_LEN))
    store = DiskStore(root)
    try:
        assert store.info(KEY_A.fid).length == len(a_entries)
    finally:
        store.close()


def test_disk_frontier_stale_checkpoint_is_rolled_forward(tmp_path):
    """An old (valid) frontier file: everything written since is adopted."""
    root = tmp_path / "data"
    src = MemoryStore()
    b_entries = publish_all(src, KEY_B, [content(i, 250) for i in range(6)])
    store = DiskStore(root)
    replicate_entries(src, store, KEY_B.fid, upto=2)
    store.close()
    old = (feed_dir(root, KEY_B.fid) / "frontier").read_bytes()
    store = DiskStore(root)
    replicate_entries(src, store, KEY_B.fid)
    replicate_chunks(src, store, KEY_B.fid, limit=10)
    before = snapshot(store)
    store.close()
    (feed_dir(root, KEY_B.fid) / "frontier").write_bytes(old)
    store = DiskStore(root)
    assert snapshot(store) == before
    replicate_chunks(src, store, KEY_B.fid)
    for i, e in enumerate(b_entries):
        assert store.read_content(KEY_B.fid, i + 1) == content(i, 250)
    store.close()


def test_disk_records_appended_after_the_checkpoint_are_adopted(tmp_path):
    root = tmp_path / "data"
    src, a_entries, b_entries = disk_fixture_state(root)
    # own feed A: three more entries, written straight to the files after the checkpoint;
    # the last one with only its first chunk (a chain left pending)
    prev, seq = a_entries[-1].msg_id, len(a_entries)
    extra = []
    for i, n in enumerate([10, 300, 450]):
        seq += 1
        e = build_entry(KEY_A, seq, prev, content(60 + i, n))
        prev = e.msg_id
        extra.append(e)
        chunks = e.chunks if i < 2 else e.chunks[:1]
        for cnr, chunk in enumerate(chunks):
            append_file(feed_dir(root, KEY_A.fid) / "chunks", chunk_record(seq, cnr, chunk))
        append_file(feed_dir(root, KEY_A.fid) / "log", e.packet)
    # replicated feed B: two new entries without chunks
    more = publish_all(src, KEY_B, [content(70, 5), content(71, 350)])
    for e in more:
        append_file(feed_dir(root, KEY_B.fid) / "log", e.packet)

    store = DiskStore(root)
    check_files_consistent(root, store)
    assert store.info(KEY_A.fid).length == len(a_entries) + 3
    assert store.read_content(KEY_A.fid, len(a_entries) + 1) == content(60, 10)
    assert store.read_content(KEY_A.fid, len(a_entries) + 2) == content(61, 300)
    assert store.read_content(KEY_A.fid, len(a_entries) + 3) is None
    assert store.info(KEY_A.fid).incomplete == ((len(a_entries) + 3, 1, 5),)
    assert store.expects_chunk(hash20(extra[2].chunks[1]))
    nb = len(b_entries) + 2
    assert store.info(KEY_B.fid).length == nb
    assert (nb, 0, 4) in store.info(KEY_B.fid).incomplete
    assert store.read_content(KEY_B.fid, nb - 1) == content(70, 5)
    verify_chain(store, KEY_A.fid)
    verify_chain(store, KEY_B.fid)
    # and replication continues from there
    for chunk in extra[2].chunks[1:]:
        assert store.ingest_chunk(chunk)
    replicate_chunks(src, store, KEY_B.fid)
    assert store.read_content(KEY_A.fid, len(a_entries) + 3) == content(62, 450)
    assert all(i.missing_chunks == 0 for i in store.infos())
    store.close()


@pytest.mark.parametrize("bad", ["garbage", "replay", "other-feed", "zeros"])
def test_disk_invalid_log_record_is_cut_with_everything_after_it(tmp_path, bad):
    root = tmp_path / "data"
    _, a_entries, _ = disk_fixture_state(root)
    store = DiskStore(root)
    before = snapshot(store)
    store.close()
    n = len(a_entries)
    record = {
        "garbage": bytes((i * 13 + 5) % 256 for i in range(PACKET_LEN)),
        "replay": a_entries[-1].packet,
        "other-feed": build_entry(KEY_B, n + 1, a_entries[-1].msg_id, b"x").packet,
        "zeros": bytes(PACKET_LEN),
    }[bad]
    log_path = feed_dir(root, KEY_A.fid) / "log"
    append_file(log_path, record)
    # a valid entry after the bad record (as if written over a hole) and its chunks
    after = build_entry(KEY_A, n + 1, a_entries[-1].msg_id, content(80, 300))
    append_file(log_path, after.packet)
    for cnr, chunk in enumerate(after.chunks):
        append_file(feed_dir(root, KEY_A.fid) / "chunks", chunk_record(n + 1, cnr, chunk))
    store = DiskStore(root)
    assert snapshot(store) == before
    assert log_path.stat().st_size == n * PACKET_LEN
    check_files_consistent(root, store)
    e = store.publish(KEY_A, content(81, 444))
    assert e.seq == n + 1
    store.close()
    store = DiskStore(root)
    assert store.read_content(KEY_A.fid, n + 1) == content(81, 444)
    assert store.info(KEY_A.fid).missing_chunks == 0
    verify_chain(store, KEY_A.fid)
    store.close()


@pytest.mark.parametrize("how", ["closed", "crashed", "torn-entry"])
def test_disk_orphan_chunks_are_cut_and_publish_continues(tmp_path, how):
    """A crash mid-publish: the chunks were written, the entry was not (or only partly)."""
    root = tmp_path / "data"
    disk_fixture_state(root)
    store = DiskStore(root)
    e_last = store.publish(KEY_A, content(90, 200))
    before = snapshot(store)
    chunks_path = feed_dir(root, KEY_A.fid) / "chunks"
    size = chunks_path.stat().st_size
    if how == "crashed":
        crash(store)
    else:
        store.close()
    seq = e_last.seq + 1
    lost = build_entry(KEY_A, seq, e_last.msg_id, content(91, 900))
    for cnr, chunk in enumerate(lost.chunks):
        append_file(chunks_path, chunk_record(seq, cnr, chunk))
    if how == "torn-entry":
        append_file(feed_dir(root, KEY_A.fid) / "log", lost.packet[:70])
    store = DiskStore(root)
    assert chunks_path.stat().st_size == size
    assert snapshot(store) == before
    assert store.info(KEY_A.fid).missing_chunks == 0
    # publishing continues with other content of another length for the same seq
    e = store.publish(KEY_A, content(92, 333))
    assert e.seq == seq and e.packet != lost.packet
    assert store.read_content(KEY_A.fid, seq) == content(92, 333)
    e2 = store.publish(KEY_A, content(93, 1234))
    store.close()
    store = DiskStore(root)
    assert store.read_content(KEY_A.fid, seq) == content(92, 333)
    assert store.read_content(KEY_A.fid, e2.seq) == content(93, 1234)
    assert store.info(KEY_A.fid).missing_chunks == 0
    verify_chain(store, KEY_A.fid)
    for s in range(1, e2.seq + 1):
        assert store.read_content(KEY_A.fid, s) is not None
    store.close()


# --- disk: lock and read-only access -----------------------------------------------------

def test_disk_second_writer_is_refused(tmp_path):
    root = tmp_path / "data"
    first = DiskStore(root)
    first.publish(KEY_A, b"one")
    with pytest.raises(StoreLockedError) as excinfo:
        DiskStore(root)
    assert isinstance(excinfo.value, StoreError)
    assert str(root) in str(excinfo.value)
    # the refused attempt did not disturb the writer
    assert first.publish(KEY_A, b"two").seq == 2
    first.close()
    second = DiskStore(root)
    assert second.read_content(KEY_A.fid, 2) == b"two"
    second.close()


def test_disk_readonly_alongside_the_writer(tmp_path):
    root = tmp_path / "data"
    writer = DiskStore(root)
    contents = [content(i, n) for i, n in enumerate(LENGTHS)]
    publish_all(writer, KEY_A, contents)  # durable, not checkpointed
    reader = DiskStore(root, readonly=True)
    assert reader.feeds() == [KEY_A.fid]
    assert reader.info(KEY_A.fid).length == len(contents)
    for seq, c in enumerate(contents, 1):
        assert reader.read_content(KEY_A.fid, seq) == c
    files = {p: p.read_bytes() for p in feed_dir(root, KEY_A.fid).iterdir()}
    with pytest.raises(StoreError):
        reader.publish(KEY_A, content(1, 300))
    with pytest.raises(StoreError):
        reader.publish(KEY_B, b"x")
    with pytest.raises(StoreError):
        reader.add_feed(KEY_B.fid)
    reader.flush()
    assert {p: p.read_bytes() for p in feed_dir(root, KEY_A.fid).iterdir()} == files
    # the writer goes on; a second reader opened later sees the new entries
    writer.publish(KEY_A, b"later")
    reader.close()
    frontier = feed_dir(root, KEY_A.fid) / "frontier"
    assert frontier.read_bytes() == files[frontier]
    reader2 = DiskStore(root, readonly=True)
    assert reader2.read_content(KEY_A.fid, len(contents) + 1) == b"later"
    reader2.close()
    writer.close()


def test_disk_readonly_does_not_cut_the_writers_tail(tmp_path):
    root = tmp_path / "data"
    writer = DiskStore(root)
    e = writer.publish(KEY_A, content(0, 300))
    log_path = feed_dir(root, KEY_A.fid) / "log"
    append_file(log_path, b"\x05" * 60)  # as if the writer were mid-write
    reader = DiskStore(root, readonly=True)
    assert reader.info(KEY_A.fid).length == 1
    assert reader.read_content(KEY_A.fid, 1) == content(0, 300)
    reader.close()
    assert log_path.stat().st_size == PACKET_LEN + 60
    writer.close()
    assert e.seq == 1


def test_disk_readonly_of_missing_directory_creates_nothing(tmp_path):
    root = tmp_path / "nothing-here"
    store = DiskStore(root, readonly=True)
    assert store.feeds() == []
    store.close()
    assert not root.exists()


def test_disk_readonly_remove_feed_changes_nothing(tmp_path):
    root = tmp_path / "data"
    with DiskStore(root) as writer:
        writer.publish(KEY_A, content(0, 300))
    reader = DiskStore(root, readonly=True)
    with pytest.raises(StoreError):
        reader.remove_feed(KEY_A.fid)
    try:
        assert KEY_A.fid in reader
        assert reader.read_content(KEY_A.fid, 1) == content(0, 300)
    finally:
        reader.close()
    assert feed_dir(root, KEY_A.fid).is_dir()


def test_disk_ignores_foreign_entries_in_feeds_dir(tmp_path):
    root = tmp_path / "data"
    with DiskStore(root) as store:
        store.publish(KEY_A, b"x")
    (root / "feeds" / "not-a-feed").mkdir()
    (root / "feeds" / ("ab" * 32)).write_bytes(b"a file, not a directory")
    with DiskStore(root) as store:
        assert store.feeds() == [KEY_A.fid]


def test_disk_data_dir_that_is_a_file_is_a_store_error(tmp_path):
    path = tmp_path / "file"
    path.write_bytes(b"")
    with pytest.raises(StoreError):
        DiskStore(path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root bypasses permission checks")
def test_disk_unreadable_data_dir_is_a_store_error(tmp_path):
    root = tmp_path / "data"
    with DiskStore(root) as store:
        store.publish(KEY_A, b"x")
    os.chmod(root, 0)
    try:
        with pytest.raises(StoreError) as excinfo:
            DiskStore(root)
        assert "permission" in str(excinfo.value).lower()
        with pytest.raises(StoreError):
            DiskStore(root, readonly=True)
    finally:
        os.chmod(root, 0o700)


# --- keys --------------------------------------------------------------------------------

def test_key_created_owner_only_and_reloaded(tmp_path):
    data = tmp_path / "data"
    key, new = load_or_create_key(data)
    assert new
    path = key_path(data)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again, new2 = load_or_create_key(data)
    assert not new2
    assert again == key
    assert load_key(path).fid == key.fid
    with pytest.raises(KeyFileError):
        save_key(path, key)  # never overwrites
    other, _ = load_or_create_key(tmp_path / "other")
    assert other.fid != key.fid


def test_key_file_readable_by_others_is_refused(tmp_path):
    data = tmp_path / "data"
    load_or_create_key(data)
    os.chmod(key_path(data), 0o644)
    with pytest.raises(KeyFileError) as excinfo:
        load_or_create_key(data)
    assert "chmod 600" in str(excinfo.value)
    assert isinstance(excinfo.value, StoreError)
    os.chmod(key_path(data), 0o600)
    load_or_create_key(data)


@pytest.mark.parametrize("body", [
    b"",
    b"not json",
    b"\xff\xfe",
    b"null",
    b"[]",
    b"{}",
    b'{"seed": "zz"}',
    b'{"seed": "0011"}',  # too short a seed
    b'{"seed": 5}',
    b'{"curve": "ed25519", "id": "@AAAA.ed25519", "seed": "' + b"00" * 32 + b'"}',  # id mismatch
])
def test_malformed_key_file_is_refused(tmp_path, body):
    path = key_path(tmp_path)
    path.write_bytes(body)
    os.chmod(path, 0o600)
    with pytest.raises(KeyFileError):
        load_or_create_key(tmp_path)


def test_missing_key_file(tmp_path):
    with pytest.raises(KeyFileError):
        load_key(key_path(tmp_path))


def test_key_file_is_0600_even_with_a_stale_temporary_file(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    stale = key_path(data).with_name(key_path(data).name + ".tmp")
    stale.write_bytes(b"left over by a crash")
    os.chmod(stale, 0o644)
    load_or_create_key(data)
    assert stat.S_IMODE(key_path(data).stat().st_mode) == 0o600


# --- randomized: publish, replicate with delayed chunks, reopen --------------------------

SM_LENGTHS = [0, 5, 27, 28, 127, 128, 250, 450]
SM_KEYS = [KEY_A, KEY_B]


class StoreMachine(RuleBasedStateMachine):
    """A publishing DiskStore (src), a replicating DiskStore (dst) and a MemoryStore
    (mem) fed the very same packets as dst. Contents repeat often, so chunks are shared
    between chains; chunks are delivered in random order across chains, with duplicates
    and chunks that are not expected yet."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="tinyssb-store-sm-"))
        self.src = DiskStore(self.tmp / "src")
        self.dst = DiskStore(self.tmp / "dst")
        self.mem = MemoryStore()
        self.contents: dict[bytes, list[bytes]] = {k.fid: [] for k in SM_KEYS}
        self.delivered: dict[bytes, int] = {k.fid: 0 for k in SM_KEYS}
        self.pending: dict[tuple[bytes, int], list[int]] = {}  # -> [next cnr, n chunks]
        for k in SM_KEYS:
            self.dst.add_feed(k.fid)
            self.mem.add_feed(k.fid)

    def teardown(self) -> None:
        for store in (self.src, self.dst):
            store.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @rule(feed=st.integers(0, 1), length=st.sampled_from(SM_LENGTHS),
          first=st.integers(0, 2), fill=st.sampled_from(b"xy"))
    def publish(self, feed, length, first, fill):
        key = SM_KEYS[feed]
        c = (bytes([first]) + bytes([fill]) * (length - 1))[:length]
        e = self.src.publish(key, c)
        self.contents[key.fid].append(c)
        assert e.seq == len(self.contents[key.fid])

    @rule(feed=st.integers(0, 1), n=st.integers(1, 3))
    def replicate_entries(self, feed, n):
        fid = SM_KEYS[feed].fid
        for _ in range(n):
            seq = self.delivered[fid] + 1
            if seq > len(self.contents[fid]):
                return
            packet = self.src.read_packet(fid, seq)
            s1 = self.dst.ingest_entry(fid, packet)
            s2 = self.mem.ingest_entry(fid, packet)
            assert s1 == s2
            assert s1.n_chunks == chunk_count(len(self.contents[fid][seq - 1]))
            self.delivered[fid] = seq
            if s1.n_chunks:
                self.pending[(fid, seq)] = [0, s1.n_chunks]

    def _deliver(self, chunk: bytes, intended: tuple[bytes, int, int] | None) -> None:
        r1 = self.dst.ingest_chunk(chunk)
        r2 = self.mem.ingest_chunk(chunk)
        got = sorted((s.fid, s.seq, s.cnr, s.chain_complete) for s in r1)
        assert got == sorted((s.fid, s.seq, s.cnr, s.chain_complete) for s in r2)
        event(f"chunk taken by {min(len(got), 2)} chains")
        for fid, seq, cnr, complete in got:
            nxt, n = self.pending[(fid, seq)]
            assert cnr == nxt
            assert complete == (cnr + 1 == n)
            if complete:
                del self.pending[(fid, seq)]
            else:
                self.pending[(fid, seq)][0] = cnr + 1
        if intended is not None:
            assert intended in [g[:3] for g in got]

    @precondition(lambda self: self.pending)
    @rule(data=st.data())
    def deliver_next_chunk(self, data):
        fid, seq = data.draw(st.sampled_from(sorted(self.pending)))
        cnr = self.pending[(fid, seq)][0]
        chunk = self.src.read_chunk(fid, seq, cnr)
        self._deliver(chunk, (fid, seq, cnr))

    @precondition(lambda self: any(self.contents.values()))
    @rule(data=st.data())
    def deliver_any_chunk(self, data):
        """A random chunk of the source: maybe held, maybe not expected yet, maybe next."""
        fid = data.draw(st.sampled_from([f for f, c in self.contents.items() if c]))
        seq = data.draw(st.integers(1, len(self.contents[fid])))
        n = chunk_count(len(self.contents[fid][seq - 1]))
        if n == 0:
            return
        chunk = self.src.read_chunk(fid, seq, data.draw(st.integers(0, n - 1)))
        self._deliver(chunk, None)

    @rule(which=st.sampled_from(["src", "dst"]), crashed=st.booleans())
    def reopen(self, which, crashed):
        store = getattr(self, which)
        before = snapshot(store)
        if crashed:
            crash(store)
        else:
            store.close()
        store = DiskStore(self.tmp / which)
        setattr(self, which, store)
        assert snapshot(store) == before
        if which == "dst" and self.pending:
            event("reopened dst with pending chains")

    @invariant()
    def stores_agree(self):
        for key in SM_KEYS:
            fid = key.fid
            src_info = self.src.info(fid) if fid in self.src else None
            assert (src_info.length if src_info else 0) == len(self.contents[fid])
            if src_info:
                assert src_info.missing_chunks == 0
            info = self.dst.info(fid)
            assert info == self.mem.info(fid)
            assert info.length == self.delivered[fid]
            mine = tuple(sorted((seq, nc[0], nc[1]) for (f, seq), nc in self.pending.items()
                                if f == fid))
            assert info.incomplete == mine
            assert info.missing_chunks == sum(n - c for _, c, n in mine)
            for seq in range(1, info.length + 1):
                got = self.dst.read_content(fid, seq)
                assert got == self.mem.read_content(fid, seq)
                if (fid, seq) in self.pending:
                    assert got is None
                else:
                    assert got == self.contents[fid][seq - 1]
                    assert got == self.src.read_content(fid, seq)
        assert sorted(self.dst.expected_chunks()) == sorted(self.mem.expected_chunks())


StoreMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_store_machine = StoreMachine.TestCase


# --- a publish that fails half-way ----------------------------------------------------

def test_failed_publish_leaves_no_orphans_and_the_next_one_survives(make_store, kind,
                                                                    tmp_path, monkeypatch):
    """An I/O error while publishing (disk full, say) cuts both logs back: the next publish
    takes the same seq and its side chain reads back, also after a reopen."""
    store = make_store()
    key = FeedKey.from_seed(bytes([7]) * 32)
    store.publish(key, content(1, 300))
    backend = store.replica(key.fid).backend
    real_append = type(backend).append_entry

    def failing_append(self, seq, packet, durable):
        real_append(self, seq, packet, durable)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(type(backend), "append_entry", failing_append)
    with pytest.raises(OSError):
        store.publish(key, content(2, 450))
    monkeypatch.undo()
    assert store.info(key.fid).length == 1

    entry = store.publish(key, content(3, 450))
    assert entry.seq == 2
    assert store.read_content(key.fid, 2) == content(3, 450)
    assert len(store.replica(key.fid).backend.read_chunks(2)) == len(entry.chunks)
    if kind == "disk":
        store.close()
        reopened = DiskStore(tmp_path / "data0")
        try:
            assert reopened.info(key.fid).length == 2
            assert reopened.read_content(key.fid, 2) == content(3, 450)
            assert reopened.read_content(key.fid, 1) == content(1, 300)
        finally:
            reopened.close()
