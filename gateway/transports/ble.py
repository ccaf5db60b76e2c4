"""The BLE central: tinySSB peers over GATT, through ``bleak``.

A tinySSB BLE peer (an ESP32 board; an Android phone running the tinySSB app) is a GATT
peripheral offering the replication service with two characteristics: the central
writes each packet to RX (write with response) and the peripheral notifies each packet
on TX. One packet per write or notification, no CRC, at most 127 bytes (the ESP32 sets
its MTU to 128, so a 120-byte packet needs an ATT MTU of at least 123).

:class:`BleCentral` is the gateway's side, like the Python reference: a central only.
With an address it keeps that one device connected; without, it scans for devices
advertising the service and keeps up to ``max_peers`` of them connected, scanning again
now and then while it has room. Every connected peer is one point-to-point
:class:`~gateway.replication.faces.Face` named ``ble:<address>``. Writes to a peer are
paced (0.1 s after each, as the reference does). When a peer goes away its face goes
down once and the link reconnects with backoff; the face comes back under the same name.

Phones offer TX with NOTIFY but without READ; the reference ignores them, and so does
this link unless ``allow_phones`` is set.

The scanner and the client are injection points (``scanner``, ``client_factory``),
bleak's :class:`~bleak.BleakScanner` and :class:`~bleak.BleakClient` by default, so the
link can be exercised without a radio.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import errno
import functools
import logging
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from bleak import BleakClient, BleakScanner
from bleak.exc import BleakBluetoothNotAvailableError, BleakDBusError, BleakError

from ..replication.faces import Face, FaceKind
from ..wire.entry import PACKET_LEN
from .base import Backoff, Link, LinkError, LinkHost, Outbox

__all__ = [
    "MAX_WRITE",
    "MIN_ATT_MTU",
    "RX_UUID",
    "SERVICE_UUID",
    "STATS_UUID",
    "TX_UUID",
    "BleCentral",
    "ClientFactory",
    "GattClient",
    "Scanner",
]

log = logging.getLogger(__name__)

SERVICE_UUID = "6e400001-7646-4b5b-9a50-71becce51558"
"""The tinySSB replication service (ESP32 firmware, Android app, Python reference)."""
RX_UUID = "6e400002-7646-4b5b-9a50-71becce51558"
"""Packets from the central to the peripheral: WRITE (with response)."""
TX_UUID = "6e400003-7646-4b5b-9a50-71becce51558"
"""Packets from the peripheral to the central: NOTIFY (and READ on ESP32 only)."""
STATS_UUID = "6e400004-7646-4b5b-9a50-71becce51558"
"""ESP32 only: a status line (READ|NOTIFY); not used by this link."""

MAX_WRITE = 127
"""The longest packet a peer takes in one write (the ESP32 accepts 1..127 bytes)."""
MIN_ATT_MTU = PACKET_LEN + 3
DEFAULT_ATT_MTU = 23  # the Bluetooth Core default, what a link has before negotiation
"""The ATT MTU a 120-byte packet needs in one write or notification."""

STABLE_SECONDS = 30.0
"""A connection that lasted this long resets the peer's reconnect backoff."""
DISCONNECT_TIMEOUT = 5.0
"""How long to wait for a client to disconnect when tearing a connection down."""


# --- what the link needs from bleak ----------------------------------------------------

class Scanner(Protocol):
    """The part of :class:`bleak.BleakScanner` (its class methods) the link uses."""

    async def discover(self, timeout: float = 5.0, *, return_adv: bool = False,
                       **kwargs: Any) -> Any:
        """With ``return_adv=True``: ``{address: (device, advertisement data)}``."""

    async def find_device_by_address(self, device_identifier: str, timeout: float = 10.0,
                                     **kwargs: Any) -> Any:
        """The device with this address, or None when none was seen within ``timeout``."""


class GattClient(Protocol):
    """The part of :class:`bleak.BleakClient` the link uses."""

    @property
    def mtu_size(self) -> int:
        """The negotiated ATT MTU."""

    @property
    def services(self) -> Any:
        """The discovered services: ``get_service(uuid)``, ``get_characteristic(uuid)``."""

    async def connect(self, **kwargs: Any) -> None:
        """Connect and discover the services."""

    async def disconnect(self) -> None:
        """Disconnect (bleak calls the disconnected callback on its own)."""

    async def start_notify(self, char_specifier: Any,
                           callback: Callable[[Any, bytearray], None],
                           **kwargs: Any) -> None:
        """Call ``callback(characteristic, data)`` for each notification."""

    async def write_gatt_char(self, char_specifier: Any, data: Any,
                              response: bool | None = None) -> None:
        """Write one value."""


ClientFactory = Callable[..., GattClient]
"""Called as ``client_factory(device, disconnected_callback=callback)``."""


class _Rejected(Exception):
    """The device is not a tinySSB peer this link talks to (missing service, a phone)."""


class _State(enum.Enum):
    IDLE = "idle"
    RUNNING = "running"
    CLOSED = "closed"


def adapter_trouble(exc: BaseException) -> str | None:
    """Why no Bluetooth adapter can be used, when ``exc`` says so; None otherwise."""
    if isinstance(exc, BleakBluetoothNotAvailableError):
        return str(exc.args[0]) if exc.args else "Bluetooth is not available"
    if isinstance(exc, BleakDBusError):
        if exc.dbus_error == "org.freedesktop.DBus.Error.ServiceUnknown":
            return "BlueZ (bluetoothd) is not running"
        if exc.dbus_error == "org.bluez.Error.NotReady":
            return "the adapter is not ready (is it powered on?)"
    if isinstance(exc, BleakError) and "adapter" in str(exc).lower():
        return str(exc)
    if isinstance(exc, (FileNotFoundError, ConnectionRefusedError, PermissionError)):
        # bleak's BlueZ backend connects to the system D-Bus socket first
        code = exc.errno if exc.errno is not None else errno.EIO
        return (f"cannot reach BlueZ over the system D-Bus ({os.strerror(code)}); "
                "is bluetoothd running?")
    return None


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


# --- one connection, one peer ----------------------------------------------------------

@dataclass(slots=True, eq=False)
class _Session:
    """One connection to a peer: from connect to the end of it."""

    face: Face
    client: GattClient | None = None
    outbox: Outbox | None = None
    announced: bool = False  # face_up was called
    ended: bool = False  # face_down was called, or the setup was abandoned
    early: list[bytes] = field(default_factory=list)  # notified before face_up
    lost: asyncio.Event = field(default_factory=asyncio.Event)
    started: float = 0.0


@dataclass(slots=True, eq=False)
class _Peer:
    """A device the link keeps connected, across connections."""

    address: str
    face: Face
    backoff: Backoff
    persistent: bool  # the configured address: never given up
    session: _Session | None = None
    task: asyncio.Task[None] | None = None


def _face_for(address: str) -> Face:
    return Face(f"ble:{address}", kind=FaceKind.POINT_TO_POINT, mtu=PACKET_LEN, crc=False)


# --- the link --------------------------------------------------------------------------

class BleCentral(Link):
    """A BLE central keeping tinySSB peripherals connected, one face each.

    ``address``: connect to that device only (its first connect failing fails
    :meth:`start`); None: scan for the tinySSB service and keep up to ``max_peers``
    connected, rescanning every ``rescan_interval`` seconds while below that.
    ``scan_timeout`` bounds each scan (and the search for ``address``). ``pacing`` is
    the pause after each write to a peer. A scanned peer that cannot be reconnected
    ``reconnect_attempts`` times in a row is given up (a later scan finds it again);
    the configured ``address`` is retried for ever.
    """

    kind = "ble"

    def __init__(
        self,
        address: str | None = None,
        *,
        scan_timeout: float = 5.0,
        max_peers: int = 4,
        pacing: float = 0.1,
        backoff: Backoff | None = None,
        allow_phones: bool = False,
        rescan_interval: float = 10.0,
        reconnect_attempts: int = 3,
        outbox_size: int = 32,
        scanner: Scanner | None = None,
        client_factory: ClientFactory | None = None,
        name: str = "ble",
    ) -> None:
        super().__init__(name)
        if max_peers < 1 or scan_timeout <= 0 or pacing < 0 or rescan_interval < 0:
            raise ValueError("BLE: max_peers >= 1, scan_timeout > 0, pacing >= 0 and "
                             "rescan_interval >= 0 required")
        self.address = address.upper() if address else None
        self.scan_timeout = scan_timeout
        self.max_peers = 1 if address else max_peers
        self.pacing = pacing
        self.allow_phones = allow_phones
        self.rescan_interval = rescan_interval
        self.reconnect_attempts = max(1, reconnect_attempts)
        self.outbox_size = outbox_size
        self._backoff = backoff if backoff is not None else Backoff(initial=1.0, maximum=30.0)
        # bleak's class methods are the scanner: the class itself fits the protocol
        self._scanner: Scanner = (
            scanner if scanner is not None else BleakScanner)  # type: ignore[assignment]
        self._client_factory: ClientFactory = (
            client_factory if client_factory is not None else BleakClient)
        self._host: LinkHost | None = None
        self._state = _State.IDLE
        self._peers: dict[str, _Peer] = {}
        self._ignored: dict[str, str] = {}  # address -> why it is not a peer we use
        self._scan_task: asyncio.Task[None] | None = None

    # -- Link ---------------------------------------------------------------------------

    async def start(self, host: LinkHost) -> None:
        if self._state is not _State.IDLE:
            raise LinkError(f"BLE link {self.name} was already started")
        self._host = host
        if self.address is not None:
            await self._start_one(self.address)
        else:
            await self._start_scanning()
        self._state = _State.RUNNING

    async def close(self) -> None:
        if self._state is _State.CLOSED:
            return
        self._state = _State.CLOSED
        peers = list(self._peers.values())
        tasks = [p.task for p in peers if p.task is not None]
        if self._scan_task is not None:
            tasks.append(self._scan_task)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for peer in peers:  # a task cancelled before it ran has not cleaned up
            if peer.session is not None:
                self._end(peer.session, "link closed")
                await self._teardown(peer.session)
        self._scan_task = None
        self._peers.clear()

    def describe(self) -> dict[str, Any]:
        peers = [p.face.name for p in self._peers.values()
                 if p.session is not None and p.session.announced and not p.session.ended]
        if self._state is not _State.RUNNING:
            state = "closed" if self._state is _State.CLOSED else "idle"
        elif peers:
            state = "up"
        else:
            state = "connecting" if self.address is not None else "scanning"
        info: dict[str, Any] = {"kind": self.kind, "name": self.name, "state": state,
                                "peers": peers, "counters": self.counters.as_dict()}
        if self.address is not None:
            info["address"] = self.address
        else:
            info["scanning"] = self._scan_task is not None and not self._scan_task.done()
            info["ignored"] = dict(self._ignored)
        return info

    # -- start --------------------------------------------------------------------------

    async def _start_one(self, address: str) -> None:
        peer = self._new_peer(address, persistent=True)
        self._peers[address] = peer
        try:
            device = await self._find(address)
            if device is None:
                raise LinkError(f"BLE device {address}: not found within "
                                f"{self.scan_timeout:g} s")
            await self._open(peer, device)
        except BaseException as exc:
            del self._peers[address]
            if isinstance(exc, _Rejected):
                raise LinkError(f"BLE device {address}: {exc}") from None
            trouble = adapter_trouble(exc)
            if trouble is not None:
                raise LinkError(f"no Bluetooth adapter: {trouble}") from None
            if isinstance(exc, Exception) and not isinstance(exc, LinkError):
                raise LinkError(f"BLE device {address}: cannot connect: {_reason(exc)}") \
                    from None
            raise
        peer.task = asyncio.get_running_loop().create_task(
            self._keep(peer, connected=True), name=f"ble keep {address}")

    async def _start_scanning(self) -> None:
        try:
            found = await self._scan()
        except Exception as exc:  # noqa: BLE001 - bleak backends raise their own errors
            trouble = adapter_trouble(exc)
            if trouble is not None:
                raise LinkError(f"no Bluetooth adapter: {trouble}") from None
            raise LinkError(f"BLE scan failed: {_reason(exc)}") from None
        self._adopt(found)
        if found:
            log.info("BLE: %d tinySSB peer(s) in range; scanning again every %g s "
                     "while below %d", len(found), self.rescan_interval, self.max_peers)
        else:
            log.info("BLE: no tinySSB peer in range yet; scanning again every %g s",
                     self.rescan_interval)
        self._scan_task = asyncio.get_running_loop().create_task(
            self._scan_loop(), name="ble scan")

    # -- scanning -----------------------------------------------------------------------

    async def _find(self, address: str) -> Any:
        return await self._scanner.find_device_by_address(address, timeout=self.scan_timeout)

    async def _scan(self) -> dict[str, Any]:
        """Devices advertising the service that the link neither uses nor ignores."""
        seen = await self._scanner.discover(timeout=self.scan_timeout, return_adv=True,
                                            service_uuids=[SERVICE_UUID])
        found: dict[str, Any] = {}
        for device, adv in seen.values():
            uuids = {str(u).lower() for u in (getattr(adv, "service_uuids", None) or ())}
            address = str(device.address).upper()
            if SERVICE_UUID in uuids and address not in self._peers \
                    and address not in self._ignored:
                found[address] = device
        log.debug("BLE scan: %d device(s) seen, %d new tinySSB peer(s)", len(seen),
                  len(found))
        return found

    def _adopt(self, found: dict[str, Any]) -> None:
        loop = asyncio.get_running_loop()
        for address, device in found.items():
            if len(self._peers) >= self.max_peers:
                log.debug("BLE: %d peers, not connecting to %s", len(self._peers), address)
                continue
            peer = self._new_peer(address, persistent=False)
            self._peers[address] = peer
            peer.task = loop.create_task(self._keep(peer, device=device),
                                         name=f"ble keep {address}")

    async def _scan_loop(self) -> None:
        while True:
            await asyncio.sleep(self.rescan_interval)
            if len(self._peers) >= self.max_peers:
                continue
            try:
                found = await self._scan()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - bleak backends raise their own errors
                self.counters.faults += 1
                trouble = adapter_trouble(exc)
                log.warning("BLE scan failed: %s", trouble if trouble else _reason(exc))
                continue
            self._adopt(found)

    # -- one peer -----------------------------------------------------------------------

    def _new_peer(self, address: str, *, persistent: bool) -> _Peer:
        return _Peer(address, _face_for(address), dataclasses.replace(self._backoff),
                     persistent)

    async def _keep(self, peer: _Peer, *, device: Any = None, connected: bool = False) -> None:
        """Keep ``peer`` connected until the link closes (or gives the peer up)."""
        loop = asyncio.get_running_loop()
        failures = 0
        try:
            while True:
                if not connected:
                    try:
                        if device is None:
                            device = await self._find(peer.address)
                            if device is None:
                                raise LookupError(
                                    f"not found within {self.scan_timeout:g} s")
                        await self._open(peer, device)
                    except asyncio.CancelledError:
                        raise
                    except _Rejected as exc:
                        self._ignored[peer.address] = str(exc)
                        log.log(logging.WARNING if peer.persistent else logging.INFO,
                                "BLE %s: skipped: %s", peer.address, exc)
                        return
                    except Exception as exc:  # noqa: BLE001 - as in _scan_loop
                        device = None
                        failures += 1
                        self.counters.faults += 1
                        trouble = adapter_trouble(exc)
                        why = f"no Bluetooth adapter: {trouble}" if trouble else _reason(exc)
                        if not peer.persistent and failures >= self.reconnect_attempts:
                            log.info("BLE %s: giving up after %d failed attempts (%s); a "
                                     "later scan may find it again", peer.address, failures,
                                     why)
                            return
                        log.info("BLE %s: connect failed (%s); retrying", peer.address, why)
                        await peer.backoff.wait()
                        continue
                connected = False
                failures = 0
                session = peer.session
                assert session is not None
                await session.lost.wait()
                await self._teardown(session)
                if loop.time() - session.started >= STABLE_SECONDS:
                    peer.backoff.reset()
                device = None
                await peer.backoff.wait()
        finally:
            session = peer.session
            if session is not None:
                self._end(session, "link closed")
                with contextlib.suppress(asyncio.CancelledError):
                    await self._teardown(session)
            if self._peers.get(peer.address) is peer and self._state is not _State.CLOSED:
                del self._peers[peer.address]

    async def _open(self, peer: _Peer, device: Any) -> None:
        """Connect to ``device``, check it, subscribe to TX and announce the face."""
        session = _Session(peer.face)
        peer.session = session
        client = self._client_factory(
            device, disconnected_callback=functools.partial(self._on_disconnected, session))
        session.client = client
        try:
            await client.connect()
            rx_mtu = self._check(client)
            att_mtu = self._att_mtu(client, rx_mtu)
            if att_mtu < MIN_ATT_MTU:
                log.warning("BLE %s: ATT MTU %d < %d: 120-byte packets may not fit",
                            peer.address, att_mtu, MIN_ATT_MTU)
            await client.start_notify(TX_UUID, functools.partial(self._on_notify, session))
            if session.ended:
                raise ConnectionError("disconnected while setting up")
        except BaseException:
            session.ended = True
            session.client = None
            with contextlib.suppress(Exception, asyncio.CancelledError):
                async with asyncio.timeout(DISCONNECT_TIMEOUT):
                    await client.disconnect()
            raise
        assert self._host is not None
        session.outbox = Outbox(
            peer.face.name, functools.partial(self._write, client, peer.face.name),
            self.counters,
            size=self.outbox_size,
            on_error=lambda exc: self._end(session, f"write failed: {_reason(exc)}"))
        session.started = asyncio.get_running_loop().time()
        session.announced = True
        self.counters.connects += 1
        log.info("BLE %s: connected (ATT MTU %d), face %s up", peer.address, att_mtu,
                 peer.face.name)
        self._host.face_up(peer.face, functools.partial(self._send, session))
        early, session.early = session.early, []
        for frame in early:
            self._deliver(session, frame)

    def _check(self, client: GattClient) -> int:
        """Raise :class:`_Rejected` unless the peer offers the service as tinySSB does.

        Returns the ATT MTU the RX characteristic reports (:data:`DEFAULT_ATT_MTU` when unknown).
        """
        services = client.services
        if services.get_service(SERVICE_UUID) is None:
            raise _Rejected("does not offer the tinySSB service")
        rx = services.get_characteristic(RX_UUID)
        tx = services.get_characteristic(TX_UUID)
        if rx is None or "write" not in rx.properties:
            raise _Rejected("its RX characteristic is missing or not writable with response")
        if tx is None or not {"notify", "indicate"} & set(tx.properties):
            raise _Rejected("its TX characteristic is missing or does not notify")
        if "read" not in tx.properties and not self.allow_phones:
            raise _Rejected("its TX characteristic lacks READ, so it is a phone (the "
                            "reference ignores phones; set allow_phones to use it)")
        size = getattr(rx, "max_write_without_response_size", 20)
        return int(size) + 3 if isinstance(size, int) else DEFAULT_ATT_MTU

    @staticmethod
    def _att_mtu(client: GattClient, rx_mtu: int) -> int:
        """The best guess of the ATT MTU: BlueZ reports 23 from ``mtu_size`` unless asked
        otherwise, but (from BlueZ 5.62) the real one through the characteristic."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                reported = int(client.mtu_size)
            except (BleakError, NotImplementedError, AttributeError):
                # a backend that cannot tell (bleak raises on some): assume no negotiation
                reported = DEFAULT_ATT_MTU
        return max(reported, rx_mtu)

    # -- frames -------------------------------------------------------------------------

    def _send(self, session: _Session, frame: bytes) -> bool:
        if not 0 < len(frame) <= MAX_WRITE:
            self.counters.dropped_out += 1
            log.debug("%s: %d-byte frame dropped (a peer takes 1..%d)", session.face.name,
                      len(frame), MAX_WRITE)
            return False
        if session.ended or session.outbox is None:
            self.counters.dropped_out += 1
            return False
        return session.outbox.put(frame)

    async def _write(self, client: GattClient, name: str, frame: bytes) -> None:
        await client.write_gatt_char(RX_UUID, frame, response=True)
        log.debug("%s: tx %d B", name, len(frame))
        if self.pacing:
            await asyncio.sleep(self.pacing)

    def _on_notify(self, session: _Session, sender: Any, data: bytearray) -> None:
        frame = bytes(data)
        if session.ended:
            return
        if not session.announced:
            session.early.append(frame)
            return
        self._deliver(session, frame)

    def _deliver(self, session: _Session, frame: bytes) -> None:
        if not 0 < len(frame) <= MAX_WRITE:
            self.counters.dropped_in += 1
            log.debug("%s: %d-byte notification dropped", session.face.name, len(frame))
            return
        self.counters.frames_in += 1
        self.counters.bytes_in += len(frame)
        log.debug("%s: rx %d B", session.face.name, len(frame))
        assert self._host is not None
        self._host.frame_in(session.face.name, frame)

    # -- the end of a connection --------------------------------------------------------

    def _on_disconnected(self, session: _Session, client: Any) -> None:
        self._end(session, "the peer disconnected")

    def _end(self, session: _Session, reason: str) -> None:
        """Close the session's face, once; the peer's task then tears it down."""
        if session.ended:
            return
        session.ended = True
        session.lost.set()
        if not session.announced:
            return
        if self._state is not _State.CLOSED:
            self.counters.faults += 1
        log.info("BLE %s: disconnected (%s)", session.face.name, reason)
        assert self._host is not None
        self._host.face_down(session.face.name, reason)

    async def _teardown(self, session: _Session) -> None:
        if session.outbox is not None:
            await session.outbox.close()
        if session.client is not None:
            client, session.client = session.client, None
            try:
                async with asyncio.timeout(DISCONNECT_TIMEOUT):
                    await client.disconnect()
            except Exception as exc:  # noqa: BLE001 - the connection is gone either way
                log.debug("%s: disconnect: %s", session.face.name, _reason(exc))
