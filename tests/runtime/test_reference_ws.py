"""Over WebSocket, a gateway with the reference dialect (what simplepub `spub.py` speaks:
fixed GOSET rounds, credit 3, one raw packet per binary message) and one with ours
replicate in both directions, and a text frame does not hurt either."""

from __future__ import annotations

import asyncio
from pathlib import Path

from websockets.asyncio.client import connect

from gateway.replication.policy import IP, REFERENCE
from gateway.transports.websocket import WebSocketClient, WebSocketServer

from ..replication.mesh import verified_log
from .harness import build_feeds, populate, run, running, until

# the reference's timers, only shorter, so the test takes seconds rather than minutes
FAST_REFERENCE = REFERENCE.with_(goset_interval_min=1.0, goset_interval_max=1.0)


def test_reference_and_ours_pull_from_each_other(tmp_path: Path) -> None:
    ref_feeds, our_feeds = build_feeds(2, 12, tag=1), build_feeds(2, 12, tag=2)
    populate(tmp_path / "ref", ref_feeds)
    populate(tmp_path / "ours", our_feeds)

    async def scenario() -> None:
        server = WebSocketServer(0, "127.0.0.1")
        async with running(tmp_path / "ref", [server], policy=FAST_REFERENCE,
                           status_interval=0) as ref:
            # a stray text frame first: dropped and counted, the server lives on
            async with connect(f"ws://127.0.0.1:{server.port}") as ws:
                await ws.send("hello")
                await until(lambda: server.counters.dropped_in == 1)
            client = WebSocketClient(f"ws://127.0.0.1:{server.port}", proxy=None)
            async with running(tmp_path / "ours", [client], policy=IP,
                               status_interval=0) as ours:
                assert ref.store is not None and ours.store is not None

                def complete() -> bool:
                    return all(
                        fid in store and store.replica(fid).max_seq == 12
                        and store.replica(fid).missing_chunks() == 0
                        for store in (ref.store, ours.store)  # type: ignore[union-attr]
                        for fid in (f[0].fid for f in ref_feeds + our_feeds))

                await until(complete, limit=60)
                for feed in ref_feeds + our_feeds:
                    fid = feed[0].fid
                    assert verified_log(ref.store, fid) == verified_log(ours.store, fid)
                    assert [p for p, _ in verified_log(ours.store, fid)] == [
                        e.packet for e in feed]
                await asyncio.sleep(0)

    run(scenario)
