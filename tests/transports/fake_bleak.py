"""A pretend Bluetooth world with the surface of bleak the BLE link uses.

:class:`FakeAir` holds peripherals by address and offers what ``BleCentral`` takes as
``scanner`` (``discover``, ``find_device_by_address``) and ``client_factory``
(``FakeAir.client(device, disconnected_callback=...)``). A :class:`FakePeripheral`
records the writes it receives, pushes notifications to its connected client, can drop
the connection (calling the client's disconnected callback, as bleak does) and can be
told to refuse connections or writes. Setting ``FakeAir.adapter_error`` makes every
scan and connect raise it, as bleak does without a usable adapter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bleak.exc import BleakError

from gateway.transports.ble import RX_UUID, SERVICE_UUID, STATS_UUID, TX_UUID


@dataclass(slots=True)
class FakeDevice:
    """Stands for bleak's BLEDevice."""

    address: str
    name: str | None = None


@dataclass(slots=True)
class FakeAdvertisement:
    """Stands for bleak's AdvertisementData."""

    service_uuids: list[str]
    local_name: str | None = None


@dataclass(slots=True)
class FakeCharacteristic:
    uuid: str
    properties: list[str]
    max_write_without_response_size: int = 20


@dataclass(slots=True)
class FakeServices:
    """Stands for bleak's BleakGATTServiceCollection."""

    service_uuids: list[str]
    characteristics: list[FakeCharacteristic]

    def get_service(self, uuid: str) -> str | None:
        return uuid if uuid.lower() in self.service_uuids else None

    def get_characteristic(self, uuid: str) -> FakeCharacteristic | None:
        return next((c for c in self.characteristics if c.uuid == uuid.lower()), None)


@dataclass(slots=True)
class Write:
    at: float  # loop time
    uuid: str
    data: bytes
    response: bool | None


def esp32_services(mtu: int = 128) -> FakeServices:
    """What a tinySSB ESP32 board offers (TX is READ|NOTIFY, plus the stats line)."""
    return FakeServices([SERVICE_UUID], [
        FakeCharacteristic(RX_UUID, ["write"], mtu - 3),
        FakeCharacteristic(TX_UUID, ["read", "notify"], mtu - 3),
        FakeCharacteristic(STATS_UUID, ["read", "notify"], mtu - 3),
    ])


def phone_services() -> FakeServices:
    """What the Android app offers: TX notifies but cannot be read."""
    return FakeServices([SERVICE_UUID], [
        FakeCharacteristic(RX_UUID, ["write"], 125),
        FakeCharacteristic(TX_UUID, ["notify"], 125),
    ])


@dataclass(eq=False)
class FakePeripheral:
    address: str
    services: FakeServices = field(default_factory=esp32_services)
    advertised: list[str] = field(default_factory=lambda: [SERVICE_UUID])
    mtu: int = 128
    in_range: bool = True
    refuse_connects: int = 0  # the next N connects fail
    fail_writes: bool = False
    writes: list[Write] = field(default_factory=list)
    connects: int = 0
    client: FakeClient | None = None

    def notify(self, data: bytes) -> None:
        """Send one notification on TX to the connected client."""
        assert self.client is not None and self.client.is_connected, "nobody connected"
        self.client.deliver(TX_UUID, bytearray(data))

    def drop(self) -> None:
        """The link breaks (out of range, reset): the client hears of it."""
        assert self.client is not None, "nobody connected"
        self.client.lost()


class FakeClient:
    """Stands for bleak's BleakClient bound to one peripheral."""

    def __init__(self, air: FakeAir, device: FakeDevice | str,
                 disconnected_callback: Callable[[FakeClient], None] | None = None,
                 **kwargs: Any) -> None:
        self.air = air
        self.address = device if isinstance(device, str) else device.address
        self.disconnected_callback = disconnected_callback
        self.is_connected = False
        self.disconnects = 0
        self._notify: dict[str, Callable[[Any, bytearray], None]] = {}

    @property
    def peripheral(self) -> FakePeripheral:
        return self.air.peripherals[self.address]

    @property
    def mtu_size(self) -> int:
        return self.peripheral.mtu

    @property
    def services(self) -> FakeServices:
        if not self.is_connected:
            raise BleakError("Service Discovery has not been performed yet")
        return self.peripheral.services

    async def connect(self, **kwargs: Any) -> None:
        await asyncio.sleep(0)
        if self.air.adapter_error is not None:
            raise self.air.adapter_error
        p = self.air.peripherals.get(self.address)
        if p is None or not p.in_range:
            raise BleakError(f"Device with address {self.address} was not found.")
        if p.refuse_connects > 0:
            p.refuse_connects -= 1
            raise TimeoutError()
        p.connects += 1
        p.client = self
        self.is_connected = True

    async def disconnect(self) -> None:
        await asyncio.sleep(0)
        self.disconnects += 1
        if self.is_connected:
            self.lost()

    def lost(self) -> None:
        if not self.is_connected:
            return
        self.is_connected = False
        if self.peripheral.client is self:
            self.peripheral.client = None
        if self.disconnected_callback is not None:
            self.disconnected_callback(self)

    async def start_notify(self, char_specifier: str,
                           callback: Callable[[Any, bytearray], None], **kwargs: Any) -> None:
        await asyncio.sleep(0)
        if not self.is_connected:
            raise BleakError("Not connected")
        char = self.services.get_characteristic(char_specifier)
        if char is None:
            raise BleakError(f"Characteristic {char_specifier} was not found!")
        self._notify[char.uuid] = callback

    def deliver(self, uuid: str, data: bytearray) -> None:
        callback = self._notify.get(uuid)
        if callback is not None:
            callback(self.services.get_characteristic(uuid), data)

    async def write_gatt_char(self, char_specifier: str, data: bytes,
                              response: bool | None = None) -> None:
        await asyncio.sleep(0)
        if not self.is_connected:
            raise BleakError("Not connected")
        p = self.peripheral
        if p.fail_writes:
            raise BleakError("ATT error: 0x0e (Unlikely Error)")
        p.writes.append(Write(asyncio.get_running_loop().time(), char_specifier,
                              bytes(data), response))


class FakeAir:
    """The peripherals around, a scanner and a client factory over them."""

    def __init__(self, *peripherals: FakePeripheral) -> None:
        self.peripherals: dict[str, FakePeripheral] = {p.address: p for p in peripherals}
        self.adapter_error: BaseException | None = None
        self.clients: list[FakeClient] = []
        self.scans = 0

    def add(self, peripheral: FakePeripheral) -> FakePeripheral:
        self.peripherals[peripheral.address] = peripheral
        return peripheral

    async def discover(self, timeout: float = 5.0, *, return_adv: bool = False,
                       **kwargs: Any) -> dict[str, tuple[FakeDevice, FakeAdvertisement]]:
        assert return_adv, "the link needs the advertisement data"
        self.scans += 1
        await asyncio.sleep(0)
        if self.adapter_error is not None:
            raise self.adapter_error
        return {p.address: (FakeDevice(p.address), FakeAdvertisement(list(p.advertised)))
                for p in self.peripherals.values() if p.in_range}

    async def find_device_by_address(self, device_identifier: str, timeout: float = 10.0,
                                     **kwargs: Any) -> FakeDevice | None:
        await asyncio.sleep(0)
        if self.adapter_error is not None:
            raise self.adapter_error
        for p in self.peripherals.values():
            if p.in_range and p.address.lower() == device_identifier.lower():
                return FakeDevice(p.address)
        return None

    def client(self, device: FakeDevice | str,
               disconnected_callback: Callable[[FakeClient], None] | None = None,
               **kwargs: Any) -> FakeClient:
        c = FakeClient(self, device, disconnected_callback, **kwargs)
        self.clients.append(c)
        return c
