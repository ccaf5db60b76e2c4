"""A simulated LoRa dongle on a pseudo-terminal, running the real firmware command loop.

``SimDongle`` loads the MicroPython firmware's pure-logic modules (``hardware/firmware/
tssbfw``) into CPython and drives its ``Dongle`` with a ``SimRadio`` in place of the
SX126x/SX127x driver. A background thread pumps bytes between the pty master and the
command loop, so a host opens ``SimDongle.path`` exactly as it would open
``/dev/ttyUSB0``::

    with SimDongle(board="heltec_v3") as dongle:
        transport = open_serial(dongle.path)      # the host side under test
        dongle.inject(packet, rssi=-80, snr=7.0)  # a LoRa frame arrives
        dongle.transmitted                        # frames the dongle sent (with CRC)

``path`` is a symlink in a private temporary directory that stays the same across
``unplug()`` / ``replug()``; replugging reboots the dongle (radio off, defaults).

Time: the dongle's clock runs ``1 / time_scale`` times faster than the wall clock. With
``tx_fast`` a transmission ends at the next poll; otherwise it lasts its airtime on that
clock. The radio interface for a channel model: ``on_air(frame)`` is called for every
transmitted frame, ``deliver(frame, rssi, snr_q)`` hands the radio a received frame.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import select
import shutil
import sys
import tempfile
import threading
import time
import tty
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

__all__ = ["BOARDS_DIR", "FIRMWARE_DIR", "SimDongle", "TxRecord", "board_chip", "firmware"]

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[1]
FIRMWARE_DIR = ROOT / "hardware" / "firmware"
BOARDS_DIR = ROOT / "hardware" / "boards"

_POLL_S = 0.002


def firmware() -> Any:
    """Import the firmware package ``tssbfw`` from ``hardware/firmware`` and return it."""
    path = str(FIRMWARE_DIR)
    if path not in sys.path:
        sys.path.insert(0, path)
    import tssbfw.airtime
    import tssbfw.crc32
    import tssbfw.dongle
    import tssbfw.simradio

    return tssbfw


def board_chip(board: str) -> str:
    """The radio chip of ``board`` (from ``hardware/boards/<board>.json``)."""
    path = BOARDS_DIR / f"{board}.json"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in BOARDS_DIR.glob("*.json")))
        raise ValueError(f"unknown board {board!r}; known boards: {known}")
    chip = json.loads(path.read_text())["radio"]["chip"]
    return str(chip)


@dataclass(frozen=True, slots=True)
class TxRecord:
    """One transmission: the LoRa frame (packet + CRC32), its airtime and start time."""

    frame: bytes
    airtime_us: int
    t_ms: int


class SimDongle:
    """A dongle on a pty. Public API: start, path, inject, transmitted, unplug, replug, stop."""

    def __init__(
        self,
        board: str = "heltec_v3",
        tx_fast: bool = True,
        time_scale: float = 1.0,
        on_air: Callable[[bytes], None] | None = None,
    ) -> None:
        if time_scale <= 0:
            raise ValueError(f"time_scale must be positive, got {time_scale}")
        self.board = board
        self.chip = board_chip(board)
        self.tx_fast = tx_fast
        self.time_scale = time_scale
        self.on_air = on_air
        self.transmitted: list[bytes] = []
        self.tx_log: list[TxRecord] = []
        self._fw = firmware()
        self._lock = threading.RLock()
        self._dir: Path | None = None
        self._master = -1
        self._slave = -1
        self._wake_r = -1
        self._wake_w = -1
        self._thread: threading.Thread | None = None
        self._running = False
        self._t0 = time.monotonic()
        self._tx_end_ms = -1
        self.dongle: Any = None
        self.radio: Any = None

    # --- public API ---------------------------------------------------------------

    @property
    def path(self) -> str:
        """The stable device path (a symlink to the current pty slave)."""
        if self._dir is None:
            raise RuntimeError("SimDongle not started")
        return str(self._dir / "ttySIM0")

    def start(self) -> Self:
        if self._running:
            return self
        self._dir = Path(tempfile.mkdtemp(prefix="simdongle-"))
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._running = True
        self._plug()
        self._thread = threading.Thread(target=self._pump, name="simdongle", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            self._unplug()
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)
        self._wake_r = self._wake_w = -1
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def unplug(self) -> None:
        """Pull the cable: the host's reads and writes fail; the dongle loses power."""
        with self._lock:
            self._unplug()

    def replug(self) -> None:
        """Plug it back in: a new pty behind the same path and a freshly booted dongle."""
        with self._lock:
            self._unplug()
            self._plug()
        self._wake()

    @property
    def plugged(self) -> bool:
        return self._master >= 0

    def inject(self, packet: bytes, rssi: int = -80, snr: float = 7.0) -> bool:
        """The radio receives ``packet`` (the sim appends its CRC32 like a real sender).

        Returns False when the dongle was not listening (radio off, transmitting or
        unplugged), as a real frame would then be missed.
        """
        return self.inject_frame(self._fw.crc32.add(bytes(packet)), rssi, snr)

    def inject_frame(self, frame: bytes, rssi: int = -80, snr: float = 7.0) -> bool:
        """The radio receives ``frame`` as it is (CRC32 included or deliberately wrong)."""
        return self.deliver(bytes(frame), rssi, round(snr * 4))

    def deliver(self, frame: bytes, rssi: int, snr_q: int) -> bool:
        """Radio interface for a channel model: a frame arrives with RSSI and SNR/4 dB."""
        with self._lock:
            ok = self.radio is not None and bool(self.radio.deliver(frame, rssi, snr_q))
        self._wake()
        return ok

    def clock_ms(self) -> int:
        """The dongle clock: virtual milliseconds since start (``time_scale`` applied)."""
        return int((time.monotonic() - self._t0) * 1000 / self.time_scale)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- internals ------------------------------------------------------------------

    def _plug(self) -> None:
        assert self._dir is not None
        master, slave = os.openpty()
        tty.setraw(slave)
        os.set_blocking(master, False)
        self._master, self._slave = master, slave
        link = self._dir / "ttySIM0"
        tmp = self._dir / "ttySIM0.new"
        if tmp.is_symlink():
            tmp.unlink()
        os.symlink(os.ttyname(slave), tmp)
        os.replace(tmp, link)
        self._tx_end_ms = -1
        fw = self._fw
        self.radio = fw.simradio.SimRadio(self.chip, on_air=self._on_air)
        self.dongle = fw.dongle.Dongle(self.radio, self.board, self.clock_ms, self._write)
        self.dongle.boot()
        log.debug("sim dongle %s plugged in at %s", self.board, os.ttyname(slave))

    def _unplug(self) -> None:
        if self._dir is not None:  # like a real unplug, the device node goes away
            (self._dir / "ttySIM0").unlink(missing_ok=True)
        for fd in (self._master, self._slave):
            if fd >= 0:
                os.close(fd)
        self._master = self._slave = -1
        self.dongle = None
        self.radio = None

    def _wake(self) -> None:
        if self._wake_w >= 0:
            try:
                os.write(self._wake_w, b"\x00")
            except BlockingIOError:
                pass  # the pump is already due to wake up

    def _write(self, data: bytes) -> None:
        if self._master < 0:
            return
        try:
            os.write(self._master, data)
        except BlockingIOError:
            log.warning("sim dongle: host is not reading, %d bytes lost", len(data))
        except OSError as exc:
            log.debug("sim dongle: write failed: %s", exc)

    def _on_air(self, frame: bytes) -> None:
        dongle = self.dongle
        now = self.clock_ms()
        airtime_us = int(dongle.frame_airtime_us(len(frame))) if dongle is not None else 0
        self.transmitted.append(frame)
        self.tx_log.append(TxRecord(frame, airtime_us, now))
        self._tx_end_ms = now if self.tx_fast else now + (airtime_us + 999) // 1000
        if self.on_air is not None:
            self.on_air(frame)

    def _pump(self) -> None:
        while self._running:
            master = self._master
            fds = [self._wake_r] + ([master] if master >= 0 else [])
            try:
                readable, _, _ = select.select(fds, [], [], _POLL_S)
            except (OSError, ValueError):
                continue  # a descriptor closed under us by unplug(); go round again
            if self._wake_r in readable:
                os.read(self._wake_r, 4096)
            with self._lock:
                if self._master < 0 or self.dongle is None:
                    continue
                if self._master in readable:
                    self._read_host()
                if self.dongle is None:
                    continue
                if self._tx_end_ms >= 0 and self.clock_ms() >= self._tx_end_ms:
                    self._tx_end_ms = -1
                    self.radio.finish_tx()
                self.dongle.poll()

    def _read_host(self) -> None:
        try:
            data = os.read(self._master, 4096)
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno != errno.EIO:
                log.debug("sim dongle: read failed: %s", exc)
            return
        if data:
            self.dongle.feed(data)
