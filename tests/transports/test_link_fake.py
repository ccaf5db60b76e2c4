"""DongleLink over a pseudo-terminal against the scripted fake dongle.

The same behaviours are exercised against the real firmware loop in test_link_sim.py;
here the fake scripts what the firmware makes hard to reach: silence, wrong read-backs,
a protocol version from the future, the order of port setup.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import serial

from gateway.transports import serial_dongle
from gateway.transports.dongle_proto import Cmd, DutyLimit, RadioConfig
from gateway.transports.serial_dongle import (
    DongleLink,
    DongleMismatch,
    DongleNotFound,
    DongleRefused,
    DongleTimeout,
    LinkClosed,
    SerialLines,
    serial_lines,
)
from gateway.wire.crc import add_crc
from gateway.wire.lora import profile

from .fake_dongle import FakeDongle

T = TypeVar("T")
EU = RadioConfig.from_params(profile("EU868.b"))
WAIT = 10.0  # generous bound for real I/O; the tests finish in milliseconds


def run(coro: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(30):
            return await coro()
    return asyncio.run(bounded())


@pytest.fixture
def fake(tmp_path: Path) -> Any:
    with FakeDongle(tmp_path / "ttyDONGLE") as dongle:
        yield dongle


def link_for(dongle: FakeDongle, **kw: Any) -> DongleLink:
    kw.setdefault("radio", EU)
    kw.setdefault("backoff", (0.02, 0.1))
    return DongleLink(str(dongle.path), **kw)


def test_handshake_configures_and_verifies(fake: FakeDongle) -> None:
    async def go() -> None:
        async with link_for(fake, duty=DutyLimit(0, 60_000)) as link:
            assert link.connected
            assert link.identity is not None and link.identity.board == "fake"
            assert link.identity.firmware == "fake-1"
            assert link.radio == EU
            assert await link.read_radio() == EU
            assert await link.duty_limit() == DutyLimit(0, 60_000)
            assert await link.radio_state() is True
            assert link.credit == 4
    run(go)
    assert fake.settings[Cmd.BANDWIDTH] == 250_000 and fake.radio_on


def test_info_mode_leaves_settings_alone(fake: FakeDongle) -> None:
    async def go() -> None:
        async with link_for(fake, radio=None) as link:
            info = await link.info()
            assert info.radio.bandwidth_hz == 125_000 and info.radio.tx_power_dbm == 14
            assert info.radio_on is False and info.free == 4
            assert info.stats.uptime_ms == 42 and info.airtime.available_ms == 36_000
    run(go)
    setting_cmds = {body[0] for body in fake.host_frames if len(body) > 1}
    assert setting_cmds == {Cmd.DETECT}  # only queries, DETECT carries its magic byte


def test_readback_mismatch_is_an_error(tmp_path: Path) -> None:
    with (FakeDongle(tmp_path / "tty", misread={Cmd.TX_POWER: 17}) as dongle,
          pytest.raises(DongleMismatch, match="TX_POWER 17 after being asked for 14")):
        run(lambda: link_for(dongle).open())


def test_silent_port_times_out(tmp_path: Path) -> None:
    with (FakeDongle(tmp_path / "tty", silent=True) as dongle,
          pytest.raises(DongleTimeout, match="no dongle answers on .*DETECT")):
        run(lambda: link_for(dongle, detect_timeout=0.3).open())


def test_missing_port(tmp_path: Path) -> None:
    link = DongleLink(str(tmp_path / "nothing"))
    with pytest.raises(DongleNotFound, match="cannot open dongle port .*nothing: No such file"):
        run(link.open)


def test_port_lines_deasserted_before_open(monkeypatch: pytest.MonkeyPatch,
                                           fake: FakeDongle) -> None:
    seen: list[tuple[bool, bool, bool]] = []

    class Recording(serial.Serial):  # type: ignore[misc]
        def open(self) -> None:
            seen.append((self.dtr, self.rts, self.is_open))
            super().open()

    monkeypatch.setattr(serial_dongle.serial, "Serial", Recording)

    async def go() -> None:
        async with link_for(fake, radio=None) as link:
            assert link.connected
    run(go)
    assert seen == [(False, False, False)]


def test_board_file_sets_lines(tmp_path: Path) -> None:
    (tmp_path / "odd.json").write_text(json.dumps({"serial_lines": {"dtr": True}}))
    (tmp_path / "plain.json").write_text(json.dumps({"board": "plain"}))
    assert serial_lines("odd", tmp_path) == SerialLines(dtr=True, rts=False)
    assert serial_lines("plain", tmp_path) == SerialLines()
    assert serial_lines(None, tmp_path) == SerialLines()
    assert serial_lines("absent", tmp_path / "no-such-dir") == SerialLines()
    with pytest.raises(serial_dongle.DongleLinkError, match="unknown board 'absent'.*odd"):
        serial_lines("absent", tmp_path)
    for board in ("heltec_v3", "tbeam_sx1276"):  # the shipped board files, when present
        if (serial_dongle.BOARDS_DIR / f"{board}.json").exists():
            assert serial_lines(board) == SerialLines(dtr=False, rts=False)


def test_frames_both_ways(fake: FakeDongle) -> None:
    async def go() -> None:
        async with link_for(fake) as link:
            await link.send(b"hello")
            fake.inject(b"world", rssi=-97, snr=-3.25)
            async with asyncio.timeout(WAIT):
                rx = await link.receive()
            assert (rx.packet, rx.rssi, rx.snr, rx.dongle_ms) == (b"world", -97, -3.25, 1234)
            assert rx.host_time > 0
            assert link.counters.frames_in == 1 and link.counters.frames_out == 1
            async with asyncio.timeout(WAIT):
                while not fake.transmitted:
                    await asyncio.sleep(0.01)
    run(go)
    assert fake.transmitted == [add_crc(b"hello")]


def test_burst_never_overruns_a_slow_queue(tmp_path: Path) -> None:
    with FakeDongle(tmp_path / "tty", tx_seconds=0.002) as dongle:
        packets = [bytes([i]) * (1 + i % 120) for i in range(60)]

        async def go() -> None:
            async with link_for(dongle) as link:
                for p in packets:
                    await link.send(p)
                async with asyncio.timeout(WAIT):
                    while len(dongle.transmitted) < len(packets):
                        await asyncio.sleep(0.01)
                assert link.counters.tx_refused == 0
        run(go)
        assert dongle.transmitted == [add_crc(p) for p in packets]
        assert dongle.refused == 0


def test_send_waits_for_credit_while_radio_off(fake: FakeDongle) -> None:
    async def go() -> None:
        async with link_for(fake, radio_on=False) as link:
            for i in range(4):
                await link.send(bytes([i + 1]))
            fifth = asyncio.create_task(link.send(b"\x05"))
            done, _ = await asyncio.wait({fifth}, timeout=0.2)
            assert not done and link.credit == 0  # waits: the queue is full
            await link.set_radio_state(True)
            async with asyncio.timeout(WAIT):
                await fifth
                while len(fake.transmitted) < 5:
                    await asyncio.sleep(0.01)
    run(go)
    assert fake.refused == 0
    assert fake.transmitted == [add_crc(bytes([i])) for i in range(1, 6)]


def test_unplug_reconnects_and_reconfigures(fake: FakeDongle) -> None:
    async def go() -> None:
        async with link_for(fake) as link:
            await link.send(b"before")
            async with asyncio.timeout(WAIT):
                while link.credit < 4:  # its TX_DONE is in
                    await asyncio.sleep(0.01)
            fake.unplug()
            async with asyncio.timeout(WAIT):
                while link.connected:
                    await asyncio.sleep(0.01)
            pending = asyncio.create_task(link.send(b"during"))
            with pytest.raises(serial_dongle.DongleDisconnected):
                await link.stats()
            fake.replug()
            await link.wait_connected(WAIT)
            await asyncio.wait_for(pending, WAIT)
            await link.send(b"after")
            fake.inject(b"back")
            async with asyncio.timeout(WAIT):
                assert (await link.receive()).packet == b"back"
                while add_crc(b"after") not in fake.transmitted:
                    await asyncio.sleep(0.01)
            assert link.counters.reconnects == 1
            assert link.counters.tx_lost == 0
    run(go)
    assert fake.boots == 2
    assert fake.settings[Cmd.BANDWIDTH] == 250_000 and fake.radio_on  # configured again
    assert fake.transmitted == [add_crc(b"before"), add_crc(b"during"), add_crc(b"after")]


def test_without_reconnect_a_lost_port_is_final(fake: FakeDongle) -> None:
    async def go() -> None:
        async with link_for(fake, reconnect=False) as link:
            fake.unplug()
            async with asyncio.timeout(WAIT):
                while link.connected:
                    await asyncio.sleep(0.01)
            with pytest.raises(serial_dongle.DongleDisconnected):
                await link.send(b"x")
            with pytest.raises(serial_dongle.DongleDisconnected):
                await link.wait_connected(WAIT)
    run(go)


def test_frames_lost_on_the_usb_link_do_not_stall_sending(tmp_path: Path) -> None:
    """Four DATA_LORA frames vanish before the dongle counts them: the credit would stay
    at 0 for ever; after credit_poll the link asks READY and resynchronises."""
    with FakeDongle(tmp_path / "tty", swallow_data=4) as dongle:
        async def go() -> None:
            async with link_for(dongle, credit_poll=0.1) as link:
                for i in range(5):
                    await link.send(bytes([i + 1]))
                async with asyncio.timeout(WAIT):
                    while not dongle.transmitted:
                        await asyncio.sleep(0.01)
                assert link.counters.tx_lost == 4
        run(go)
        assert dongle.transmitted == [add_crc(b"\x05")]


def test_a_dongle_that_stops_answering_is_reconnected(fake: FakeDongle) -> None:
    """Crashed firmware keeps the port open but answers nothing: a sender waiting for
    credit notices after two READY polls and the link reconnects."""
    async def go() -> None:
        async with link_for(fake, radio_on=False, credit_poll=0.05,
                            detect_timeout=0.1) as link:
            for i in range(4):
                await link.send(bytes([i + 1]))  # they stay queued: the radio is off
            fake.silent = True
            waiting = asyncio.create_task(link.send(b"fifth"))
            async with asyncio.timeout(WAIT):
                while link.counters.reconnect_failures < 1:
                    await asyncio.sleep(0.01)
            assert not link.connected and not waiting.done()
            fake.silent = False
            await link.wait_connected(WAIT)
            assert link.counters.reconnects == 1 and link.counters.tx_lost == 4
            waiting.cancel()
    run(go)


def test_unplug_counts_the_queued_packets_as_lost(fake: FakeDongle) -> None:
    async def go() -> None:
        async with link_for(fake, radio_on=False) as link:  # packets stay queued
            await link.send(b"one")
            await link.send(b"two")
            await link.ready()  # both have reached the dongle
            fake.unplug()
            async with asyncio.timeout(WAIT):
                while link.connected:
                    await asyncio.sleep(0.01)
            fake.replug()
            await link.wait_connected(WAIT)
            assert link.counters.tx_lost == 2 and link.credit == 4
            assert link.counters.reconnects == 1
    run(go)
    assert fake.transmitted == []


def test_refused_setting_names_the_value(fake: FakeDongle) -> None:
    async def go() -> None:
        async with link_for(fake, radio=None) as link:
            with pytest.raises(DongleRefused, match="UNKNOWN_COMMAND"):
                await link._request(Cmd.RX_META, b"\xc0\x02\xc0", "RX_META")
    run(go)


def test_close_ends_iteration_and_sending(fake: FakeDongle) -> None:
    async def go() -> None:
        link = link_for(fake)
        await link.open()
        got: list[bytes] = []

        async def consume() -> None:
            async for rx in link:
                got.append(rx.packet)

        task = asyncio.create_task(consume())
        fake.inject(b"one")
        async with asyncio.timeout(WAIT):
            while not got:
                await asyncio.sleep(0.01)
        await link.close()
        await asyncio.wait_for(task, WAIT)
        assert got == [b"one"]
        with pytest.raises(LinkClosed):
            await link.send(b"x")
    run(go)
