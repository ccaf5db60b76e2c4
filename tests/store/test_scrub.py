"""The background scrub's store side: the checks of ``tinyssb verify``, a bounded number
of records per step; damage in another feed is cut as ``verify --repair`` cuts it, damage
in our own feed is only reported (issue 14)."""

from __future__ import annotations

from pathlib import Path

from gateway.store import DiskStore
from gateway.store.scrub import Scrub, check_feed
from gateway.wire.entry import PACKET_LEN, FeedKey

from .test_verify import CHUNK_RECORD, OTHER, N, flip, other_feed

OWN = FeedKey.from_seed(bytes(range(1, 33)))


def run_pass(scrub: Scrub, limit: int = 1000) -> list:
    """Step until one pass over every feed ends; the findings."""
    start, findings = scrub.stats.passes, []
    for _ in range(limit):
        if (f := scrub.step()) is not None:
            findings.append(f)
        if scrub.stats.passes > start:
            return findings
    raise AssertionError("no pass completed")


def test_clean_store_gives_no_finding_and_each_step_is_bounded(tmp_path: Path) -> None:
    other_feed(tmp_path)  # 12 entries, 24 chunk records
    with DiskStore(tmp_path) as store:
        scrub = Scrub(store, batch=5)
        counts = []
        for _ in range(20):
            before = scrub.stats.records_checked
            assert scrub.step() is None
            counts.append(scrub.stats.records_checked - before)
            if scrub.stats.passes:
                break
        assert max(counts) <= 5 and scrub.stats.passes == 1
        assert scrub.stats.records_checked == N + 2 * N
        assert run_pass(scrub) == [] and scrub.stats.damage_found == 0


def test_flipped_entry_byte_is_found_and_the_feed_cut_like_verify_repair(
        tmp_path: Path) -> None:
    other_feed(tmp_path)
    feed = tmp_path / "feeds" / OTHER.fid.hex()
    flip(feed / "log", 5 * PACKET_LEN + 40)  # entry 6
    with DiskStore(tmp_path) as store:
        assert store.replica(OTHER.fid).max_seq == N  # the checkpoint hides it
        (found,) = run_pass(Scrub(store, batch=4))
        assert (found.seq, found.entries, found.cut_to) == (6, N, 5)
        assert found.problem.startswith("entry 6 of 12 is damaged")
        assert store.replica(OTHER.fid).max_seq == 5
        assert not check_feed(store, OTHER.fid).damaged
    kept = sorted(p.name for p in (feed / "quarantine").iterdir())
    assert kept[0].startswith("log@") and \
        (feed / "quarantine" / kept[0]).stat().st_size == (N - 5) * PACKET_LEN


def test_flipped_chunk_byte_cuts_the_chunk_log_only(tmp_path: Path) -> None:
    other_feed(tmp_path)
    flip(tmp_path / "feeds" / OTHER.fid.hex() / "chunks", 3 * CHUNK_RECORD + 8 + 10)
    with DiskStore(tmp_path) as store:
        (found,) = run_pass(Scrub(store, batch=7))
        assert found.seq == 2 and "chunk 1 of entry 2 does not match its hash" in found.problem
        assert found.cut_to == N  # entries stay; chunks from record 4 on come again
        assert store.info(OTHER.fid).missing_chunks == 2 * N - 3


def test_own_feed_damage_is_reported_once_and_never_cut(tmp_path: Path) -> None:
    with DiskStore(tmp_path) as store:
        for i in range(6):
            store.publish(OWN, b"own %d" % i)
    flip(tmp_path / "feeds" / OWN.fid.hex() / "log", 2 * PACKET_LEN + 30)  # entry 3
    with DiskStore(tmp_path) as store:
        scrub = Scrub(store, frozenset({OWN.fid}), batch=2)
        (found,) = run_pass(scrub)
        assert found.cut_to is None and found.seq == 3
        assert store.replica(OWN.fid).max_seq == 6
        assert run_pass(scrub) == []  # the same damage is not reported again
        assert scrub.stats.damage_found == 1
    assert not (tmp_path / "feeds" / OWN.fid.hex() / "quarantine").exists()


def test_entries_arriving_between_steps_are_left_to_the_next_pass(tmp_path: Path) -> None:
    entries = other_feed(tmp_path)
    log = tmp_path / "feeds" / OTHER.fid.hex() / "log"
    with DiskStore(tmp_path) as store:
        store.remove_feed(OTHER.fid)
        store.add_feed(OTHER.fid)
        for e in entries[:8]:
            store.ingest_entry(OTHER.fid, e.packet)
            for c in e.chunks:
                store.ingest_chunk(c)
        scrub = Scrub(store, batch=3)
        assert scrub.step() is None and scrub.position[1:] == (3, 8)
        for e in entries[8:]:  # they arrive while the scrub is in the middle of the feed
            store.ingest_entry(OTHER.fid, e.packet)
            for c in e.chunks:
                store.ingest_chunk(c)
        assert run_pass(scrub) == [] and scrub.stats.records_checked == 8 + 16
        assert run_pass(scrub) == [] and scrub.stats.records_checked == 8 + 16 + N + 2 * N
    assert log.stat().st_size == N * PACKET_LEN
