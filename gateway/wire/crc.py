"""The CRC32 trailer that LoRa, UDP and Bluetooth-SPP frames carry after each packet.

The checksum is the standard reflected CRC-32 (ISO-HDLC, as computed by
:func:`zlib.crc32`) over the packet alone, appended most significant byte first.
BLE and WebSocket links carry no trailer.
"""

from __future__ import annotations

import zlib

from .errors import FrameError

__all__ = ["CRC_LEN", "add_crc", "crc32_trailer", "strip_crc"]

CRC_LEN = 4

Buffer = bytes | bytearray | memoryview


def crc32_trailer(packet: Buffer) -> bytes:
    """Return the 4-byte big-endian CRC32 of ``packet``."""
    return zlib.crc32(packet).to_bytes(CRC_LEN, "big")


def add_crc(packet: Buffer) -> bytes:
    """Return ``packet`` followed by its CRC32 trailer."""
    return bytes(packet) + crc32_trailer(packet)


# the last frame whose trailer checked out (a bytes object, held), its packet and the
# minimum length it was checked against: every radio around a sender checks the very same
# frame object one after the other in a simulated mesh, and then all of them share one
# packet object (whose hash, once computed, is kept for every dict it is looked up in)
_last_stripped: tuple[object, bytes, int] = (None, b"", 0)


def strip_crc(frame: Buffer, *, min_packet_len: int = 1) -> bytes:
    """Check the CRC32 trailer of ``frame`` and return the packet in front of it.

    Raises :class:`FrameError` when the frame holds fewer than ``min_packet_len``
    packet bytes plus the trailer, or when the trailer does not match. The default of
    one byte rejects a bare ``00000000`` (the CRC of an empty packet).
    """
    global _last_stripped
    last = _last_stripped  # (one read of a tuple: safe across threads too)
    if last[0] is frame and last[2] == min_packet_len:
        return last[1]
    data = bytes(frame)
    if len(data) < CRC_LEN + min_packet_len:
        raise FrameError(
            f"frame of {len(data)} bytes is too short for a {min_packet_len}-byte packet "
            f"and a {CRC_LEN}-byte CRC"
        )
    packet, trailer = data[:-CRC_LEN], data[-CRC_LEN:]
    expected = crc32_trailer(packet)
    if trailer != expected:
        raise FrameError(f"CRC mismatch: frame says {trailer.hex()}, packet gives {expected.hex()}")
    if type(frame) is bytes:  # immutable: the same object is the same frame
        _last_stripped = (frame, packet, min_packet_len)
    return packet
