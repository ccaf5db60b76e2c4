"""The LoRa dongle over USB serial: an asyncio link speaking ``hardware/PROTOCOL.md``.

:class:`DongleLink` opens the port without resetting the board, finds the dongle
(DETECT), reads its identity, configures the radio and verifies every read-back, then
moves packets both ways: :meth:`DongleLink.send` honours the dongle's transmit credit
(READY / TX_DONE) so its 4-slot queue is never overrun, and :meth:`DongleLink.receive`
(or ``async for``) yields :class:`~.dongle_proto.Received` packets with RSSI, SNR, the
dongle's clock and the host's. When the port goes away (unplugged), the link reopens
the same path with backoff, repeats the handshake and the configuration, and resumes.

The port is read with ``loop.add_reader`` on its file descriptor (POSIX only). The
synchronous helpers :func:`read_info` and :func:`apply_settings` serve the CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import serial

from ..wire.lora import LoRaParams
from .dongle_proto import (
    PROTOCOL_VERSION,
    RADIO_SETTINGS,
    Airtime,
    BleData,
    BoardId,
    Cmd,
    Detected,
    DongleParser,
    DutyLimit,
    ErrorFrame,
    FwVersion,
    LogLine,
    Message,
    ParserCounters,
    RadioConfig,
    RadioState,
    Ready,
    Received,
    SettingValue,
    Stats,
    TxCredit,
    TxDone,
    encode_data,
    encode_detect,
    encode_duty_limit,
    encode_query,
    encode_radio_state,
    encode_setting,
)

__all__ = [
    "BAUD_RATE",
    "DongleDisconnected",
    "DongleIdentity",
    "DongleInfo",
    "DongleLink",
    "DongleLinkError",
    "DongleMismatch",
    "DongleNotFound",
    "DongleRefused",
    "DongleTimeout",
    "LinkClosed",
    "LinkCounters",
    "SerialLines",
    "apply_settings",
    "read_info",
    "serial_lines",
]

log = logging.getLogger(__name__)

BAUD_RATE = 115200
BOARDS_DIR = Path(__file__).resolve().parents[2] / "hardware" / "boards"
"""Board descriptions (``<board>.json``) in a source checkout."""


# --- errors ----------------------------------------------------------------------------

class DongleLinkError(Exception):
    """Something went wrong talking to the dongle; the message is one line for a person."""


class DongleNotFound(DongleLinkError):
    """The serial port cannot be opened."""


class DongleTimeout(DongleLinkError):
    """The dongle did not answer in time."""


class DongleRefused(DongleLinkError):
    """The dongle answered a request with an ERROR frame."""

    def __init__(self, error: ErrorFrame, what: str) -> None:
        super().__init__(f"the dongle refused {what}: {error.reason}")
        self.error = error


class DongleMismatch(DongleLinkError):
    """The dongle read back another value than asked, or speaks another protocol."""


class DongleDisconnected(DongleLinkError):
    """The port went away while a request was waiting (or the link is reconnecting)."""


class LinkClosed(DongleLinkError):
    """The link was closed."""


# --- values ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SerialLines:
    """Levels to hold the modem-control lines at while the port is open.

    ``False`` is deasserted: on the supported ESP32 boards RTS drives EN (reset) and DTR
    drives IO0 (boot mode), so both stay deasserted.
    """

    dtr: bool = False
    rts: bool = False


def serial_lines(board: str | None, boards_dir: Path = BOARDS_DIR) -> SerialLines:
    """The line levels for ``board`` from ``<boards_dir>/<board>.json``.

    A board file may say ``"serial_lines": {"dtr": false, "rts": false}`` (``true``
    asserts a line); without that key, or without ``board``, both stay deasserted, as
    every supported board needs. Naming a board that has no file in an existing
    ``boards_dir`` is an error listing the known boards.
    """
    if board is None:
        return SerialLines()
    path = boards_dir / f"{board}.json"
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        if boards_dir.is_dir():
            known = ", ".join(sorted(p.stem for p in boards_dir.glob("*.json")))
            raise DongleLinkError(f"unknown board {board!r}; known boards: {known}") from None
        log.debug("no board file %s; keeping DTR and RTS deasserted", path)
        return SerialLines()
    except (OSError, ValueError) as exc:
        raise DongleLinkError(f"cannot read board file {path}: {exc}") from None
    lines = doc.get("serial_lines") if isinstance(doc, dict) else None
    if not isinstance(lines, dict):
        return SerialLines()
    return SerialLines(dtr=lines.get("dtr") is True, rts=lines.get("rts") is True)


@dataclass(frozen=True, slots=True)
class DongleIdentity:
    protocol: int
    firmware: str
    board: str
    chip: str


@dataclass(frozen=True, slots=True)
class DongleInfo:
    """Everything the dongle reports about itself (``tinyssb dongle info``)."""

    port: str
    identity: DongleIdentity
    radio: RadioConfig
    radio_on: bool
    duty: DutyLimit
    stats: Stats
    airtime: Airtime
    free: int


@dataclass(slots=True)
class LinkCounters:
    """What the link has moved and lost, since it was created."""

    frames_in: int = 0
    """LoRa packets received and queued for :meth:`DongleLink.receive`"""
    frames_out: int = 0
    """LoRa packets written to the dongle"""
    ble_in: int = 0
    """DATA_BLE packets received (and dropped: this link moves LoRa only)"""
    rx_dropped: int = 0
    """received packets dropped because the receive queue was full"""
    tx_refused: int = 0
    """packets the dongle refused or dropped (an ERROR about a DATA_LORA)"""
    tx_lost: int = 0
    """packets in the dongle's queue or on the wire when the port went away"""
    airtime_us: int = 0
    """airtime of the completed transmissions (TX_DONE)"""
    reconnects: int = 0
    """successful reconnects after the port went away"""
    reconnect_failures: int = 0
    """attempts to reopen the port (or to redo the handshake) that failed"""
    errors: int = 0
    """ERROR frames from the dongle"""
    parser: ParserCounters = field(default_factory=ParserCounters)
    """frames the decoder dropped (garbage, unknown commands, orphan metadata)"""


class _State(enum.Enum):
    CLOSED = "closed"
    CONNECTING = "connecting"
    UP = "up"


_ANSWERS: dict[type, Cmd] = {
    RadioState: Cmd.RADIO_STATE, DutyLimit: Cmd.DUTY_LIMIT, Detected: Cmd.DETECT,
    FwVersion: Cmd.FW_VERSION, BoardId: Cmd.BOARD, Stats: Cmd.STATS,
    Airtime: Cmd.AIRTIME, Ready: Cmd.READY,
}


def _answer_cmd(msg: Message) -> int | None:
    """The command a message answers, for matching it with a pending request."""
    if isinstance(msg, SettingValue):
        return int(msg.cmd)
    cmd = _ANSWERS.get(type(msg))
    return None if cmd is None else int(cmd)


def _value_text(msg: Message) -> str:
    if isinstance(msg, SettingValue):
        return str(msg.value)
    if isinstance(msg, RadioState):
        return "1" if msg.on else "0"
    if isinstance(msg, DutyLimit):
        return f"{msg.permille} permille over {msg.window_ms} ms"
    return str(msg)


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno is not None:
        return os.strerror(exc.errno)
    return str(exc) or type(exc).__name__


# --- the link --------------------------------------------------------------------------

class DongleLink:
    """An asyncio link to one dongle on a serial port.

    ``radio`` (a :class:`RadioConfig` or :class:`~gateway.wire.lora.LoRaParams`), when
    given, is sent and verified on every (re)connect, followed by ``duty`` when given and
    RADIO_STATE ``radio_on``. Without ``radio`` the link leaves the dongle's settings as
    they are (as ``tinyssb dongle info`` does).

    Use it as ``async with DongleLink(...) as link:`` or call :meth:`open` and
    :meth:`close`. See ``docs/dongle.md``.
    """

    def __init__(
        self,
        port: str,
        *,
        radio: RadioConfig | LoRaParams | None = None,
        duty: DutyLimit | None = None,
        radio_on: bool = True,
        board: str | None = None,
        boards_dir: Path = BOARDS_DIR,
        answer_timeout: float = 1.0,
        detect_timeout: float = 3.0,
        reconnect: bool = True,
        backoff: tuple[float, float] = (0.1, 5.0),
        credit_poll: float = 5.0,
        rx_queue: int = 256,
    ) -> None:
        self.port = port
        self._radio = RadioConfig.from_params(radio) if isinstance(radio, LoRaParams) else radio
        self._duty = duty
        self._radio_on = radio_on
        self._lines = serial_lines(board, boards_dir)
        self.answer_timeout = answer_timeout
        self.detect_timeout = detect_timeout
        self.reconnect = reconnect
        self.backoff = backoff
        self.credit_poll = credit_poll
        self.counters = LinkCounters()
        self.identity: DongleIdentity | None = None
        self.radio: RadioConfig | None = None
        """the radio settings read back at the last (re)connect, or ``None``"""
        self._parser = DongleParser()
        self.counters.parser = self._parser.counters
        self._credit = TxCredit()
        self._rx: asyncio.Queue[Received | None] = asyncio.Queue(maxsize=rx_queue)
        self._state = _State.CLOSED
        self._closing = False
        self._ser: serial.Serial | None = None
        self._fd = -1
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: tuple[int, asyncio.Future[Message]] | None = None
        self._request_lock = asyncio.Lock()
        self._write_lock = asyncio.Lock()
        self._send_lock = asyncio.Lock()
        self._changed = asyncio.Event()
        self._last_data_write = 0.0
        self._last_heard = 0.0
        self._reconnect_task: asyncio.Task[None] | None = None

    # -- lifecycle ----------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Open the port, find the dongle and configure it; raises :class:`DongleLinkError`."""
        if self._state is not _State.CLOSED or self._closing:
            raise DongleLinkError("the link is already open (or was closed)")
        self._loop = asyncio.get_running_loop()
        await self._connect()

    async def close(self) -> None:
        """Stop reconnecting, close the port and end :meth:`receive` iterations."""
        self._closing = True
        task, self._reconnect_task = self._reconnect_task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._drop_port(LinkClosed(f"the link to {self.port} was closed"))
        self._state = _State.CLOSED
        self._changed.set()
        while True:
            try:
                self._rx.put_nowait(None)
                break
            except asyncio.QueueFull:
                self._rx.get_nowait()
                self.counters.rx_dropped += 1

    @property
    def connected(self) -> bool:
        """Whether the dongle is attached and configured right now."""
        return self._state is _State.UP

    @property
    def credit(self) -> int:
        """Packets :meth:`send` may write now without waiting."""
        return self._credit.credit if self.connected else 0

    def _check_usable(self) -> None:
        """Raise unless the link is up or on its way back up."""
        if self._closing:
            raise LinkClosed(f"the link to {self.port} was closed")
        if self._state is _State.CLOSED:
            raise DongleDisconnected(f"the dongle on {self.port} is not connected")

    async def wait_connected(self, timeout: float | None = None) -> None:
        """Wait until the link is up (again); raises ``TimeoutError``, :class:`LinkClosed`,
        or :class:`DongleDisconnected` when it is down for good (``reconnect=False``)."""
        async with asyncio.timeout(timeout):
            while self._state is not _State.UP:
                self._check_usable()
                self._changed.clear()
                await self._changed.wait()

    # -- traffic ------------------------------------------------------------------------

    async def send(self, packet: bytes) -> None:
        """Write one packet (1..251 bytes, without CRC) for transmission.

        Waits for credit, and while the port is away for the reconnect: a packet handed
        to ``send`` is not dropped on the host. Concurrent callers are served in order.
        Raises ``ValueError`` for a bad length, :class:`LinkClosed` once closed and
        :class:`DongleDisconnected` when the port is gone and ``reconnect`` is off.
        """
        frame = encode_data(packet)
        async with self._send_lock:
            while True:
                self._check_usable()
                if self._state is _State.UP and self._credit.credit > 0:
                    try:
                        await self._write(frame)
                    except DongleDisconnected:
                        continue  # the reconnect runs; wait for it and resend
                    self._credit.spend()
                    self._last_data_write = time.monotonic()
                    self.counters.frames_out += 1
                    log.debug("tx %d B, credit now %d", len(packet), self._credit.credit)
                    return
                await self._wait_for_credit()

    async def _wait_for_credit(self) -> None:
        self._changed.clear()
        try:
            async with asyncio.timeout(self.credit_poll):
                await self._changed.wait()
        except TimeoutError:
            if self._state is not _State.UP:
                return
            silent = time.monotonic() - self._last_heard
            if silent > 2 * self.credit_poll:
                # it answered no READY poll: crashed firmware (a REPL on the port) or a
                # hung driver; reconnect as if it had been unplugged
                self._lost(DongleTimeout(f"no answer for {silent:.1f} s"))
                return
            log.debug("no credit for %.1f s (in flight %d); asking READY",
                      self.credit_poll, self._credit.in_flight)
            with contextlib.suppress(DongleDisconnected):
                await self._write(encode_query(Cmd.READY))

    async def receive(self) -> Received:
        """The next received LoRa packet; raises :class:`LinkClosed` once closed."""
        item = await self._rx.get()
        if item is None:
            self._rx.put_nowait(None)  # wake the other receivers too
            raise LinkClosed(f"the link to {self.port} was closed")
        return item

    def __aiter__(self) -> AsyncIterator[Received]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Received]:
        while True:
            try:
                yield await self.receive()
            except LinkClosed:
                return

    # -- queries and settings -----------------------------------------------------------

    async def stats(self) -> Stats:
        msg = await self._query(Cmd.STATS)
        assert isinstance(msg, Stats)
        return msg

    async def airtime(self) -> Airtime:
        msg = await self._query(Cmd.AIRTIME)
        assert isinstance(msg, Airtime)
        return msg

    async def ready(self) -> Ready:
        msg = await self._query(Cmd.READY)
        assert isinstance(msg, Ready)
        return msg

    async def read_radio(self) -> RadioConfig:
        """Query every radio setting."""
        values: dict[Cmd, int] = {}
        for cmd in RADIO_SETTINGS:
            msg = await self._query(cmd)
            assert isinstance(msg, SettingValue)
            values[cmd] = msg.value
        return RadioConfig.from_settings(values)

    async def radio_state(self) -> bool:
        msg = await self._query(Cmd.RADIO_STATE)
        assert isinstance(msg, RadioState)
        return msg.on

    async def duty_limit(self) -> DutyLimit:
        msg = await self._query(Cmd.DUTY_LIMIT)
        assert isinstance(msg, DutyLimit)
        return msg

    async def info(self) -> DongleInfo:
        """Identity, settings, stats and airtime budget, all queried now."""
        if self.identity is None or not self.connected:
            raise DongleDisconnected(f"the dongle on {self.port} is not connected")
        return DongleInfo(self.port, self.identity, await self.read_radio(),
                          await self.radio_state(), await self.duty_limit(),
                          await self.stats(), await self.airtime(), (await self.ready()).free)

    async def set_value(self, cmd: Cmd, value: int) -> None:
        """Set one single-value setting and verify the read-back (not kept for reconnects;
        use :meth:`set_radio` for that)."""
        if cmd == Cmd.RADIO_STATE:
            await self.set_radio_state(bool(value))
        else:
            await self._set(cmd, encode_setting(cmd, value), SettingValue(cmd, value))

    async def set_radio(self, radio: RadioConfig | LoRaParams) -> None:
        """Configure the radio (verified) and keep it as the configuration to restore."""
        config = RadioConfig.from_params(radio) if isinstance(radio, LoRaParams) else radio
        for cmd, value in config.settings():
            await self._set(cmd, encode_setting(cmd, value), SettingValue(cmd, value))
        self._radio = self.radio = config

    async def set_duty(self, limit: DutyLimit) -> None:
        """Set the duty-cycle limit (verified) and keep it for reconnects."""
        await self._set(Cmd.DUTY_LIMIT, encode_duty_limit(limit), limit)
        self._duty = limit

    async def set_radio_state(self, on: bool) -> None:
        """Switch the radio on or off (verified) and keep that for reconnects."""
        await self._set(Cmd.RADIO_STATE, encode_radio_state(on), RadioState(on))
        self._radio_on = on

    async def _query(self, cmd: Cmd, *, connecting: bool = False) -> Message:
        return await self._request(cmd, encode_query(cmd), cmd.name, connecting=connecting)

    async def _set(self, cmd: Cmd, frame: bytes, expected: Message, *,
                   connecting: bool = False) -> None:
        """Write a setting and check that the dongle reads back ``expected``."""
        what = f"{cmd.name} {_value_text(expected)}"
        msg = await self._request(cmd, frame, what, connecting=connecting)
        if msg != expected:
            raise DongleMismatch(f"the dongle on {self.port} reads back {cmd.name} "
                                 f"{_value_text(msg)} after being asked for "
                                 f"{_value_text(expected)}")

    # -- requests -----------------------------------------------------------------------

    async def _request(self, cmd: Cmd, frame: bytes, what: str, *,
                       timeout: float | None = None, connecting: bool = False) -> Message:
        """Write ``frame`` and wait for the answer carrying ``cmd`` (or an ERROR about it).

        Only the handshake (``connecting``) may talk to a dongle that is not up yet.
        """
        async with self._request_lock:
            if self._state is not _State.UP and not (
                    connecting and self._state is _State.CONNECTING):
                if self._closing:
                    raise LinkClosed(f"the link to {self.port} was closed")
                raise DongleDisconnected(f"the dongle on {self.port} is not connected")
            assert self._loop is not None
            fut: asyncio.Future[Message] = self._loop.create_future()
            self._pending = (int(cmd), fut)
            wait = self.answer_timeout if timeout is None else timeout
            try:
                await self._write(frame)
                async with asyncio.timeout(wait):
                    return await fut
            except TimeoutError:
                raise DongleTimeout(f"no answer from the dongle on {self.port} to {what} "
                                    f"within {wait:g} s") from None
            except DongleRefused as exc:
                raise DongleRefused(exc.error, what) from None
            finally:
                self._pending = None

    # -- connection ---------------------------------------------------------------------

    async def _connect(self) -> None:
        self._state = _State.CONNECTING
        self._open_port()
        try:
            await self._handshake()
        except BaseException:
            self._drop_port(DongleDisconnected("handshake failed"))
            if self._state is _State.CONNECTING:
                self._state = _State.CLOSED
            raise
        self._state = _State.UP
        self._changed.set()

    def _open_port(self) -> None:
        ser = serial.Serial()
        ser.port = self.port
        ser.baudrate = BAUD_RATE
        ser.timeout = 0
        ser.write_timeout = 0
        ser.exclusive = True
        # set before open(): pyserial applies them right after opening the device
        ser.dtr = self._lines.dtr
        ser.rts = self._lines.rts
        try:
            ser.open()
        except (serial.SerialException, OSError) as exc:
            reason = _os_reason(exc) if getattr(exc, "errno", None) else str(exc)
            if isinstance(exc, serial.SerialException) and "lock" in str(exc).lower():
                reason = "the port is in use by another program"
            self._state = _State.CLOSED
            raise DongleNotFound(f"cannot open dongle port {self.port}: {reason}") from None
        self._ser = ser
        self._fd = ser.fileno()
        os.set_blocking(self._fd, False)
        self._parser.reset()
        self._credit.reset()
        assert self._loop is not None
        self._loop.add_reader(self._fd, self._on_readable)
        log.debug("opened %s (DTR %s, RTS %s)", self.port, self._lines.dtr, self._lines.rts)

    async def _handshake(self) -> None:
        await self._detect()
        fw = await self._query(Cmd.FW_VERSION, connecting=True)
        assert isinstance(fw, FwVersion)
        if fw.protocol != PROTOCOL_VERSION:
            raise DongleMismatch(f"the dongle on {self.port} speaks protocol {fw.protocol}, "
                                 f"this gateway speaks {PROTOCOL_VERSION}; update one of them")
        board = await self._query(Cmd.BOARD, connecting=True)
        assert isinstance(board, BoardId)
        self.identity = DongleIdentity(fw.protocol, fw.version, board.board, board.chip)
        log.info("dongle on %s: firmware %s, board %s/%s", self.port, fw.version,
                 board.board, board.chip)
        radio = self._radio
        if radio is not None:
            had = await self._query(Cmd.TX_POWER, connecting=True)
            if (self.radio is None and isinstance(had, SettingValue)
                    and had.value != radio.tx_power_dbm):
                # `dongle set --power` lasts until the gateway configures the radio: say so
                log.warning("dongle on %s: transmit power %d dBm replaces the %d dBm it had "
                            "(set `power` in [serial] or --power to choose)", self.port,
                            radio.tx_power_dbm, had.value)
            for cmd, value in radio.settings():
                await self._set(cmd, encode_setting(cmd, value), SettingValue(cmd, value),
                                connecting=True)
            self.radio = radio
            if self._duty is not None:
                await self._set(Cmd.DUTY_LIMIT, encode_duty_limit(self._duty), self._duty,
                                connecting=True)
            on = self._radio_on
            await self._set(Cmd.RADIO_STATE, encode_radio_state(on), RadioState(on),
                            connecting=True)
            log.info("dongle on %s configured: %.4f MHz, %g kHz, SF%d, CR4/%d, sync %#04x, "
                     "%d dBm, preamble %d, radio %s", self.port, radio.frequency_hz / 1e6,
                     radio.bandwidth_hz / 1e3, radio.sf, radio.cr, radio.sync_word,
                     radio.tx_power_dbm, radio.preamble, "on" if on else "off")
        ready = await self._query(Cmd.READY, connecting=True)
        assert isinstance(ready, Ready)
        self._credit.start(ready.free, ready.taken)

    async def _detect(self) -> None:
        """DETECT until the dongle answers (a board that was just plugged in is booting)."""
        assert self._loop is not None
        deadline = self._loop.time() + self.detect_timeout
        while True:
            left = deadline - self._loop.time()
            try:
                await self._request(Cmd.DETECT, encode_detect(), "DETECT",
                                    timeout=max(min(0.5, left), 0.01), connecting=True)
                return
            except DongleTimeout:
                if self._loop.time() >= deadline:
                    raise DongleTimeout(
                        f"no dongle answers on {self.port} (DETECT timed out after "
                        f"{self.detect_timeout:g} s); is it flashed with the tinySSB "
                        "dongle firmware?") from None

    def _drop_port(self, reason: DongleLinkError) -> None:
        """Close the port and fail the pending request (no reconnect here)."""
        if self._ser is not None:
            if self._loop is not None and self._fd >= 0:
                self._loop.remove_reader(self._fd)
                self._loop.remove_writer(self._fd)
            try:
                self._ser.close()
            except (OSError, serial.SerialException) as exc:
                log.debug("closing %s: %s", self.port, exc)
            self._ser = None
            self._fd = -1
        if self._pending is not None and not self._pending[1].done():
            self._pending[1].set_exception(reason)

    def _lost(self, exc: BaseException | None) -> None:
        """The port went away: count what was in flight and start reconnecting."""
        if self._ser is None:
            return
        reason = "end of file" if exc is None else _os_reason(exc)
        was_up = self._state is _State.UP
        self._drop_port(DongleDisconnected(f"the dongle on {self.port} went away ({reason})"))
        if not was_up:
            return  # a handshake in progress fails; its caller retries or reports
        lost = self._credit.queued
        self.counters.tx_lost += lost
        self._credit.reset()
        self._changed.set()
        if self._closing or not self.reconnect:
            self._state = _State.CLOSED
            log.warning("dongle on %s went away (%s)", self.port, reason)
            return
        self._state = _State.CONNECTING
        log.warning("dongle on %s went away (%s); %d queued packets lost; reconnecting",
                    self.port, reason, lost)
        assert self._loop is not None
        self._reconnect_task = self._loop.create_task(self._reconnect_loop())

    async def _reconnect_loop(self) -> None:
        delay, limit = self.backoff
        while not self._closing:
            await asyncio.sleep(delay)
            try:
                await self._connect()
            except DongleLinkError as exc:
                # a missing port is the expected state while unplugged; anything else
                # (a dongle that answers wrongly) deserves attention
                log.log(logging.DEBUG if isinstance(exc, DongleNotFound) else logging.WARNING,
                        "reconnect to %s failed: %s", self.port, exc)
                self.counters.reconnect_failures += 1
                self._state = _State.CONNECTING
                delay = min(delay * 2, limit)
                continue
            self.counters.reconnects += 1
            log.info("dongle on %s is back (reconnect %d)", self.port, self.counters.reconnects)
            self._reconnect_task = None
            return

    # -- I/O ----------------------------------------------------------------------------

    async def _write(self, data: bytes) -> None:
        async with self._write_lock:
            view = memoryview(data)
            while view:
                if self._ser is None:
                    raise DongleDisconnected(f"the dongle on {self.port} is not connected")
                try:
                    n = os.write(self._fd, view)
                except BlockingIOError:
                    await self._writable()
                    continue
                except OSError as exc:
                    self._lost(exc)
                    raise DongleDisconnected(
                        f"the dongle on {self.port} went away ({_os_reason(exc)})") from None
                view = view[n:]

    async def _writable(self) -> None:
        assert self._loop is not None
        fut: asyncio.Future[None] = self._loop.create_future()
        fd = self._fd

        def ready() -> None:
            if not fut.done():
                fut.set_result(None)

        self._loop.add_writer(fd, ready)
        try:
            async with asyncio.timeout(self.answer_timeout):
                await fut
        except TimeoutError:
            raise DongleTimeout(f"the dongle on {self.port} does not read its port") from None
        finally:
            if self._fd == fd:
                self._loop.remove_writer(fd)

    def _on_readable(self) -> None:
        try:
            data = os.read(self._fd, 4096)
        except BlockingIOError:
            return
        except OSError as exc:
            self._lost(exc)
            return
        if not data:
            self._lost(None)
            return
        self._last_heard = time.monotonic()
        for msg in self._parser.feed(data, time.time()):
            self._dispatch(msg)

    def _dispatch(self, msg: Message) -> None:
        if isinstance(msg, Received):
            self._on_received(msg)
            return
        if isinstance(msg, (Ready, TxDone)):
            self._on_credit(msg)
        elif isinstance(msg, ErrorFrame):
            self._on_error(msg)
            return
        elif isinstance(msg, LogLine):
            log.debug("dongle log: %s", msg.text)
            return
        elif isinstance(msg, BleData):
            self.counters.ble_in += 1
            log.debug("DATA_BLE of %d B ignored (LoRa link)", len(msg.packet))
            return
        cmd = _answer_cmd(msg)
        pending = self._pending
        if pending is not None and cmd == pending[0] and not pending[1].done():
            pending[1].set_result(msg)
        elif not isinstance(msg, (Ready, TxDone)):
            log.debug("unsolicited %s", msg)

    def _on_received(self, msg: Received) -> None:
        try:
            self._rx.put_nowait(msg)
        except asyncio.QueueFull:
            self.counters.rx_dropped += 1
            log.debug("rx queue full, dropped %d B", len(msg.packet))
            return
        self.counters.frames_in += 1
        log.debug("rx %d B rssi %s snr %s t=%s", len(msg.packet), msg.rssi, msg.snr,
                  msg.dongle_ms)

    def _on_credit(self, msg: Ready | TxDone) -> None:
        if isinstance(msg, TxDone):
            self.counters.airtime_us += msg.airtime_us
        if self._state is not _State.UP:
            return  # the handshake's own READY query starts the credit
        self._credit.report(msg.free, msg.taken)
        if (self._credit.in_flight and
                time.monotonic() - self._last_data_write > self.credit_poll):
            lost = self._credit.resync()
            self.counters.tx_lost += lost
            log.warning("%d packets never reached the dongle on %s; credit resynchronised",
                        lost, self.port)
        self._changed.set()

    def _on_error(self, msg: ErrorFrame) -> None:
        self.counters.errors += 1
        pending = self._pending
        if pending is not None and msg.cmd == pending[0] and not pending[1].done():
            pending[1].set_exception(DongleRefused(msg, Cmd(pending[0]).name))
            return
        if msg.cmd == Cmd.DATA_LORA:  # QUEUE_FULL, TOO_LONG, RADIO_FAILURE: a packet dropped
            self.counters.tx_refused += 1
            log.warning("dongle on %s dropped a packet: %s", self.port, msg.describe())
            return
        log.warning("dongle on %s reports an error: %s", self.port, msg.describe())


# --- synchronous helpers for the CLI ---------------------------------------------------

def read_info(port: str, *, board: str | None = None, timeout: float = 3.0) -> DongleInfo:
    """Connect, read everything :class:`DongleInfo` holds, disconnect."""

    async def run() -> DongleInfo:
        link = DongleLink(port, board=board, detect_timeout=timeout, reconnect=False)
        async with link:
            return await link.info()

    return asyncio.run(run())


def apply_settings(
    port: str,
    settings: Sequence[tuple[Cmd, int]] = (),
    *,
    duty_permille: int | None = None,
    duty_window_ms: int | None = None,
    radio_on: bool | None = None,
    board: str | None = None,
    timeout: float = 3.0,
) -> DongleInfo:
    """Connect, apply ``settings`` (each verified), then the duty limit and the radio
    state when given, and return what the dongle reports afterwards. A duty limit with
    only one of its two values keeps the other as the dongle has it."""

    async def run() -> DongleInfo:
        link = DongleLink(port, board=board, detect_timeout=timeout, reconnect=False)
        async with link:
            for cmd, value in settings:
                await link.set_value(cmd, value)
            if duty_permille is not None or duty_window_ms is not None:
                now = await link.duty_limit()
                await link.set_duty(DutyLimit(
                    now.permille if duty_permille is None else duty_permille,
                    now.window_ms if duty_window_ms is None else duty_window_ms))
            if radio_on is not None:
                await link.set_radio_state(radio_on)
            return await link.info()

    return asyncio.run(run())
