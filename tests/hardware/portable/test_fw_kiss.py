"""KISS framing of the firmware (tssbfw.kiss): escaping, streaming, error counting."""

from hwsupport import Rng
from tssbfw import kiss


def test_encode_escapes_fend_and_fesc() -> None:
    # the example of wire-compat.md section 5
    assert kiss.encode(bytes.fromhex("01c0db02")) == bytes.fromhex("c001dbdcdbdd02c0")


def test_round_trip_random_payloads_in_random_chunks() -> None:
    rng = Rng(7)
    payloads = [rng.bytes(1 + rng.below(300)) for _ in range(40)]
    payloads.append(b"\xc0\xdb\xc0\xdb")
    stream = b"".join(kiss.encode(p) for p in payloads)
    dec = kiss.Decoder()
    got = []
    pos = 0
    while pos < len(stream):
        step = 1 + rng.below(64)
        got += dec.feed(stream[pos:pos + step])
        pos += step
    assert got == payloads
    assert dec.errors == 0
    assert dec.frames == len(payloads)


def test_empty_frames_are_ignored() -> None:
    dec = kiss.Decoder()
    assert dec.feed(b"\xc0\xc0\xc0\x01\xc0\xc0") == [b"\x01"]
    assert dec.errors == 0


def test_bytes_before_first_fend_are_counted() -> None:
    dec = kiss.Decoder()
    assert dec.feed(b"junk\xc0\x05\xc0") == [b"\x05"]
    assert dec.errors == 1


def test_bad_escape_and_trailing_fesc_are_dropped() -> None:
    dec = kiss.Decoder()
    assert dec.feed(b"\xc0\x01\xdb\x02\xc0\xc0\x01\xdb\xc0\xc0\x07\xc0") == [b"\x07"]
    assert dec.errors == 2


def test_max_length_is_512() -> None:
    dec = kiss.Decoder()
    ok = bytes(512)
    assert dec.feed(kiss.encode(ok)) == [ok]
    assert dec.feed(kiss.encode(bytes(513)) + kiss.encode(b"\x01")) == [b"\x01"]
    assert dec.errors == 1
    # a long run of escaped bytes cannot grow the buffer beyond the limit
    dec.feed(b"\xc0" + b"\xdb\xdc" * 5000)
    assert len(dec._buf) == 0
    assert dec.feed(b"\xc0") == []
    assert dec.errors == 2


def test_reset_forgets_partial_frame() -> None:
    dec = kiss.Decoder()
    dec.feed(b"\xc0\x01\x02")
    dec.reset()
    assert dec.feed(b"\xc0\x03\xc0") == [b"\x03"]
