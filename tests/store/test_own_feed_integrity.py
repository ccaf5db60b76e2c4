"""Our own feed is never forked or signed broken, whatever happened to its files
(issue 14, cases 3, 4, 7 and 8): damaged checkpoints are rebuilt from the log, a log
shorter than what was checkpointed makes ``publish`` refuse, a lost key file is an error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gateway.cli import main
from gateway.store import DiskStore
from gateway.store import StoreError as LostTailError
from gateway.store.keys import KEY_FILE, KeyFileError, load_or_create_key
from gateway.wire.entry import PACKET_LEN, genesis_prev, verify_entry

N = 12


def own_feed(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, bytes]:
    """A data directory whose own feed holds entries 1..N (published through the CLI)."""
    for i in range(N):
        assert main(["--data", str(root), "publish", f"post {i}"]) == 0
    capsys.readouterr()
    key, _ = load_or_create_key(root)
    return root / "feeds" / key.fid.hex(), key.fid


def publish(root: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[int, str, str]:
    rc = main(["--data", str(root), "publish", text])
    out, err = capsys.readouterr()
    return rc, out, err


def verify_log(feed: Path, fid: bytes) -> int:
    """Verify the log file from its start; the number of entries that verify."""
    data, prev = (feed / "log").read_bytes(), genesis_prev(fid)
    for seq in range(1, len(data) // PACKET_LEN + 1):
        prev = verify_entry(fid, seq, prev, data[(seq - 1) * PACKET_LEN : seq * PACKET_LEN]).msg_id
    return len(data) // PACKET_LEN


def test_case3_flipped_prev_in_the_checkpoint_is_not_signed_over(tmp_path, capsys):
    feed, fid = own_feed(tmp_path, capsys)
    body = json.loads((feed / "frontier").read_text())
    prev = bytearray.fromhex(body["prev"])
    prev[0] ^= 1
    body["prev"] = prev.hex()
    (feed / "frontier").write_text(json.dumps(body))
    rc, out, _ = publish(tmp_path, capsys, "after the damage")
    assert (rc, out.strip()) == (0, str(N + 1))
    assert verify_log(feed, fid) == N + 1  # entry 13 verifies (was: DMX mismatch)


def test_case3_flipped_before_in_the_checkpoint_is_not_signed_over(tmp_path, capsys):
    feed, fid = own_feed(tmp_path, capsys)
    body = json.loads((feed / "frontier").read_text())
    body["before"] = "11" * 20
    (feed / "frontier").write_text(json.dumps(body))
    assert publish(tmp_path, capsys, "x")[:2] == (0, f"{N + 1}\n")
    assert verify_log(feed, fid) == N + 1


@pytest.mark.parametrize("damage", ["emptied", "torn by 50 bytes", "last record flipped"])
def test_case4_short_or_damaged_own_log_refuses_to_reuse_a_seq(tmp_path, capsys, damage):
    feed, fid = own_feed(tmp_path, capsys)
    log_path = feed / "log"
    data = bytearray(log_path.read_bytes())
    if damage == "emptied":
        log_path.write_bytes(b"")
    elif damage == "torn by 50 bytes":
        log_path.write_bytes(data[:-50])
    else:
        data[-30] ^= 0x40
        log_path.write_bytes(data)
    rc, out, err = publish(tmp_path, capsys, "would fork")
    assert rc == 2 and out == ""
    errors = [line for line in err.splitlines() if "error:" in line]  # (+ recovery log lines)
    assert len(errors) == 1
    assert "tinyssb verify" in errors[0] and "reuse seq" in err and f"entry {N} " in err
    # refused again on the next attempt (the lost tail is remembered in the checkpoint)
    assert publish(tmp_path, capsys, "would fork")[0] == 2
    assert verify_log(feed, fid) < N  # nothing was signed over the lost entries


def test_case4_publishing_resumes_once_the_lost_entries_came_back(tmp_path, capsys):
    feed, fid = own_feed(tmp_path, capsys)
    backup = (feed / "log").read_bytes()
    (feed / "log").write_bytes(backup[: 5 * PACKET_LEN])
    key, _ = load_or_create_key(tmp_path)
    with DiskStore(tmp_path) as store:
        with pytest.raises(LostTailError):
            store.publish(key, b"no")
        for seq in range(6, N + 1):  # a peer returns them, as the gateway would ingest them
            store.ingest_entry(fid, backup[(seq - 1) * PACKET_LEN : seq * PACKET_LEN])
        assert store.publish(key, b"yes").seq == N + 1
    assert verify_log(feed, fid) == N + 1


@pytest.mark.parametrize("body", [
    {"max_seq": -3, "log_bytes": -360},
    {"max_seq": 2 ** 70, "log_bytes": 2 ** 70 * 120},
    {"chunk_bytes": -1},
])
def test_case7_frontier_with_bad_numbers_is_rebuilt_for_every_command(tmp_path, capsys, body):
    feed, _fid = own_feed(tmp_path, capsys)
    good = json.loads((feed / "frontier").read_text())
    good.update(body)
    (feed / "frontier").write_text(json.dumps(good))
    assert main(["--data", str(tmp_path), "feeds", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [f["length"] for f in listed] == [N]


def test_case7_frontier_directory_is_rebuilt_for_every_command(tmp_path, capsys):
    feed, _fid = own_feed(tmp_path, capsys)
    (feed / "frontier").unlink()
    (feed / "frontier").mkdir()
    assert main(["--data", str(tmp_path), "feeds"]) == 0  # a reader: rebuilds in memory
    capsys.readouterr()
    assert publish(tmp_path, capsys, "x")[:2] == (0, f"{N + 1}\n")
    assert (feed / "frontier").is_file()


@pytest.mark.parametrize("how", ["missing", "dangling link"])
def test_case8_lost_key_file_beside_own_feed_is_an_error(tmp_path, capsys, how):
    _feed, fid = own_feed(tmp_path, capsys)
    secret = tmp_path / KEY_FILE
    secret.unlink()
    if how == "dangling link":
        os.symlink(tmp_path / "elsewhere" / KEY_FILE, secret)
    rc, out, err = publish(tmp_path, capsys, "new identity?")
    assert rc == 2 and out == "" and len([x for x in err.splitlines() if "error:" in x]) == 1
    assert KEY_FILE in err and ("restore" in err)
    assert sorted(p.name for p in (tmp_path / "feeds").iterdir()) == [fid.hex()]
    with pytest.raises(KeyFileError):
        load_or_create_key(tmp_path)
    assert main(["--data", str(tmp_path), "id"]) == 2
    assert not secret.exists()


def test_case10_side_chains_longer_than_the_cap_are_counted_and_ignored(tmp_path):
    from gateway.replication.node import Node
    from gateway.replication.policy import DEFAULT
    from gateway.store import StoreError
    from gateway.wire.entry import FeedKey, build_feed

    key = FeedKey.from_seed(bytes(range(7, 39)))
    entries = build_feed(key, [b"short", b"L" * 5000, b"ok"])  # entry 2: 51 chunks
    with DiskStore(tmp_path) as store:
        Node(store, policy=DEFAULT.with_(max_chain_chunks=20))
        store.add_feed(key.fid)
        for e in entries:
            assert store.ingest_entry(key.fid, e.packet).n_chunks == 0
        assert store.chains_ignored == 1 and not store.has_pending_chains()
        assert store.info(key.fid).missing_chunks == 0
        with pytest.raises(StoreError, match="max_chain_chunks 20"):
            store.read_content(key.fid, 2)
    frontier = json.loads((tmp_path / "feeds" / key.fid.hex() / "frontier").read_text())
    assert frontier["pending"] == {} and frontier["max_seq"] == 3
