"""CRC32 trailer of the firmware (tssbfw.crc32)."""

from hwsupport import Rng
from tssbfw import crc32


def test_check_value() -> None:
    # the CRC-32/ISO-HDLC check value of "123456789"
    assert crc32.crc32(b"123456789") == 0xCBF43926
    assert crc32.crc32_table(b"123456789") == 0xCBF43926


def test_table_matches_native_on_random_data() -> None:
    rng = Rng(99)
    for _ in range(30):
        data = rng.bytes(rng.below(260))
        assert crc32.crc32_table(data) == crc32.crc32(data)


def test_trailer_is_big_endian_and_strip_checks_it() -> None:
    packet = b"tinySSB"
    frame = crc32.add(packet)
    assert frame[-4:] == crc32.crc32(packet).to_bytes(4, "big")
    assert crc32.strip(frame) == packet
    broken = frame[:-1] + bytes((frame[-1] ^ 0x80,))
    assert crc32.strip(broken) is None


def test_strip_rejects_short_frames() -> None:
    assert crc32.strip(crc32.add(b"")) is None  # 00000000: no packet byte
    assert crc32.strip(b"\x01\x02\x03") is None
    assert crc32.strip(crc32.add(b"\x01")) == b"\x01"
