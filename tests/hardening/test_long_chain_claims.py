"""Side chains claiming about 2^69 bytes (issue 14, case 10), under the default cap.

A validly signed chain20 entry may announce any length its varint can hold. Before, such
entries kept thousands of chunk expectations in memory and a 308 KB frontier rewritten on
every flush. Now an entry whose chain is longer than ``max_chain_chunks`` (default 10,000
chunks, about 1 MB) is stored without its chain and counted; nothing waits for its chunks,
the frontier stays a few hundred bytes, and ``tinyssb status`` shows the count.
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest

from gateway.replication import DEFAULT, Face, Node, preset
from gateway.store import DiskStore, StoreError
from gateway.store.base import DEFAULT_MAX_CHAIN_CHUNKS
from gateway.transports.udp import UdpMulticast
from gateway.wire.entry import (
    CHAIN20_SLOT_LEN,
    TYPE_CHAIN20,
    Entry,
    FeedKey,
    build_feed,
    dmx_of_name,
    entry_name,
    msg_id_of,
    parse_chain20,
)
from gateway.wire.varint import encode_varint

from ..runtime.harness import free_port, populate, run, running, until
from ..runtime.test_status_view import render

KEY = FeedKey.from_seed(bytes(range(9, 41)))
HUGE = 2**69


def claiming(key: FeedKey, seq: int, prev: bytes, length: int) -> Entry:
    """Entry ``seq`` of ``key``'s feed, validly signed, announcing a side chain of
    ``length`` bytes whose first chunk nobody has (the hash points nowhere)."""
    vl = encode_varint(length)
    payload = vl + b"H" * (CHAIN20_SLOT_LEN - len(vl)) + bytes(range(1, 21))
    name = entry_name(key.fid, seq, prev)
    signed = dmx_of_name(name) + bytes([TYPE_CHAIN20]) + payload
    packet = signed + key.sign(name + signed)
    return Entry(key.fid, seq, prev, packet, msg_id_of(name, packet))


def hostile_feed(n_huge: int) -> list[Entry]:
    """An honest first entry, then ``n_huge`` entries claiming 2^69 bytes (give or take),
    then a short honest one."""
    (first,) = build_feed(KEY, [b"hello"])
    feed, prev = [first], first.msg_id
    for i in range(n_huge):
        entry = claiming(KEY, 2 + i, prev, HUGE - i * 977)
        feed.append(entry)
        prev = entry.msg_id
    feed.append(claiming(KEY, 2 + n_huge, prev, 12))  # no chunks: carried in the entry
    return feed


def test_entries_claiming_2_69_bytes_are_stored_without_their_chains(tmp_path: Path) -> None:
    feed = hostile_feed(40)
    assert parse_chain20(feed[1].packet).n_chunks > 5 * 10**18  # about 2^69 / 100
    with DiskStore(tmp_path) as store:
        store.add_feed(KEY.fid)
        node = Node(store, policy=DEFAULT, rng=random.Random(1), name="n")
        assert store.max_chain_chunks == DEFAULT.max_chain_chunks == DEFAULT_MAX_CHAIN_CHUNKS
        node.add_face(Face("radio"), 0.0)
        for i, entry in enumerate(feed):
            node.receive(float(i), "radio", entry.packet)
            node.frames_to_send(float(i))
        assert store.replica(KEY.fid).max_seq == len(feed)  # all stored ...
        assert store.chains_ignored == 40  # ... the long claims counted ...
        assert not store.has_pending_chains() and store.expected_chunks() == {}
        assert store.info(KEY.fid).missing_chunks == 0  # ... and nothing waits for chunks
        with pytest.raises(StoreError, match="max_chain_chunks 10000"):
            store.read_content(KEY.fid, 2)
        assert store.read_content(KEY.fid, len(feed)) == b"H" * 12
    frontier = tmp_path / "feeds" / KEY.fid.hex() / "frontier"
    size = frontier.stat().st_size
    assert size < 400, size  # (before: 308 KB)
    assert json.loads(frontier.read_text())["pending"] == {}
    with DiskStore(tmp_path) as store:  # reopened: still nothing expected
        assert store.replica(KEY.fid).max_seq == len(feed) and not store.has_pending_chains()
    print(f"frontier after {len(feed)} entries, 40 claiming ~2^69 B: {size} B")


def test_status_counts_the_ignored_chains(tmp_path: Path) -> None:
    """A gateway that fetches the hostile feed from a neighbour over UDP shows the count."""
    feed = hostile_feed(3)
    populate(tmp_path / "b", [feed])  # (b ignored the chains itself when it took them)
    port = free_port()

    def udp() -> UdpMulticast:
        return UdpMulticast("239.5.5.9", port, interface="127.0.0.1", loopback=True)

    async def scenario() -> dict[str, object]:
        async with running(tmp_path / "a", [udp()], name="a", policy=preset("ip")) as a, \
                running(tmp_path / "b", [udp()], name="b", policy=preset("ip")):
            assert a.store is not None
            await until(lambda: KEY.fid in a.store
                        and a.store.replica(KEY.fid).max_seq == len(feed))
            await asyncio.sleep(0.1)
            assert not a.store.has_pending_chains()
            return a.status()

    st = run(scenario)
    assert st["node"]["chains_ignored"] == 3  # type: ignore[index]
    assert st["missing_chunks"] == 0
    text = render(st)
    assert "3 side chains ignored (over max_chain_chunks)" in " ".join(text.split()), text


def test_the_view_leaves_the_count_out_while_it_is_zero() -> None:
    st = {"name": "roof", "id": "@x.ed25519", "uptime": 5.0, "policy": "default",
          "feeds": 0, "entries": 0, "goset": {"keys": 0, "state": "00"},
          "node": {"rx": 0, "tx": 0, "entries_stored": 0, "chunks_stored": 0,
                   "chains_ignored": 0, "drops": {}},
          "faces": [], "links": [], "capture": None}
    assert "ignored" not in render(st)
