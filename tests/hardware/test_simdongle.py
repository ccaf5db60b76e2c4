"""The simulated dongle (firmware_sim.dongle.SimDongle) over a real pseudo-terminal."""

from __future__ import annotations

import os
import select
import struct
import termios
import time
import tty

import pytest

from firmware_sim.dongle import SimDongle
from gateway.wire.crc import add_crc
from gateway.wire.kiss import KissDecoder, kiss_encode


class Host:
    """A minimal host: opens the device path raw and reads KISS frames."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(self.fd, termios.TCSANOW)  # TCSAFLUSH would drop the boot output
        self.decoder = KissDecoder()
        self.frames: list[bytes] = []

    def send(self, cmd: int, payload: bytes = b"") -> None:
        os.write(self.fd, kiss_encode(bytes((cmd,)) + payload))

    def expect(self, cmd: int, timeout: float = 3.0) -> bytes:
        """Read until a frame with command ``cmd`` arrives; return it (others are kept)."""
        deadline = time.monotonic() + timeout
        while True:
            for i, frame in enumerate(self.frames):
                if frame[0] == cmd:
                    return self.frames.pop(i)
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no frame {cmd:#04x}; got {self.frames}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                self.frames += self.decoder.feed(os.read(self.fd, 4096))

    def close(self) -> None:
        os.close(self.fd)


@pytest.fixture
def sim() -> SimDongle:
    with SimDongle(board="heltec_v3", tx_fast=True) as dongle:
        yield dongle


def test_detect_boot_ready_and_board(sim: SimDongle) -> None:
    host = Host(sim.path)
    assert host.expect(0x25) == b"\x25\x04\x00"  # boot READY waited in the pty
    host.send(0x20, b"\x73")
    assert host.expect(0x20) == b"\x20\x46"
    host.send(0x22)
    assert host.expect(0x22) == b"\x22heltec_v3/sx1262"
    host.close()


def test_inject_and_transmit(sim: SimDongle) -> None:
    host = Host(sim.path)
    host.send(0x17, b"\x01")
    assert host.expect(0x17) == b"\x17\x01"
    packet = bytes(range(120))
    assert sim.inject(packet, rssi=-91, snr=-2.5)
    meta = host.expect(0x02)
    assert struct.unpack(">hb", meta[1:4]) == (-91, -10)
    assert host.expect(0x00) == b"\x00" + packet
    assert sim.inject_frame(b"\x01\x02\x03\x04\x05\x06")  # bad CRC: counted, dropped
    host.send(0x00, b"hello")
    done = host.expect(0x26)
    assert sim.transmitted == [add_crc(b"hello")]
    assert sim.tx_log[0].airtime_us == struct.unpack(">I", done[1:5])[0]
    host.send(0x23)
    stats = struct.unpack(">6I", host.expect(0x23)[1:])
    assert stats[:4] == (1, 1, 1, 0)
    host.close()


def test_unplug_and_replug_reboot(sim: SimDongle) -> None:
    path = sim.path
    host = Host(path)
    host.send(0x17, b"\x01")
    host.expect(0x17)
    sim.unplug()
    assert not sim.inject(b"lost")
    with pytest.raises(OSError):
        for _ in range(50):  # EIO (or EOF) once the master side is gone
            if not os.read(host.fd, 100):
                raise OSError("EOF")
            time.sleep(0.01)
    host.close()
    sim.replug()
    assert sim.path == path
    host = Host(path)
    host.send(0x17)
    assert host.expect(0x17) == b"\x17\x00"  # rebooted: radio off
    host.close()


def test_transmission_takes_its_airtime() -> None:
    with SimDongle(board="tbeam_sx1276", tx_fast=False, time_scale=1.0) as sim:
        host = Host(sim.path)
        host.send(0x17, b"\x01")
        host.expect(0x17)
        start = time.monotonic()
        host.send(0x00, bytes(120))  # 124 bytes on air: 205 ms at SF7/125 kHz
        done = host.expect(0x26)
        assert struct.unpack(">I", done[1:5])[0] == 205056
        assert time.monotonic() - start >= 0.2
        host.close()


def test_on_air_callback_and_unknown_board() -> None:
    heard: list[bytes] = []
    with SimDongle(board="heltec_v2", on_air=heard.append) as sim:
        host = Host(sim.path)
        host.send(0x17, b"\x01")
        host.send(0x00, b"abc")
        host.expect(0x26)
        assert heard == [add_crc(b"abc")]
        host.close()
    with pytest.raises(ValueError, match="known boards"):
        SimDongle(board="nope")
