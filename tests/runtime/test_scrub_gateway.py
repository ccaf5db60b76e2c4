"""The gateway's background scrub (issue 14): bit rot in another feed's checkpointed part
is found while the gateway runs, logged in one line, the feed cut to its last good entry
and fetched from a peer again; a clean store yields no finding."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from gateway.store import DiskStore
from gateway.store.scrub import check_feed
from gateway.transports.udp import UdpMulticast
from gateway.wire.entry import PACKET_LEN
from gateway.wire.ident import format_id

from ..store.test_verify import OTHER, N, flip, other_feed
from .harness import free_port, run, running, until
from .test_status_view import render


def test_scrub_cuts_a_damaged_feed_and_a_peer_fills_it_again(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    other_feed(a_dir)
    other_feed(b_dir)
    flip(a_dir / "feeds" / OTHER.fid.hex() / "log", 5 * PACKET_LEN + 40)  # entry 6
    port = free_port()

    def udp() -> UdpMulticast:
        return UdpMulticast("239.5.5.8", port, interface="127.0.0.1", loopback=True)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with running(a_dir, [udp()], name="a", scrub_interval=0.02, scrub_batch=4,
                           policy_table={"preset": "ip"}) as a, \
                running(b_dir, [udp()], name="b", scrub_interval=0.02, scrub_batch=4) as b:
            assert a.store.replica(OTHER.fid).max_seq == N  # opening trusts the checkpoint
            await until(lambda: a.scrub.stats.feeds_cut == 1)
            await until(lambda: a.store.replica(OTHER.fid).max_seq == N
                        and a.store.replica(OTHER.fid).missing_chunks() == 0)
            await until(lambda: b.scrub.stats.passes >= 2 and a.scrub.stats.passes >= 3)
            return a.status(), b.status()

    st_a, st_b = run(scenario)
    feed = format_id(OTHER.fid)
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1, warned
    assert warned[0].startswith(f"scrub: feed {feed}: entry 6 of 12 is damaged")
    assert "cut to 5 entries" in warned[0] and "quarantine" in warned[0]
    scrub = st_a["scrub"]
    assert scrub["damage_found"] == 1 and scrub["feeds_cut"] == 1
    assert scrub["last_finding"]["entry"] == 6 and scrub["last_finding"]["cut_to"] == 5
    assert scrub["records_checked"] > 0 and scrub["interval_s"] == 0.02
    quarantine = list((a_dir / "feeds" / OTHER.fid.hex() / "quarantine").iterdir())
    assert [p.stat().st_size for p in quarantine] == [(N - 5) * PACKET_LEN]
    with DiskStore(a_dir, readonly=True) as store:  # entries 6..12 came again from b
        assert not check_feed(store, OTHER.fid).damaged
    assert st_b["scrub"]["damage_found"] == 0 and st_b["scrub"]["last_finding"] is None
    text = " ".join(render(st_a).split())  # the console may wrap the finding anywhere
    assert "scrub: " in text and "cut to 5 entries" in text
    assert "no damage found" in render(st_b)


def test_own_feed_damage_is_an_error_naming_verify_and_is_never_cut(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)

    async def publish() -> None:
        async with running(tmp_path, [], name="a", scrub_interval=0) as gw:
            assert gw.scrub is None and gw.status()["scrub"] is None
            for i in range(5):
                gw.node.publish(gw.key, b"mine %d" % i, gw.now())
            own = gw.key.fid
            (tmp_path / "own").write_text(own.hex())

    run(publish)
    own = bytes.fromhex((tmp_path / "own").read_text())
    flip(tmp_path / "feeds" / own.hex() / "log", 1 * PACKET_LEN + 50)  # entry 2

    async def scrubbed() -> dict[str, Any]:
        async with running(tmp_path, [], name="a", scrub_interval=0.01, scrub_batch=2) as gw:
            await until(lambda: gw.scrub.stats.passes >= 3)
            assert gw.store.replica(own).max_seq == 5
            return gw.status()

    st = run(scrubbed)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].startswith(f"scrub: our own feed {format_id(own)}")
    assert "entry 2 of 5 is damaged" in errors[0] and "tinyssb verify" in errors[0]
    assert st["scrub"]["last_finding"]["cut_to"] is None
    assert "not cut" in " ".join(render(st).split())
    assert not (tmp_path / "feeds" / own.hex() / "quarantine").exists()
