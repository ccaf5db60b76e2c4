"""The gateway over a LoRa dongle on a pseudo-terminal (the real firmware loop, no radio).

A peer Node in the test stands for the rest of the mesh: its frames reach the dongle's
radio, the dongle's transmissions reach it. Replication has to survive an unplug.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from firmware_sim.dongle import SimDongle
from gateway.capture import Direction, read_capture
from gateway.replication import Face, Node
from gateway.replication.policy import DEFAULT
from gateway.runtime.config import GatewayConfig, SerialConfig
from gateway.runtime.links import build_links
from gateway.store.memory import MemoryStore
from gateway.transports.dongle_face import SerialDongle
from gateway.wire.entry import FeedKey
from gateway.wire.lora import profile

from ..replication.mesh import verified_log
from .harness import run, running, until

PROFILE = "EU868.c"  # 500 kHz: short frames


@pytest.fixture
def dongle() -> Iterator[SimDongle]:
    with SimDongle(board="heltec_v3", tx_fast=True) as d:
        yield d


class Air:
    """The peer's side of the radio: its frames go into the dongle, the dongle's out."""

    def __init__(self, dongle: SimDongle, peer: Node) -> None:
        self.dongle = dongle
        self.peer = peer
        self.heard = 0
        self.missed = 0

    def step(self) -> None:
        now = time.monotonic()
        for out in self.peer.frames_to_send(now):
            if not self.dongle.inject_frame(out.frame, rssi=-71, snr=9.25):
                self.missed += 1  # the dongle was unplugged or transmitting
        sent = self.dongle.transmitted
        while self.heard < len(sent):
            self.peer.receive(now, "radio", sent[self.heard])
            self.heard += 1

    async def run(self) -> None:
        while True:
            self.step()
            await asyncio.sleep(0.005)


def peer_with_feed(n: int) -> tuple[Node, FeedKey]:
    peer = Node(MemoryStore(), policy=DEFAULT, rng=random.Random(5), name="peer",
                now=time.monotonic())
    peer.add_face(Face.lora_radio("radio", profile(PROFILE), duty_cycle=0.0),
                  time.monotonic())
    key = FeedKey.from_seed(bytes(range(32)))
    for i in range(n):
        body = (f"entry {i} ".encode() * (30 if i % 4 == 3 else 1))  # some with side chains
        peer.publish(key, body, time.monotonic())
    return peer, key


def test_feeds_cross_the_dongle_both_ways_and_survive_an_unplug(
        tmp_path: Path, dongle: SimDongle) -> None:
    peer, key = peer_with_feed(12)
    capture = tmp_path / "gw.cbor"

    async def scenario() -> None:
        link = SerialDongle(dongle.path, PROFILE, duty_cycle=0.0, board="heltec_v3",
                            backoff=(0.05, 0.2))
        air = Air(dongle, peer)
        async with running(tmp_path / "gw", [link], capture=capture,
                           status_interval=0.5) as gw:
            pump = asyncio.get_running_loop().create_task(air.run())
            store = gw.store
            assert store is not None
            await until(lambda: key.fid in store and store.replica(key.fid).max_seq >= 4)
            dongle.unplug()
            await asyncio.sleep(0.3)
            dongle.replug()
            await until(lambda: link.link.connected)
            own = gw.node.publish(gw.key, b"from the gateway", time.monotonic())
            await until(lambda: store.replica(key.fid).max_seq == 12
                        and store.replica(key.fid).missing_chunks() == 0)
            await until(lambda: gw.key.fid in peer.store
                        and peer.store.replica(gw.key.fid).max_seq == own.seq)
            pump.cancel()
            assert link.link.counters.reconnects >= 1
            assert [p for p, _ in verified_log(store, key.fid)] == [
                p for p, _ in verified_log(peer.store, key.fid)]
            assert verified_log(store, key.fid) == verified_log(peer.store, key.fid)

    run(scenario)
    records = list(read_capture(capture))
    rx = [r for r in records if r.dir is Direction.RX]
    assert rx and all(r.rssi == -71 and r.snr == 9.25 for r in rx)
    assert any(r.dir is Direction.STORE and r.seq == 12 for r in records)
    assert any(r.dir is Direction.TX for r in records)


@pytest.mark.parametrize("power", [None, 7])
def test_the_gateway_configures_the_dongle_with_the_power_it_was_given(
        tmp_path: Path, dongle: SimDongle, power: int | None,
        caplog: pytest.LogCaptureFixture) -> None:
    """Issue 18: the power was always 20 dBm, whatever the region and whatever was set."""
    serial = SerialConfig(dongle.path, PROFILE, "heltec_v3", duty_cycle=0.1, power=power)
    want = 14 if power is None else power  # EU868: 25 mW ERP, 14 dBm by default

    async def scenario() -> None:
        async with running(tmp_path / "gw", build_links(GatewayConfig(serial=serial)),
                           serial=serial, capture=tmp_path / "gw.cbor") as gw:
            await until(lambda: gw.status()["faces"] != [])
            assert dongle.dongle.settings.tx_power == want
            link = gw.status()["links"][0]
            assert link["tx_power_dbm"] == want
            air = gw.status()["faces"][0]["airtime"]  # the peers view's duty window
            assert air["limit_s"] == 360.0 and air["window_s"] == 3600.0
            assert air["used_s"] + air["left_s"] == pytest.approx(360.0)

    with caplog.at_level(logging.WARNING, logger="gateway.transports.serial_dongle"):
        run(scenario)
    # issue 18: the capture header names the radio profile and the power (the report
    # read "unknown" before)
    header = next(iter(read_capture(tmp_path / "gw.cbor"))).meta
    assert header is not None
    assert (header["profile"], header["tx_power_dbm"], header["sf"]) == (PROFILE, want, 7)
    assert header["links"] == ["serial"] and header["policy"] == "default"
    replaced = [r.getMessage() for r in caplog.records if "replaces" in r.getMessage()]
    if power is None:  # the firmware boots with 14 dBm: nothing changes, nothing said
        assert replaced == []
    else:
        assert replaced == [(f"dongle on {dongle.path}: transmit power 7 dBm replaces the "
                             "14 dBm it had (set `power` in [serial] or --power to choose)")]
