"""``tinyssb verify [--repair]``: bit rot inside the checkpointed part of a log is found,
the damaged tail is cut (kept in quarantine) and fetched again (issue 14, case 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.cli import main
from gateway.store import DiskStore
from gateway.wire.entry import PACKET_LEN, FeedKey, build_feed

OTHER = FeedKey.from_seed(bytes(range(100, 132)))
N = 12
CHUNK_RECORD = 128


def other_feed(root: Path) -> list:
    """The data directory holds OTHER's feed (entries 1..N, each with a two-chunk chain)."""
    entries = build_feed(OTHER, [bytes([i]) * 200 for i in range(N)])
    with DiskStore(root) as store:
        store.add_feed(OTHER.fid)
        for e in entries:
            store.ingest_entry(OTHER.fid, e.packet)
            for c in e.chunks:
                store.ingest_chunk(c)
    return entries


def flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(data)


def cli(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str, str]:
    rc = main(["--data", str(root), *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_case5_flipped_byte_in_entry_6_is_found_cut_and_fetched_again(tmp_path, capsys):
    entries = other_feed(tmp_path)
    feed = tmp_path / "feeds" / OTHER.fid.hex()
    flip(feed / "log", 5 * PACKET_LEN + 40)
    assert json.loads(cli(capsys, tmp_path, "feeds", "--json")[1])[0]["length"] == N
    rc, out, _ = cli(capsys, tmp_path, "verify")
    assert rc == 1 and "entry 6 of 12 is damaged" in out and "--repair" in out
    rc, out, _ = cli(capsys, tmp_path, "verify", "--repair")
    assert rc == 0 and "repaired" in out
    assert json.loads(cli(capsys, tmp_path, "feeds", "--json")[1])[0]["length"] == 5
    kept = sorted(p.name for p in (feed / "quarantine").iterdir())
    assert kept and kept[0].startswith("log@")
    assert (feed / "quarantine" / kept[0]).stat().st_size == (N - 5) * PACKET_LEN
    with DiskStore(tmp_path) as store:  # peers send 6..12 again: taken
        for e in entries[5:]:
            store.ingest_entry(OTHER.fid, e.packet)
            for c in e.chunks:
                store.ingest_chunk(c)
        assert store.read_content(OTHER.fid, N) == bytes([N - 1]) * 200
    assert cli(capsys, tmp_path, "verify")[0] == 0


def test_case5_flipped_chunk_byte_is_not_printed_as_content(tmp_path, capsys):
    other_feed(tmp_path)
    feed = tmp_path / "feeds" / OTHER.fid.hex()
    flip(feed / "chunks", 3 * CHUNK_RECORD + 8 + 10)  # entry 2, chunk 1
    rc, out, err = cli(capsys, tmp_path, "cat", OTHER.fid.hex(), "--seq", "2", "--raw")
    assert rc == 2 and out == "" and "tinyssb verify --repair" in err
    rc, out, _ = cli(capsys, tmp_path, "verify", "--json")
    report = json.loads(out)[0]
    assert rc == 1 and report["chunk_records_ok"] == 3 and "hash" in report["chunk_problem"]
    assert cli(capsys, tmp_path, "verify", "--repair")[0] == 0
    with DiskStore(tmp_path, readonly=True) as store:
        assert store.info(OTHER.fid).missing_chunks == 2 * N - 3  # awaited again


def test_case5_own_feed_bit_rot_is_cut_and_publishing_waits(tmp_path, capsys):
    for i in range(N):
        assert cli(capsys, tmp_path, "publish", f"post {i}")[0] == 0
    own = next((tmp_path / "feeds").iterdir())
    flip(own / "log", 5 * PACKET_LEN + 70)
    rc, out, _ = cli(capsys, tmp_path, "verify", "--repair")
    assert rc == 1 and "(own)" in out and "entries 6..12 were lost" in out
    rc, out, err = cli(capsys, tmp_path, "publish", "fork?")
    assert rc == 2 and "reuse seq 6" in err


def test_verify_repair_while_a_writer_holds_the_directory(tmp_path, capsys):
    other_feed(tmp_path)
    with DiskStore(tmp_path):
        assert cli(capsys, tmp_path, "verify")[0] == 0  # reading works beside it
        rc, _, err = cli(capsys, tmp_path, "verify", "--repair")
    assert rc == 2 and "without --repair" in err
