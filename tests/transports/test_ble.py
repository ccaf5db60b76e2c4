"""BleCentral against the pretend Bluetooth world of fake_bleak (no radio needed)."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from bleak.exc import (
    BleakBluetoothNotAvailableError,
    BleakBluetoothNotAvailableReason,
    BleakDBusError,
    BleakError,
)

from gateway.replication.faces import Face, FaceKind
from gateway.transports.base import Backoff, LinkError, RadioMeta, SendFn
from gateway.transports.ble import (
    MAX_WRITE,
    RX_UUID,
    SERVICE_UUID,
    BleCentral,
    adapter_trouble,
)

from .fake_bleak import FakeAir, FakePeripheral, FakeServices, esp32_services, phone_services

T = TypeVar("T")
ESP = "AA:BB:CC:DD:EE:01"
ESP2 = "AA:BB:CC:DD:EE:02"
PHONE = "AA:BB:CC:DD:EE:03"
PACING = 0.02


def run(coro: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(10):
            return await coro()
    return asyncio.run(bounded())


@dataclass
class Host:
    """The runtime as the link sees it: records every call."""

    events: list[tuple[Any, ...]] = field(default_factory=list)
    faces: dict[str, Face] = field(default_factory=dict)
    senders: dict[str, SendFn] = field(default_factory=dict)

    def face_up(self, face: Face, send: SendFn) -> None:
        self.events.append(("up", face.name))
        self.faces[face.name] = face
        self.senders[face.name] = send

    def face_down(self, name: str, reason: str) -> None:
        self.events.append(("down", name, reason))
        self.senders.pop(name, None)

    def frame_in(self, face: str, frame: bytes, meta: RadioMeta | None = None) -> None:
        self.events.append(("in", face, frame))

    def count(self, kind: str, name: str) -> int:
        return sum(1 for e in self.events if e[0] == kind and e[1] == name)

    async def until(self, cond: Callable[[], bool], what: str) -> None:
        async with asyncio.timeout(2):
            while not cond():
                await asyncio.sleep(0.002)
        assert cond(), what


def tiny_backoff() -> Backoff:
    return Backoff(initial=0.01, maximum=0.02, jitter=0.0, rng=random.Random(1))


def central(air: FakeAir, address: str | None = None, **kw: Any) -> BleCentral:
    kw.setdefault("pacing", PACING)
    kw.setdefault("backoff", tiny_backoff())
    kw.setdefault("scan_timeout", 0.05)
    kw.setdefault("rescan_interval", 0.02)
    return BleCentral(address, scanner=air, client_factory=air.client, **kw)


def face_name(address: str) -> str:
    return f"ble:{address}"


Body = Callable[[BleCentral, Host, FakePeripheral], Awaitable[None]]


def with_esp(body: Body, peripheral: FakePeripheral | None = None) -> Host:
    """Run ``body`` with a link started on one ESP32-like peer; close the link after."""
    esp = peripheral if peripheral is not None else FakePeripheral(ESP)
    host = Host()

    async def go() -> None:
        link = central(FakeAir(esp), esp.address)
        await link.start(host)
        try:
            await body(link, host, esp)
        finally:
            await link.close()
    run(go)
    return host


# --- connecting ------------------------------------------------------------------------

def test_explicit_address_connects_and_receives() -> None:
    air = FakeAir(FakePeripheral(ESP))
    host = Host()

    async def go() -> None:
        link = central(air, ESP.lower())
        await link.start(host)
        name = face_name(ESP)
        assert host.events == [("up", name)]
        face = host.faces[name]
        assert face.kind is FaceKind.POINT_TO_POINT and not face.crc and face.mtu == 120
        packet = bytes(range(120))
        air.peripherals[ESP].notify(packet)
        air.peripherals[ESP].notify(b"\x01\x02")
        assert host.events[1:] == [("in", name, packet), ("in", name, b"\x01\x02")]
        info = link.describe()
        assert info["state"] == "up" and info["peers"] == [name]
        assert info["address"] == ESP
        assert info["counters"]["frames_in"] == 2 and info["counters"]["bytes_in"] == 122
        assert info["counters"]["connects"] == 1
        await link.close()
        assert host.events[-1] == ("down", name, "link closed")
        assert link.describe()["state"] == "closed" and link.describe()["peers"] == []
        assert air.clients[-1].disconnects == 1 and not air.clients[-1].is_connected
    run(go)


def test_send_writes_rx_with_response_paced() -> None:
    async def body(link: BleCentral, host: Host, esp: FakePeripheral) -> None:
        send = host.senders[face_name(ESP)]
        frames = [bytes([i]) * 120 for i in range(4)]
        assert all(send(f) for f in frames)
        await host.until(lambda: len(esp.writes) == 4, "four writes")
        assert [w.data for w in esp.writes] == frames
        assert {(w.uuid, w.response) for w in esp.writes} == {(RX_UUID, True)}
        gaps = [b.at - a.at for a, b in zip(esp.writes, esp.writes[1:])]
        assert min(gaps) >= PACING * 0.9, gaps
        await host.until(lambda: link.counters.frames_out == 4, "counted")
        assert link.counters.bytes_out == 480
    with_esp(body)


def test_oversize_and_empty_frames_dropped_and_counted() -> None:
    async def body(link: BleCentral, host: Host, esp: FakePeripheral) -> None:
        send = host.senders[face_name(ESP)]
        assert send(b"x" * (MAX_WRITE + 1)) is False
        assert send(b"") is False
        assert send(b"y" * MAX_WRITE) is True
        await host.until(lambda: len(esp.writes) == 1, "the good one")
        assert esp.writes[0].data == b"y" * MAX_WRITE
        assert link.counters.dropped_out == 2
        esp.notify(b"z" * (MAX_WRITE + 1))
        assert link.counters.dropped_in == 1 and host.count("in", face_name(ESP)) == 0
    with_esp(body)


def test_low_mtu_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    async def body(link: BleCentral, host: Host, esp: FakePeripheral) -> None:
        assert host.count("up", face_name(ESP)) == 1  # a warning, not a refusal

    with caplog.at_level(logging.WARNING, logger="gateway.transports.ble"):
        with_esp(body, FakePeripheral(ESP, services=esp32_services(mtu=23), mtu=23))
    assert any("ATT MTU 23 < 123" in r.getMessage() for r in caplog.records)


# --- disconnecting and coming back -----------------------------------------------------

def test_disconnect_face_down_once_then_reconnects() -> None:
    name = face_name(ESP)

    async def body(link: BleCentral, host: Host, esp: FakePeripheral) -> None:
        esp.refuse_connects = 2  # the first two reconnect attempts fail: backoff
        esp.drop()
        assert host.count("down", name) == 1
        assert link.describe()["state"] == "connecting"
        await host.until(lambda: host.count("up", name) == 2, "face back up")
        assert host.count("down", name) == 1 and esp.connects == 2
        assert esp.refuse_connects == 0
        esp.notify(b"after")
        assert host.events[-1] == ("in", name, b"after")
        assert host.senders[name](b"out")
        await host.until(lambda: any(w.data == b"out" for w in esp.writes), "write")
        assert link.counters.connects == 2
        assert link.counters.faults == 3  # the drop and two refused connects

    host = with_esp(body)
    assert host.count("down", name) == 2  # the second at close


def test_write_error_closes_face_once_and_reconnects() -> None:
    name = face_name(ESP)

    async def body(link: BleCentral, host: Host, esp: FakePeripheral) -> None:
        send = host.senders[name]
        esp.fail_writes = True
        assert send(b"a")
        await host.until(lambda: host.count("down", name) == 1, "face down")
        downs = [e for e in host.events if e[0] == "down"]
        assert "write failed" in downs[0][2]
        assert send(b"b") is False  # the old face's sender is dead
        esp.fail_writes = False
        await host.until(lambda: host.count("up", name) == 2, "face back up")
        assert host.count("down", name) == 1
        assert host.senders[name](b"c")
        await host.until(lambda: [w.data for w in esp.writes] == [b"c"], "write on new face")
    with_esp(body)


def test_stale_callback_of_old_connection_is_ignored() -> None:
    name = face_name(ESP)

    async def body(link: BleCentral, host: Host, esp: FakePeripheral) -> None:
        old = esp.client
        assert old is not None
        esp.drop()
        await host.until(lambda: host.count("up", name) == 2, "back up")
        assert old.disconnected_callback is not None
        old.disconnected_callback(old)  # a late echo from the first connection
        assert host.count("down", name) == 1
    with_esp(body)


# --- scanning --------------------------------------------------------------------------

def test_scan_connects_tinyssb_peers_and_skips_phones(caplog: pytest.LogCaptureFixture) -> None:
    other = FakePeripheral("11:22:33:44:55:66", advertised=["0000180f-0000-1000-8000-00805f9b34fb"])
    air = FakeAir(FakePeripheral(ESP), FakePeripheral(PHONE, services=phone_services()), other)
    host = Host()

    async def go() -> None:
        link = central(air)
        with caplog.at_level(logging.INFO, logger="gateway.transports.ble"):
            await link.start(host)
            await host.until(lambda: PHONE in link.describe()["ignored"], "phone seen")
            await asyncio.sleep(0.1)  # rescans must not retry the phone
        assert host.events == [("up", face_name(ESP))]
        info = link.describe()
        assert info["peers"] == [face_name(ESP)] and info["scanning"] is True
        assert "READ" in info["ignored"][PHONE]
        assert air.peripherals[PHONE].connects == 1 and other.connects == 0
        assert air.scans >= 2
        await link.close()
        assert link.describe()["scanning"] is False
    run(go)
    assert any("skipped" in r.getMessage() and "READ" in r.getMessage()
               for r in caplog.records)


def test_allow_phones_connects_a_phone() -> None:
    air = FakeAir(FakePeripheral(PHONE, services=phone_services()))
    host = Host()

    async def go() -> None:
        link = central(air, allow_phones=True)
        await link.start(host)
        await host.until(lambda: host.count("up", face_name(PHONE)) == 1, "phone up")
        await link.close()
    run(go)


def test_scan_finds_late_peers_up_to_max_peers() -> None:
    air = FakeAir()
    host = Host()

    async def go() -> None:
        link = central(air, max_peers=2)
        await link.start(host)  # nobody around yet: still a success
        assert link.describe()["state"] == "scanning" and host.events == []
        air.add(FakePeripheral(ESP))
        air.add(FakePeripheral(ESP2))
        air.add(FakePeripheral(PHONE.replace("03", "04")))
        await host.until(lambda: len(link.describe()["peers"]) == 2, "two peers")
        await asyncio.sleep(0.1)
        assert len(link.describe()["peers"]) == 2
        assert sum(p.connects for p in air.peripherals.values()) == 2
        await link.close()
        assert sorted(e[1] for e in host.events if e[0] == "down") == sorted(
            e[1] for e in host.events if e[0] == "up")
    run(go)


def test_scanned_peer_gone_for_good_is_given_up_and_found_again() -> None:
    air = FakeAir(FakePeripheral(ESP))
    host = Host()
    esp = air.peripherals[ESP]
    name = face_name(ESP)

    async def go() -> None:
        link = central(air, reconnect_attempts=2, rescan_interval=0.05)
        await link.start(host)
        await host.until(lambda: host.count("up", name) == 1, "up")
        esp.in_range = False
        esp.drop()
        await host.until(lambda: link.describe()["peers"] == [] and link._peers == {},
                         "given up")
        esp.in_range = True
        await host.until(lambda: host.count("up", name) == 2, "found again")
        await link.close()
    run(go)


# --- start failures --------------------------------------------------------------------

def test_explicit_address_not_found() -> None:
    air = FakeAir(FakePeripheral(ESP2))

    async def go() -> None:
        with pytest.raises(LinkError) as err:
            await central(air, ESP, scan_timeout=5.0).start(Host())
        assert str(err.value) == f"BLE device {ESP}: not found within 5 s"
    run(go)


def test_explicit_address_refusing_connect() -> None:
    air = FakeAir(FakePeripheral(ESP, refuse_connects=1))

    async def go() -> None:
        with pytest.raises(LinkError, match=f"BLE device {ESP}: cannot connect: TimeoutError"):
            await central(air, ESP).start(Host())
        assert air.clients[0].disconnects == 1
    run(go)


def test_explicit_address_of_a_phone_or_stranger() -> None:
    air = FakeAir(FakePeripheral(PHONE, services=phone_services()),
                  FakePeripheral(ESP, services=FakeServices([], [])))

    async def go() -> None:
        with pytest.raises(LinkError, match="lacks READ.*allow_phones"):
            await central(air, PHONE).start(Host())
        with pytest.raises(LinkError, match="does not offer the tinySSB service"):
            await central(air, ESP).start(Host())
    run(go)


@pytest.mark.parametrize("address", [None, ESP])
@pytest.mark.parametrize("error,expected", [
    (BleakBluetoothNotAvailableError("No Bluetooth adapters found.",
                                     BleakBluetoothNotAvailableReason.NO_BLUETOOTH),
     "no Bluetooth adapter: No Bluetooth adapters found."),
    (FileNotFoundError(2, "No such file or directory"),
     ("no Bluetooth adapter: cannot reach BlueZ over the system D-Bus (No such file or "
      "directory); is bluetoothd running?")),
    (BleakError("adapter 'hci1' not found"), "no Bluetooth adapter: adapter 'hci1' not found"),
])
def test_adapter_errors_become_one_line(address: str | None, error: BaseException,
                                        expected: str) -> None:
    air = FakeAir(FakePeripheral(ESP))
    air.adapter_error = error

    async def go() -> None:
        with pytest.raises(LinkError) as err:
            await central(air, address).start(Host())
        assert str(err.value) == expected
    run(go)


def test_adapter_trouble_classification() -> None:
    assert adapter_trouble(BleakDBusError("org.freedesktop.DBus.Error.ServiceUnknown", [])) \
        == "BlueZ (bluetoothd) is not running"
    assert "powered" in (adapter_trouble(BleakDBusError("org.bluez.Error.NotReady", [])) or "")
    assert adapter_trouble(BleakError("Not connected")) is None
    assert adapter_trouble(ValueError("x")) is None


def test_scan_failure_without_adapter_trouble() -> None:
    air = FakeAir()
    air.adapter_error = BleakError("org.bluez.Error.InProgress")

    async def go() -> None:
        with pytest.raises(LinkError, match="^BLE scan failed: org.bluez.Error.InProgress$"):
            await central(air).start(Host())
    run(go)


def test_parameters_are_checked() -> None:
    with pytest.raises(ValueError):
        BleCentral(max_peers=0)
    link = BleCentral("aa:bb:cc:dd:ee:ff", max_peers=9)
    assert link.max_peers == 1 and link.address == "AA:BB:CC:DD:EE:FF"
    assert link.describe() == {"kind": "ble", "name": "ble", "state": "idle", "peers": [],
                               "counters": link.counters.as_dict(),
                               "address": "AA:BB:CC:DD:EE:FF"}
    assert SERVICE_UUID.startswith("6e400001-")


@pytest.mark.skipif(not sys.platform.startswith("linux")
                    or os.path.exists("/run/dbus/system_bus_socket")
                    or os.path.exists("/var/run/dbus/system_bus_socket"),
                    reason="needs a Linux machine without a system D-Bus")
def test_real_bleak_without_dbus_is_a_clear_error() -> None:
    async def go() -> None:
        with pytest.raises(LinkError, match="^no Bluetooth adapter: cannot reach BlueZ"):
            await BleCentral(scan_timeout=0.1).start(Host())
    run(go)
