"""The dongle host protocol (``hardware/PROTOCOL.md``, tssb-dongle version 1), sans I/O.

Every message is one KISS frame whose first unescaped byte is a command (:class:`Cmd`).
This module turns host requests into frame bytes (the ``encode_*`` functions) and the
dongle's byte stream into typed messages (:class:`DongleParser`). It does no I/O and
keeps no clock: the caller passes the host time in.

The dongle-side messages also know how to encode themselves (``to_frame``), which the
tests and the scripted fake dongles use; the gateway itself only sends requests.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from enum import IntEnum

from ..wire.kiss import KissDecoder, kiss_encode
from ..wire.lora import LoRaParams

__all__ = [
    "DETECT_ANSWER",
    "DETECT_MAGIC",
    "MAX_FRAME",
    "MAX_PACKET",
    "PROTOCOL_VERSION",
    "RADIO_SETTINGS",
    "TX_QUEUE",
    "Airtime",
    "BleData",
    "BoardId",
    "Cmd",
    "Detected",
    "DongleParser",
    "DutyLimit",
    "ErrorCode",
    "ErrorFrame",
    "FwVersion",
    "LogLine",
    "Message",
    "ParserCounters",
    "RadioConfig",
    "RadioState",
    "Ready",
    "Received",
    "RxMeta",
    "SettingValue",
    "Stats",
    "TxCredit",
    "TxDone",
    "encode_ble",
    "encode_data",
    "encode_detect",
    "encode_duty_limit",
    "encode_frame",
    "encode_query",
    "encode_radio_state",
    "encode_setting",
    "parse_frame",
]

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
TX_QUEUE = 4
"""Transmit queue slots on the dongle."""
MAX_FRAME = 512
"""Largest unescaped KISS frame, command byte included."""
MAX_PACKET = 251
"""Largest tinySSB packet in one DATA frame (the dongle adds a 4-byte CRC: 255 on air)."""
DETECT_MAGIC = 0x73
DETECT_ANSWER = 0x46


class Cmd(IntEnum):
    """The command byte that starts every frame."""

    DATA_LORA = 0x00
    DATA_BLE = 0x01
    RX_META = 0x02
    FREQUENCY = 0x10
    BANDWIDTH = 0x11
    SF = 0x12
    CR = 0x13
    SYNC_WORD = 0x14
    TX_POWER = 0x15
    PREAMBLE = 0x16
    RADIO_STATE = 0x17
    DUTY_LIMIT = 0x18
    DETECT = 0x20
    FW_VERSION = 0x21
    BOARD = 0x22
    STATS = 0x23
    AIRTIME = 0x24
    READY = 0x25
    TX_DONE = 0x26
    LOG = 0x2F
    ERROR = 0x30


class ErrorCode(IntEnum):
    """The ``code`` of an ERROR frame."""

    UNKNOWN_COMMAND = 1
    BAD_LENGTH = 2
    BAD_VALUE = 3
    QUEUE_FULL = 4
    RADIO_FAILURE = 5
    TOO_LONG = 6
    NO_BLE = 7


ERROR_TEXT: dict[int, str] = {
    ErrorCode.UNKNOWN_COMMAND: "unknown command",
    ErrorCode.BAD_LENGTH: "payload length wrong for the command",
    ErrorCode.BAD_VALUE: "value out of range for this radio (nothing changed)",
    ErrorCode.QUEUE_FULL: "transmit queue full, frame refused",
    ErrorCode.RADIO_FAILURE: "the radio did not answer (the dongle resets it)",
    ErrorCode.TOO_LONG: "DATA frame longer than 251 bytes",
    ErrorCode.NO_BLE: "the dongle runs no BLE peripheral",
}

# struct formats of the single-value settings (big-endian)
_SETTING_FORMAT: dict[Cmd, str] = {
    Cmd.FREQUENCY: ">I",
    Cmd.BANDWIDTH: ">I",
    Cmd.SF: ">B",
    Cmd.CR: ">B",
    Cmd.SYNC_WORD: ">B",
    Cmd.TX_POWER: ">b",
    Cmd.PREAMBLE: ">H",
    Cmd.RADIO_STATE: ">B",
}

RADIO_SETTINGS: tuple[Cmd, ...] = (
    Cmd.FREQUENCY,
    Cmd.BANDWIDTH,
    Cmd.SF,
    Cmd.CR,
    Cmd.SYNC_WORD,
    Cmd.TX_POWER,
    Cmd.PREAMBLE,
)
"""The settings that make up a :class:`RadioConfig`, in the order they are sent."""

_QUERIES = frozenset(
    {*_SETTING_FORMAT, Cmd.DUTY_LIMIT, Cmd.FW_VERSION, Cmd.BOARD, Cmd.STATS, Cmd.AIRTIME,
     Cmd.READY}
)

_META = struct.Struct(">hbI")
_STATS = struct.Struct(">6I")
_AIRTIME_FULL = struct.Struct(">HIII")
_TX_DONE = struct.Struct(">IBB")
_READY = struct.Struct(">BB")
_DUTY = struct.Struct(">HI")


# --- host -> dongle --------------------------------------------------------------------

def encode_frame(cmd: int, payload: bytes = b"") -> bytes:
    """One KISS frame carrying ``cmd`` and ``payload``."""
    if not 0 <= cmd <= 0xFF:
        raise ValueError(f"command must be one byte, got {cmd}")
    if 1 + len(payload) > MAX_FRAME:
        raise ValueError(f"frame of {1 + len(payload)} bytes exceeds {MAX_FRAME}")
    return kiss_encode(bytes((cmd,)) + payload)


def _check_packet(packet: bytes) -> bytes:
    if not 1 <= len(packet) <= MAX_PACKET:
        raise ValueError(f"a packet for the dongle holds 1..{MAX_PACKET} bytes, "
                         f"got {len(packet)}")
    return bytes(packet)


def encode_data(packet: bytes) -> bytes:
    """DATA_LORA: one packet to transmit, without CRC (the dongle appends it)."""
    return encode_frame(Cmd.DATA_LORA, _check_packet(packet))


def encode_ble(packet: bytes) -> bytes:
    """DATA_BLE: one packet to notify the BLE central with."""
    return encode_frame(Cmd.DATA_BLE, _check_packet(packet))


def encode_detect() -> bytes:
    """DETECT request; the dongle answers ``20 46``."""
    return encode_frame(Cmd.DETECT, bytes((DETECT_MAGIC,)))


def encode_query(cmd: Cmd) -> bytes:
    """An empty-payload frame: asks for a setting, the identity, STATS, AIRTIME or READY."""
    if cmd not in _QUERIES:
        raise ValueError(f"{Cmd(cmd).name} cannot be queried")
    return encode_frame(cmd)


def _pack_setting(cmd: Cmd, value: int) -> bytes:
    fmt = _SETTING_FORMAT.get(cmd)
    if fmt is None:
        raise ValueError(f"{Cmd(cmd).name} is not a single-value setting")
    try:
        return struct.pack(fmt, value)
    except struct.error:
        raise ValueError(f"{cmd.name} value {value} does not fit its field") from None


def encode_setting(cmd: Cmd, value: int) -> bytes:
    """Set one single-value setting (FREQUENCY .. RADIO_STATE)."""
    return encode_frame(cmd, _pack_setting(cmd, value))


def encode_radio_state(on: bool) -> bytes:
    """RADIO_STATE 1 (continuous receive) or 0 (sleep)."""
    return encode_setting(Cmd.RADIO_STATE, 1 if on else 0)


def encode_duty_limit(limit: DutyLimit) -> bytes:
    """DUTY_LIMIT: ``permille`` of airtime (0 = no limit) over ``window_ms``."""
    return encode_frame(Cmd.DUTY_LIMIT, limit.payload())


# --- dongle -> host messages -----------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RxMeta:
    """Radio metadata of the DATA_LORA frame that follows."""

    rssi: int
    """dBm"""
    snr: float
    """dB, in quarter-dB steps"""
    dongle_ms: int
    """dongle clock at the end of reception (ms, wraps at 2**32)"""

    def payload(self) -> bytes:
        return _META.pack(self.rssi, round(self.snr * 4), self.dongle_ms)

    def to_frame(self) -> bytes:
        return encode_frame(Cmd.RX_META, self.payload())


@dataclass(frozen=True, slots=True)
class Received:
    """One LoRa packet the dongle received (CRC checked and stripped), with its metadata.

    ``rssi``, ``snr`` and ``dongle_ms`` are ``None`` only if the RX_META frame that
    should precede the packet was lost. ``host_time`` is the host's clock (as passed to
    :meth:`DongleParser.feed`) when the frame was parsed.
    """

    packet: bytes
    rssi: int | None
    snr: float | None
    dongle_ms: int | None
    host_time: float = 0.0

    def to_frame(self) -> bytes:
        """The dongle's RX_META + DATA_LORA frames for this packet."""
        meta = b""
        if self.rssi is not None and self.snr is not None and self.dongle_ms is not None:
            meta = RxMeta(self.rssi, self.snr, self.dongle_ms).to_frame()
        return meta + encode_frame(Cmd.DATA_LORA, self.packet)


@dataclass(frozen=True, slots=True)
class BleData:
    """A packet a BLE central wrote to the dongle's GATT service."""

    packet: bytes

    def to_frame(self) -> bytes:
        return encode_frame(Cmd.DATA_BLE, self.packet)


@dataclass(frozen=True, slots=True)
class SettingValue:
    """A single-value setting now in force (the answer to a set or a query)."""

    cmd: Cmd
    value: int

    def to_frame(self) -> bytes:
        return encode_setting(self.cmd, self.value)


@dataclass(frozen=True, slots=True)
class DutyLimit:
    """The duty-cycle limit the dongle enforces; ``permille`` 0 means no limit."""

    permille: int
    window_ms: int

    def __post_init__(self) -> None:
        if not 0 <= self.permille <= 1000:
            raise ValueError(f"duty limit must be 0..1000 permille, got {self.permille}")
        if not 0 <= self.window_ms <= 0xFFFFFFFF:
            raise ValueError(f"duty window must fit 32 bits, got {self.window_ms}")

    def payload(self) -> bytes:
        return _DUTY.pack(self.permille, self.window_ms)

    def to_frame(self) -> bytes:
        return encode_frame(Cmd.DUTY_LIMIT, self.payload())


@dataclass(frozen=True, slots=True)
class Detected:
    """The dongle's answer to DETECT."""

    def to_frame(self) -> bytes:
        return encode_frame(Cmd.DETECT, bytes((DETECT_ANSWER,)))


@dataclass(frozen=True, slots=True)
class FwVersion:
    protocol: int
    version: str

    def to_frame(self) -> bytes:
        return encode_frame(Cmd.FW_VERSION, bytes((self.protocol,)) + self.version.encode())


@dataclass(frozen=True, slots=True)
class BoardId:
    """Board id and radio chip, from ``heltec_v3/sx1262``."""

    board: str
    chip: str

    def to_frame(self) -> bytes:
        return encode_frame(Cmd.BOARD, f"{self.board}/{self.chip}".encode())


@dataclass(frozen=True, slots=True)
class Stats:
    rx_ok: int
    rx_bad: int
    tx_ok: int
    tx_refused: int
    kiss_errors: int
    uptime_ms: int

    def to_frame(self) -> bytes:
        return encode_frame(Cmd.STATS, _STATS.pack(self.rx_ok, self.rx_bad, self.tx_ok,
                                                   self.tx_refused, self.kiss_errors,
                                                   self.uptime_ms))


@dataclass(frozen=True, slots=True)
class Airtime:
    """The duty-cycle budget: airtime used in the current window and still available."""

    limit_permille: int
    window_ms: int
    used_ms: int
    available_ms: int

    def to_frame(self) -> bytes:
        return encode_frame(Cmd.AIRTIME, _AIRTIME_FULL.pack(
            self.limit_permille, self.window_ms, self.used_ms, self.available_ms))


@dataclass(frozen=True, slots=True)
class Ready:
    """Free slots in the dongle's transmit queue, and the DATA_LORA frames it has taken
    from the link since boot (accepted or refused, modulo 256)."""

    free: int
    taken: int

    def to_frame(self) -> bytes:
        return encode_frame(Cmd.READY, _READY.pack(self.free, self.taken))


@dataclass(frozen=True, slots=True)
class TxDone:
    """A transmission finished: its airtime, then ``free`` and ``taken`` as in READY."""

    airtime_us: int
    free: int
    taken: int

    def to_frame(self) -> bytes:
        return encode_frame(Cmd.TX_DONE, _TX_DONE.pack(self.airtime_us, self.free, self.taken))


@dataclass(frozen=True, slots=True)
class LogLine:
    text: str

    def to_frame(self) -> bytes:
        return encode_frame(Cmd.LOG, self.text.encode())


@dataclass(frozen=True, slots=True)
class ErrorFrame:
    """An ERROR frame: ``code`` (see :class:`ErrorCode`) about command ``cmd``."""

    code: int
    cmd: int
    detail: str = ""

    @property
    def name(self) -> str:
        try:
            return ErrorCode(self.code).name
        except ValueError:
            return f"ERROR_{self.code}"

    @property
    def reason(self) -> str:
        """The code's name and meaning, and the detail if any."""
        text = ERROR_TEXT.get(self.code, "unknown error code")
        extra = f" ({self.detail})" if self.detail else ""
        return f"{self.name}, {text}{extra}"

    def describe(self) -> str:
        """``reason`` prefixed with the command that failed."""
        try:
            what = Cmd(self.cmd).name
        except ValueError:
            what = f"command {self.cmd:#04x}"
        return f"{what}: {self.reason}"

    def to_frame(self) -> bytes:
        return encode_frame(Cmd.ERROR, bytes((self.code, self.cmd)) + self.detail.encode())


@dataclass(frozen=True, slots=True)
class RadioState:
    """The answer to RADIO_STATE: whether the radio receives (on) or sleeps."""

    on: bool

    def to_frame(self) -> bytes:
        return encode_radio_state(self.on)


Message = (Received | BleData | SettingValue | RadioState | DutyLimit | Detected | FwVersion
           | BoardId | Stats | Airtime | Ready | TxDone | LogLine | ErrorFrame)
"""What :class:`DongleParser` yields (RX_META is folded into :class:`Received`)."""


def _ascii(data: bytes) -> str | None:
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        return None


def parse_frame(body: bytes) -> Message | RxMeta | None:
    """Decode one unescaped frame from the dongle; ``None`` when it is not a valid message.

    A DATA_LORA frame parses to a :class:`Received` without metadata;
    :class:`DongleParser` pairs it with the RX_META before it.
    """
    if not body:
        return None
    cmd, payload = body[0], bytes(body[1:])
    n = len(payload)
    if cmd == Cmd.DATA_LORA:
        return Received(payload, None, None, None) if 1 <= n <= MAX_PACKET else None
    if cmd == Cmd.DATA_BLE:
        return BleData(payload) if 1 <= n <= MAX_PACKET else None
    if cmd == Cmd.RX_META:
        if n != _META.size:
            return None
        rssi, snr4, t_ms = _META.unpack(payload)
        return RxMeta(rssi, snr4 / 4, t_ms)
    if cmd == Cmd.RADIO_STATE:
        return RadioState(payload[0] == 1) if n == 1 and payload[0] <= 1 else None
    if cmd in _SETTING_FORMAT:
        setting = Cmd(cmd)
        fmt = _SETTING_FORMAT[setting]
        if n != struct.calcsize(fmt):
            return None
        return SettingValue(setting, struct.unpack(fmt, payload)[0])
    if cmd == Cmd.DUTY_LIMIT:
        if n != _DUTY.size:
            return None
        permille, window = _DUTY.unpack(payload)
        return DutyLimit(permille, window) if permille <= 1000 else None
    if cmd == Cmd.DETECT:
        return Detected() if payload == bytes((DETECT_ANSWER,)) else None
    if cmd == Cmd.FW_VERSION:
        version = _ascii(payload[1:])
        return FwVersion(payload[0], version) if n >= 1 and version is not None else None
    if cmd == Cmd.BOARD:
        text = _ascii(payload)
        if text is None or text.count("/") != 1:
            return None
        board, chip = text.split("/")
        return BoardId(board, chip)
    if cmd == Cmd.STATS:
        return Stats(*_STATS.unpack(payload)) if n == _STATS.size else None
    if cmd == Cmd.AIRTIME:
        return Airtime(*_AIRTIME_FULL.unpack(payload)) if n == _AIRTIME_FULL.size else None
    if cmd == Cmd.READY:
        return Ready(*_READY.unpack(payload)) if n == _READY.size else None
    if cmd == Cmd.TX_DONE:
        return TxDone(*_TX_DONE.unpack(payload)) if n == _TX_DONE.size else None
    if cmd == Cmd.LOG:
        return LogLine(payload.decode("ascii", errors="replace"))
    if cmd == Cmd.ERROR:
        if n < 2:
            return None
        return ErrorFrame(payload[0], payload[1], payload[2:].decode("ascii", errors="replace"))
    return None


@dataclass(slots=True)
class ParserCounters:
    """What :class:`DongleParser` has seen; nothing it drops is lost silently."""

    messages: int = 0
    kiss_dropped: int = 0
    """frames with a bad escape or over 512 bytes, and bytes outside any frame"""
    invalid: int = 0
    """unknown command bytes and payloads of the wrong shape"""
    orphan_meta: int = 0
    """RX_META frames not followed by a DATA_LORA"""
    rx_without_meta: int = 0
    """DATA_LORA frames that arrived without an RX_META before them"""


class DongleParser:
    """Turn the dongle's byte stream, fed in arbitrary chunks, into typed messages.

    Garbage never raises: it is counted in :attr:`counters` and logged at debug level.
    """

    __slots__ = ("_decoder", "_meta", "counters")

    def __init__(self) -> None:
        self._decoder = KissDecoder(max_payload=MAX_FRAME)
        self._meta: RxMeta | None = None
        self.counters = ParserCounters()

    def reset(self) -> None:
        """Forget partial frames and pending metadata (after a reconnect); keep counters."""
        self._decoder.reset()
        self._meta = None

    def feed(self, data: bytes | bytearray | memoryview, now: float = 0.0) -> list[Message]:
        """Consume ``data``; return the messages it completed, in order."""
        out: list[Message] = []
        before = self._decoder.frames_dropped
        for body in self._decoder.feed(data):
            msg = parse_frame(body)
            if msg is None:
                self.counters.invalid += 1
                log.debug("dongle frame dropped: %s", body[:16].hex())
                continue
            if self._meta is not None and not (isinstance(msg, Received)):
                self.counters.orphan_meta += 1
                self._meta = None
            if isinstance(msg, RxMeta):
                self._meta = msg
                continue
            if isinstance(msg, Received):
                meta, self._meta = self._meta, None
                if meta is None:
                    self.counters.rx_without_meta += 1
                    msg = Received(msg.packet, None, None, None, now)
                else:
                    msg = Received(msg.packet, meta.rssi, meta.snr, meta.dongle_ms, now)
            self.counters.messages += 1
            out.append(msg)
        self.counters.kiss_dropped += self._decoder.frames_dropped - before
        return out


# --- flow control ----------------------------------------------------------------------

class TxCredit:
    """The host's transmit credit (PROTOCOL.md, "Flow control").

    The host counts the DATA_LORA frames it sends (``sent``, modulo 256). Every READY or
    TX_DONE reports ``free`` slots and the frames the dongle has ``taken``; the frames
    still on their way when the dongle wrote ``free`` are ``(sent - taken) mod 256``, so
    the credit is ``free - in_flight``. Until the first report the credit is 0.
    """

    __slots__ = ("_free", "_known", "_taken", "sent")

    def __init__(self) -> None:
        self.sent = 0
        self._free = 0
        self._taken = 0
        self._known = False

    def reset(self) -> None:
        """Forget everything (a new connection): no credit until the next report."""
        self.sent = self._free = self._taken = 0
        self._known = False

    def start(self, free: int, taken: int) -> None:
        """The first report of a connection: the dongle's ``taken`` becomes our ``sent``."""
        self.sent = taken
        self.report(free, taken)

    def report(self, free: int, taken: int) -> None:
        """A READY or TX_DONE arrived."""
        self._free = free
        self._taken = taken
        self._known = True

    def resync(self) -> int:
        """Declare the frames in flight lost on the link; returns how many there were.

        Only sound when nothing has been sent for long enough that every frame written
        has reached the dongle and the last report came after that.
        """
        lost = self.in_flight
        self.sent = self._taken
        return lost

    def spend(self) -> None:
        """One DATA_LORA was written."""
        self.sent = (self.sent + 1) % 256

    @property
    def in_flight(self) -> int:
        """Frames sent that the last report had not counted as taken."""
        return (self.sent - self._taken) % 256

    @property
    def queued(self) -> int:
        """Packets in the dongle's queue or on their way to it, as far as the host knows."""
        return max(TX_QUEUE - self._free, 0) + self.in_flight if self._known else 0

    @property
    def credit(self) -> int:
        """DATA_LORA frames the host may send now without overrunning the queue."""
        return max(self._free - self.in_flight, 0)


# --- radio configuration ---------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RadioConfig:
    """The radio settings the dongle reads back (explicit header and no PHY CRC are fixed)."""

    frequency_hz: int
    bandwidth_hz: int
    sf: int
    cr: int
    sync_word: int
    tx_power_dbm: int
    preamble: int

    @classmethod
    def from_params(cls, params: LoRaParams) -> RadioConfig:
        """The dongle settings for ``params``; raises ``ValueError`` if the dongle cannot
        run them (it always uses an explicit header and no PHY CRC)."""
        if not params.explicit_header or params.phy_crc:
            raise ValueError("the dongle always uses an explicit header and no PHY CRC")
        return cls(params.frequency_hz, params.bandwidth_hz, params.sf, params.cr,
                   params.sync_word, params.tx_power_dbm, params.preamble)

    def to_params(self) -> LoRaParams:
        """The same settings as :class:`LoRaParams` (for airtime computations)."""
        return LoRaParams(self.frequency_hz, self.bandwidth_hz, self.sf, self.cr,
                          self.sync_word, self.tx_power_dbm, self.preamble)

    def settings(self) -> list[tuple[Cmd, int]]:
        """``(command, value)`` pairs to send, in :data:`RADIO_SETTINGS` order."""
        values = (self.frequency_hz, self.bandwidth_hz, self.sf, self.cr, self.sync_word,
                  self.tx_power_dbm, self.preamble)
        return list(zip(RADIO_SETTINGS, values, strict=True))

    def frames(self) -> list[bytes]:
        """The setting frames that configure this radio, in order."""
        return [encode_setting(cmd, value) for cmd, value in self.settings()]

    @classmethod
    def from_settings(cls, values: dict[Cmd, int]) -> RadioConfig:
        """Build from read-back values; raises ``KeyError`` naming a missing setting."""
        missing = [c.name for c in RADIO_SETTINGS if c not in values]
        if missing:
            raise KeyError(f"settings not read back: {', '.join(missing)}")
        return cls(*(values[c] for c in RADIO_SETTINGS))
