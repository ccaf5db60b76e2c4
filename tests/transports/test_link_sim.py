"""DongleLink against the real firmware command loop: firmware_sim.dongle.SimDongle on a pty."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from firmware_sim.dongle import SimDongle
from gateway.transports.dongle_proto import Cmd, DutyLimit, ErrorCode, RadioConfig
from gateway.transports.serial_dongle import DongleDisconnected, DongleLink, DongleRefused
from gateway.wire.crc import add_crc
from gateway.wire.lora import profile

T = TypeVar("T")
EU = RadioConfig.from_params(profile("EU868.b"))
WAIT = 10.0  # bound on real I/O; everything here takes milliseconds


def run(coro: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(60):
            return await coro()
    return asyncio.run(bounded())


async def until(check: Callable[[], bool]) -> None:
    """Wait (bounded) until ``check()`` holds, polling the state the threads change."""
    async with asyncio.timeout(WAIT):
        while not check():
            await asyncio.sleep(0.005)


@pytest.fixture
def sim() -> Iterator[SimDongle]:
    with SimDongle(board="heltec_v3", tx_fast=True) as dongle:
        yield dongle


def link_for(dongle: SimDongle, **kw: Any) -> DongleLink:
    kw.setdefault("radio", EU)
    kw.setdefault("backoff", (0.02, 0.1))
    kw.setdefault("board", dongle.board)
    return DongleLink(dongle.path, **kw)


@pytest.mark.parametrize("board, chip", [("heltec_v3", "sx1262"), ("tbeam_sx1276", "sx1276")])
def test_configuration_is_read_back(board: str, chip: str) -> None:
    with SimDongle(board=board) as dongle:
        async def go() -> None:
            async with link_for(dongle, duty=DutyLimit(0, 60_000)) as link:
                assert link.identity is not None
                assert (link.identity.board, link.identity.chip) == (board, chip)
                assert link.identity.protocol == 1
                info = await link.info()
                assert info.radio == EU and info.radio_on
                assert info.duty == DutyLimit(0, 60_000)
                assert info.airtime.limit_permille == 0 and info.free == 4
                with pytest.raises(DongleRefused, match="SF 13: BAD_VALUE") as refused:
                    await link.set_value(Cmd.SF, 13)
                assert refused.value.error.code == ErrorCode.BAD_VALUE
                assert await link.read_radio() == EU  # a refused value changes nothing
        run(go)


def test_frames_both_ways_with_metadata(sim: SimDongle) -> None:
    packet = bytes(range(120))

    async def go() -> None:
        async with link_for(sim) as link:
            await link.send(packet)
            await until(lambda: link.credit == 4)  # TX_DONE: the radio listens again
            assert sim.inject(b"from the air", rssi=-97, snr=-3.25)
            async with asyncio.timeout(WAIT):
                rx = await link.receive()
            assert (rx.packet, rx.rssi, rx.snr) == (b"from the air", -97, -3.25)
            assert rx.dongle_ms is not None and rx.dongle_ms >= 0 and rx.host_time > 0
            stats = await link.stats()
            assert (stats.rx_ok, stats.tx_ok, stats.tx_refused) == (1, 1, 0)
            await until(lambda: link.counters.airtime_us > 0)
            c = link.counters
            assert (c.frames_in, c.frames_out, c.errors, c.parser.invalid) == (1, 1, 0, 0)
    run(go)
    assert sim.transmitted == [add_crc(packet)]


@pytest.mark.parametrize("tx_fast", [True, False], ids=["instant-tx", "timed-tx"])
def test_burst_of_100_frames_flow_controlled(tx_fast: bool) -> None:
    # timed-tx: each frame really lasts its airtime on a clock running 100x fast, so the
    # 4-slot queue fills and the link must wait for TX_DONE credit
    packets = [i.to_bytes(2, "big") * 60 for i in range(100)]
    with SimDongle(board="heltec_v3", tx_fast=tx_fast, time_scale=0.01) as dongle:
        async def go() -> None:
            async with link_for(dongle, duty=DutyLimit(0, 3_600_000)) as link:
                for p in packets:
                    await link.send(p)
                    assert 0 <= link.credit <= 4
                await until(lambda: link.counters.errors > 0 or (
                    len(dongle.transmitted) == len(packets) and link.credit == 4))
                assert link.counters.errors == 0 and link.counters.tx_refused == 0
                stats = await link.stats()
                assert stats.tx_refused == 0 and stats.tx_ok == 100
        run(go)
        assert dongle.transmitted == [add_crc(p) for p in packets]


def test_unplug_reconnect_reconfigure_resume(sim: SimDongle) -> None:
    async def go() -> None:
        async with link_for(sim) as link:
            await link.send(b"first")
            await until(lambda: len(sim.transmitted) == 1 and link.credit == 4)
            sim.unplug()
            assert not Path(sim.path).exists()  # the device node is gone, as on a real unplug
            await until(lambda: not link.connected)
            during = asyncio.create_task(link.send(b"sent while unplugged"))
            with pytest.raises(DongleDisconnected):
                await link.stats()
            await until(lambda: link.counters.reconnect_failures >= 2)  # it keeps trying
            assert not during.done()  # the packet waits for the dongle
            sim.replug()  # a freshly booted dongle: radio off, default settings
            await link.wait_connected(WAIT)
            async with asyncio.timeout(WAIT):
                await during
            assert await link.read_radio() == EU and await link.radio_state()
            await link.send(b"after")
            await until(lambda: len(sim.transmitted) == 3 and link.credit == 4)
            assert sim.inject(b"hello again", rssi=-60, snr=9.5)
            async with asyncio.timeout(WAIT):
                rx = await link.receive()
            assert (rx.packet, rx.rssi, rx.snr) == (b"hello again", -60, 9.5)
            assert link.counters.reconnects == 1 and link.counters.tx_lost == 0
    run(go)
    assert sim.transmitted == [add_crc(b"first"), add_crc(b"sent while unplugged"),
                               add_crc(b"after")]
