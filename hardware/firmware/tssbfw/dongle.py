"""The dongle's command loop: host protocol in, radio operations and host frames out.

``Dongle(radio, board_id, clock_ms, write)`` is driven from outside: ``feed(data)`` with
bytes from the host, ``poll()`` as often as possible to collect radio events, start
queued transmissions within the duty-cycle budget and notice radio time-outs.
``clock_ms()`` returns a non-decreasing millisecond count from boot; ``write(data)``
sends bytes to the host. Protocol: hardware/PROTOCOL.md.
"""

import struct

from tssbfw import FW_VERSION, PROTOCOL_VERSION, airtime, crc32, kiss
from tssbfw.compat import const
from tssbfw.duty import DutyCycle
from tssbfw.radio import BANDWIDTHS, EV_RX, EV_TX_DONE, RadioError, Settings

DATA_LORA = const(0x00)
DATA_BLE = const(0x01)
RX_META = const(0x02)
FREQUENCY = const(0x10)
BANDWIDTH = const(0x11)
SF = const(0x12)
CR = const(0x13)
SYNC_WORD = const(0x14)
TX_POWER = const(0x15)
PREAMBLE = const(0x16)
RADIO_STATE = const(0x17)
DUTY_LIMIT = const(0x18)
DETECT = const(0x20)
FW_VERSION_CMD = const(0x21)
BOARD = const(0x22)
STATS = const(0x23)
AIRTIME = const(0x24)
READY = const(0x25)
TX_DONE = const(0x26)
LOG = const(0x2F)
ERROR = const(0x30)

UNKNOWN_COMMAND = const(1)
BAD_LENGTH = const(2)
BAD_VALUE = const(3)
QUEUE_FULL = const(4)
RADIO_FAILURE = const(5)
TOO_LONG = const(6)
NO_BLE = const(7)

TX_QUEUE = const(4)
MAX_PACKET = const(251)
MIN_FRAME = const(5)
DETECT_REQUEST = const(0x73)
DETECT_ANSWER = const(0x46)

# setting command -> (Settings attribute, struct format of its value)
_SETTINGS = {
    FREQUENCY: ("frequency", ">I"),
    BANDWIDTH: ("bandwidth", ">I"),
    SF: ("sf", ">B"),
    CR: ("cr", ">B"),
    SYNC_WORD: ("sync_word", ">B"),
    TX_POWER: ("tx_power", ">b"),
    PREAMBLE: ("preamble", ">H"),
}
_SIZES = {">I": 4, ">B": 1, ">b": 1, ">H": 2}


class Dongle:
    def __init__(self, radio, board_id: str, clock_ms, write,
                 queue_len: int = TX_QUEUE) -> None:
        self.radio = radio
        self.board_id = board_id
        self.clock_ms = clock_ms
        self.write = write
        self.queue_len = queue_len
        self.settings = Settings()
        self.duty = DutyCycle()
        self.decoder = kiss.Decoder()
        self.queue = []  # LoRa frames (packet + CRC) waiting or on air, oldest first
        self.radio_on = False
        self.rx_ok = 0
        self.rx_bad = 0
        self.tx_ok = 0
        self.tx_refused = 0
        self.taken = 0  # DATA_LORA frames taken from the link, modulo 256
        self._tx_start = -1  # clock when the frame at queue[0] went on air; -1 = idle
        self._tx_airtime = 0
        self._dirty = False  # settings changed during a transmission
        self._handlers = {
            DATA_LORA: self._data_lora,
            DATA_BLE: self._data_ble,
            RADIO_STATE: self._radio_state,
            DUTY_LIMIT: self._duty_limit,
            DETECT: self._detect,
            FW_VERSION_CMD: self._fw_version,
            BOARD: self._board,
            STATS: self._stats,
            AIRTIME: self._airtime,
            READY: self._ready_query,
        }

    # --- output ---------------------------------------------------------------

    def send(self, cmd: int, payload: bytes = b"") -> None:
        self.write(kiss.encode(bytes((cmd,)) + payload))

    def error(self, code: int, cmd: int, detail: str = "") -> None:
        self.send(ERROR, bytes((code, cmd)) + detail.encode())

    def log(self, text: str) -> None:
        self.send(LOG, text.encode())

    def transmitting(self) -> bool:
        return self._tx_start >= 0

    def free(self) -> int:
        return self.queue_len - len(self.queue)

    def ready(self) -> None:
        self.send(READY, bytes((self.free(), self.taken)))

    def boot(self) -> None:
        """Announce the dongle after power-up or reset: a LOG line and READY."""
        self.log(f"tssb-dongle {FW_VERSION} {self.board_id}/{self.radio.CHIP}")
        self.ready()

    # --- host input -----------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Handle the bytes the host wrote (any chunking)."""
        for frame in self.decoder.feed(data):
            self.handle(frame)

    def handle(self, frame: bytes) -> None:
        """Handle one unescaped frame: command byte and payload."""
        cmd = frame[0]
        payload = frame[1:]
        if cmd in _SETTINGS:
            self._setting(cmd, payload)
            return
        handler = self._handlers.get(cmd)
        if handler is None:
            self.error(UNKNOWN_COMMAND, cmd)
            return
        handler(cmd, payload)

    def _query_only(self, cmd: int, payload: bytes) -> bool:
        if payload:
            self.error(BAD_LENGTH, cmd)
            return False
        return True

    def _valid(self, cmd: int, value: int) -> bool:
        r = self.radio
        if cmd == FREQUENCY:
            return r.FREQ_MIN <= value <= r.FREQ_MAX
        if cmd == BANDWIDTH:
            return value in BANDWIDTHS
        if cmd == SF:
            return r.SF_MIN <= value <= r.SF_MAX
        if cmd == CR:
            return 5 <= value <= 8
        if cmd == TX_POWER:
            return r.POWER_MIN <= value <= r.POWER_MAX
        if cmd == PREAMBLE:
            return value >= 6
        return True  # SYNC_WORD: any byte

    def _setting(self, cmd: int, payload: bytes) -> None:
        attr, fmt = _SETTINGS[cmd]
        if payload:
            if len(payload) != _SIZES[fmt]:
                self.error(BAD_LENGTH, cmd)
                return
            value = struct.unpack(fmt, payload)[0]
            if not self._valid(cmd, value):
                self.error(BAD_VALUE, cmd)
                return
            if getattr(self.settings, attr) != value:
                setattr(self.settings, attr, value)
                if not self._apply(cmd):
                    return
        self.send(cmd, struct.pack(fmt, getattr(self.settings, attr)))

    def _apply(self, cmd: int) -> bool:
        """Bring the radio in line with the settings; False after a radio failure."""
        if not self.radio_on:
            return True
        if self._tx_start >= 0:
            self._dirty = True
            return True
        try:
            self.radio.configure(self.settings)
            self.radio.receive()
        except RadioError as exc:
            self._radio_failed(cmd, exc)
            return False
        return True

    def _radio_state(self, cmd: int, payload: bytes) -> None:
        if payload:
            if len(payload) != 1:
                self.error(BAD_LENGTH, cmd)
                return
            if payload[0] > 1:
                self.error(BAD_VALUE, cmd)
                return
            if not self._switch(payload[0] == 1):
                return
        self.send(cmd, bytes((1 if self.radio_on else 0,)))
        if payload:
            self.ready()

    def _switch(self, on: bool) -> bool:
        if on == self.radio_on:
            return True
        self.radio_on = on
        if self._tx_start >= 0:
            return True  # the transmission in progress ends first (see _tx_done)
        try:
            if on:
                self.radio.configure(self.settings)
                self.radio.receive()
            else:
                self.radio.sleep()
        except RadioError as exc:
            self._radio_failed(RADIO_STATE, exc)
            return False
        return True

    def _duty_limit(self, cmd: int, payload: bytes) -> None:
        if payload:
            if len(payload) != 6:
                self.error(BAD_LENGTH, cmd)
                return
            permille, window = struct.unpack(">HI", payload)
            if permille > 1000 or not 1000 <= window <= 86400000:
                self.error(BAD_VALUE, cmd)
                return
            self.duty.set_limit(permille, window)
        self.send(cmd, struct.pack(">HI", self.duty.permille, self.duty.window_ms))

    def _detect(self, cmd: int, payload: bytes) -> None:
        if len(payload) != 1:
            self.error(BAD_LENGTH, cmd)
        elif payload[0] != DETECT_REQUEST:
            self.error(BAD_VALUE, cmd)
        else:
            self.send(cmd, bytes((DETECT_ANSWER,)))

    def _fw_version(self, cmd: int, payload: bytes) -> None:
        if self._query_only(cmd, payload):
            self.send(cmd, bytes((PROTOCOL_VERSION,)) + FW_VERSION.encode())

    def _board(self, cmd: int, payload: bytes) -> None:
        if self._query_only(cmd, payload):
            self.send(cmd, f"{self.board_id}/{self.radio.CHIP}".encode())

    def _stats(self, cmd: int, payload: bytes) -> None:
        if self._query_only(cmd, payload):
            self.send(cmd, struct.pack(
                ">IIIIII", self.rx_ok & 0xFFFFFFFF, self.rx_bad & 0xFFFFFFFF,
                self.tx_ok & 0xFFFFFFFF, self.tx_refused & 0xFFFFFFFF,
                self.decoder.errors & 0xFFFFFFFF, self.clock_ms() & 0xFFFFFFFF))

    def _airtime(self, cmd: int, payload: bytes) -> None:
        if self._query_only(cmd, payload):
            now = self.clock_ms()
            used = (self.duty.used_us(now) + 999) // 1000
            avail = self.duty.available_us(now)
            if avail != 0xFFFFFFFF:
                avail //= 1000
            self.send(cmd, struct.pack(">HIII", self.duty.permille, self.duty.window_ms,
                                       used, avail))

    def _ready_query(self, cmd: int, payload: bytes) -> None:
        if self._query_only(cmd, payload):
            self.ready()

    def _data_lora(self, cmd: int, payload: bytes) -> None:
        self.taken = (self.taken + 1) & 0xFF
        if not payload:
            code = BAD_LENGTH
        elif len(payload) > MAX_PACKET:
            code = TOO_LONG
        elif len(self.queue) >= self.queue_len:
            code = QUEUE_FULL
        else:
            self.queue.append(crc32.add(payload))
            return
        self.tx_refused += 1
        self.error(code, cmd)

    def _data_ble(self, cmd: int, payload: bytes) -> None:
        # no BLE peripheral in this firmware; PROTOCOL.md makes DATA_BLE optional
        self.error(NO_BLE, cmd)

    # --- radio side -----------------------------------------------------------

    def frame_airtime_us(self, frame_len: int) -> int:
        s = self.settings
        return airtime.airtime_us(s.sf, s.bandwidth, s.cr, s.preamble, frame_len,
                                  self.radio.CHIP == "sx1262")

    def poll(self) -> None:
        """Collect radio events, start the next transmission when allowed."""
        now = self.clock_ms()
        if self._tx_start >= 0 or self.radio_on:
            try:
                event = self.radio.poll()
            except RadioError as exc:
                self._radio_failed(DATA_LORA, exc)
                return
            if event is not None:
                self._event(event, now)
        if self._tx_start >= 0 and now - self._tx_start > 2 * self._tx_airtime // 1000 + 1000:
            self.queue.pop(0)
            self._tx_start = -1
            self._radio_failed(DATA_LORA, RadioError("tx timeout"))
            self.ready()
            return
        if self._tx_start < 0 and self.radio_on and self.queue:
            self._start_tx(now)

    def _event(self, event, now: int) -> None:
        kind = event[0]
        if kind == EV_TX_DONE and self._tx_start >= 0:
            self._tx_done()
        elif kind == EV_RX:
            self._rx(event[1], event[2], event[3], now)

    def _rx(self, frame: bytes, rssi: int, snr_q: int, now: int) -> None:
        packet = crc32.strip(frame) if len(frame) >= MIN_FRAME else None
        if packet is None:
            self.rx_bad += 1
            return
        self.rx_ok += 1
        rssi = max(-32768, min(32767, rssi))
        snr_q = max(-128, min(127, snr_q))
        self.send(RX_META, struct.pack(">hbI", rssi, snr_q, now & 0xFFFFFFFF))
        self.send(DATA_LORA, packet)

    def _tx_done(self) -> None:
        self.queue.pop(0)
        self._tx_start = -1
        self.tx_ok += 1
        self.send(TX_DONE, struct.pack(">IBB", self._tx_airtime, self.free(), self.taken))
        try:
            if not self.radio_on:
                self.radio.sleep()
            elif self._dirty:
                self.radio.configure(self.settings)
                self.radio.receive()
            else:
                self.radio.receive()
        except RadioError as exc:
            self._radio_failed(DATA_LORA, exc)
        self._dirty = False

    def _start_tx(self, now: int) -> None:
        frame = self.queue[0]
        at = self.frame_airtime_us(len(frame))
        if self.duty.never_fits(at):
            self.queue.pop(0)
            self.tx_refused += 1
            self.error(TOO_LONG, DATA_LORA)
            self.ready()
            return
        if not self.duty.fits(now, at):
            return
        try:
            self.radio.transmit(frame)
        except RadioError as exc:
            self.queue.pop(0)  # dropped, so that a broken radio cannot loop on it
            self._radio_failed(DATA_LORA, exc)
            self.ready()
            return
        self.duty.record(now, at)
        self._tx_start = now
        self._tx_airtime = at

    def _radio_failed(self, cmd: int, exc: Exception) -> None:
        """Report a radio failure, reset the radio and restore its state."""
        self.error(RADIO_FAILURE, cmd, str(exc))
        self._tx_start = -1
        self._dirty = False
        try:
            self.radio.reset()
            if self.radio_on:
                self.radio.configure(self.settings)
                self.radio.receive()
        except RadioError as again:
            self.radio_on = False
            self.log(f"radio off after failed reset: {again}")
