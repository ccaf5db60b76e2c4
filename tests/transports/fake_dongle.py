"""A small scripted dongle on a pseudo-terminal, written from PROTOCOL.md with our codec.

It answers the handshake, settings and queries, keeps a 4-slot transmit queue with READY
and TX_DONE (``free``, ``taken``), refuses with QUEUE_FULL, and can be unplugged and
plugged back (a new pty behind the same symlink). The tests that matter run against the
real firmware loop in ``firmware_sim.dongle.SimDongle``; this fake lets the link tests
script situations the firmware makes hard to reach (silence, odd read-backs, a slow
transmitter).
"""

from __future__ import annotations

import os
import pty
import select
import struct
import threading
import tty
from pathlib import Path
from typing import Self

from gateway.transports.dongle_proto import (
    TX_QUEUE,
    Airtime,
    BoardId,
    Cmd,
    Detected,
    DutyLimit,
    ErrorCode,
    ErrorFrame,
    FwVersion,
    RadioState,
    Ready,
    Received,
    SettingValue,
    Stats,
    TxDone,
    encode_frame,
)
from gateway.wire.crc import add_crc
from gateway.wire.kiss import KissDecoder

_FORMATS = {Cmd.FREQUENCY: ">I", Cmd.BANDWIDTH: ">I", Cmd.SF: ">B", Cmd.CR: ">B",
            Cmd.SYNC_WORD: ">B", Cmd.TX_POWER: ">b", Cmd.PREAMBLE: ">H"}


class FakeDongle:
    def __init__(self, path: Path, *, silent: bool = False, tx_seconds: float = 0.0,
                 misread: dict[Cmd, int] | None = None, swallow_data: int = 0) -> None:
        self.path = path
        self.silent = silent
        self.tx_seconds = tx_seconds
        self.misread = misread or {}
        self.swallow_data = swallow_data  # DATA_LORA frames to lose "on the USB link"
        self.settings: dict[Cmd, int] = {}
        self.radio_on = False
        self.duty = DutyLimit(10, 3_600_000)
        self.transmitted: list[bytes] = []
        self.host_frames: list[bytes] = []
        self.refused = 0
        self.boots = 0
        self._queue: list[bytes] = []
        self._taken = 0
        self._tx_end: float | None = None
        self._lock = threading.Lock()
        self._master = -1
        self._slave = -1
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- control from the test ------------------------------------------------------------

    def start(self) -> Self:
        self._plug()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        with self._lock:
            self._close_pty()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def inject(self, packet: bytes, rssi: int = -80, snr: float = 7.0) -> None:
        with self._lock:
            self._write(Received(packet, rssi, snr, 1234).to_frame())

    def unplug(self) -> None:
        with self._lock:
            self._close_pty()

    def replug(self) -> None:
        with self._lock:
            self._plug()

    # -- the dongle -----------------------------------------------------------------------

    def _plug(self) -> None:
        """Boot: a fresh pty behind ``path``, defaults, empty queue."""
        self._master, self._slave = pty.openpty()
        tty.setraw(self._slave)
        tmp = self.path.with_suffix(".new")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(os.ttyname(self._slave))
        tmp.replace(self.path)
        self._decoder = KissDecoder(max_payload=512)
        self._queue.clear()
        self._taken = 0
        self._tx_end = None
        self.radio_on = False
        self.settings = {Cmd.FREQUENCY: 868_300_000, Cmd.BANDWIDTH: 125_000, Cmd.SF: 7,
                         Cmd.CR: 5, Cmd.SYNC_WORD: 0x58, Cmd.TX_POWER: 14, Cmd.PREAMBLE: 8}
        self.duty = DutyLimit(10, 3_600_000)
        self.boots += 1

    def _close_pty(self) -> None:
        if self._master >= 0:
            self.path.unlink(missing_ok=True)
            os.close(self._master)
            os.close(self._slave)
            self._master = self._slave = -1

    def _write(self, data: bytes) -> None:
        if self._master >= 0 and not self.silent:
            os.write(self._master, data)

    def _run(self) -> None:
        import time
        while not self._stop.is_set():
            with self._lock:
                fd = self._master
            if fd < 0:
                time.sleep(0.005)
                continue
            end = self._tx_end
            timeout = 0.02 if end is None else min(max(end - time.monotonic(), 0.0), 0.02)
            try:
                readable, _, _ = select.select([fd], [], [], timeout)
            except (OSError, ValueError):
                continue
            with self._lock:
                if self._master != fd:
                    continue
                if readable:
                    try:
                        data = os.read(fd, 4096)
                    except OSError:
                        data = b""
                    for body in self._decoder.feed(data):
                        self._handle(body)
                self._transmit(time.monotonic())

    def _transmit(self, now: float) -> None:
        if self._tx_end is not None and now >= self._tx_end:
            self.transmitted.append(add_crc(self._queue.pop(0)))
            self._tx_end = None
            self._write(TxDone(205_056, TX_QUEUE - len(self._queue), self._taken).to_frame())
        if self._tx_end is None and self._queue and self.radio_on:
            self._tx_end = now + self.tx_seconds

    def _handle(self, body: bytes) -> None:
        cmd, payload = body[0], body[1:]
        self.host_frames.append(body)
        if cmd == Cmd.DATA_LORA and self.swallow_data:
            self.swallow_data -= 1
            return
        if cmd == Cmd.DATA_LORA:
            self._taken = (self._taken + 1) % 256
            if len(self._queue) >= TX_QUEUE:
                self.refused += 1
                self._write(ErrorFrame(ErrorCode.QUEUE_FULL, cmd).to_frame())
            else:
                self._queue.append(payload)
            return
        if cmd in _FORMATS:
            setting = Cmd(cmd)
            if payload:
                self.settings[setting] = struct.unpack(_FORMATS[setting], payload)[0]
            value = self.misread.get(setting, self.settings[setting])
            self._write(SettingValue(setting, value).to_frame())
        elif cmd == Cmd.RADIO_STATE:
            if payload:
                self.radio_on = payload[0] == 1
            self._write(RadioState(self.radio_on).to_frame())
            if payload:
                self._write(self._ready().to_frame())
        elif cmd == Cmd.DUTY_LIMIT:
            if payload:
                self.duty = DutyLimit(*struct.unpack(">HI", payload))
            self._write(self.duty.to_frame())
        elif cmd == Cmd.DETECT:
            self._write(Detected().to_frame())
        elif cmd == Cmd.FW_VERSION:
            self._write(FwVersion(1, "fake-1").to_frame())
        elif cmd == Cmd.BOARD:
            self._write(BoardId("fake", "sx1262").to_frame())
        elif cmd == Cmd.STATS:
            self._write(Stats(0, 0, len(self.transmitted), self.refused, 0, 42).to_frame())
        elif cmd == Cmd.AIRTIME:
            self._write(Airtime(self.duty.permille, self.duty.window_ms, 0, 36_000).to_frame())
        elif cmd == Cmd.READY:
            self._write(self._ready().to_frame())
        else:
            self._write(encode_frame(Cmd.ERROR, bytes((ErrorCode.UNKNOWN_COMMAND, cmd))))

    def _ready(self) -> Ready:
        return Ready(TX_QUEUE - len(self._queue), self._taken)
