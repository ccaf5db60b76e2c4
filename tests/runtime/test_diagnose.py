"""The gateway log explains why two nodes do not replicate: from the frames it hears."""

from __future__ import annotations

from gateway.replication.events import Drop, FrameKind, RxReport
from gateway.runtime.diagnose import FaceWatch
from gateway.wire.crc import add_crc
from gateway.wire.goset import make_claim, xor_keys

OURS = sorted(bytes([i]) * 32 for i in range(1, 11))
THEIRS = sorted(OURS + [bytes([0x77]) * 32, bytes([0x78]) * 32])


def claim_frame(keys: list[bytes]) -> bytes:
    return add_crc(make_claim(keys, 0, len(keys) - 1).encode())


def hear(watch: FaceWatch, keys: list[bytes], now: float) -> None:
    watch.received("udp", claim_frame(keys), True, RxReport(FrameKind.CLAIM), now)


def test_differing_sets_are_reported_then_warned_about_then_cleared() -> None:
    watch = FaceWatch()
    watch.opened("udp", 0.0)
    state = xor_keys(OURS)
    hear(watch, THEIRS, 1.0)
    assert watch.findings(10.0, len(OURS), state, 30.0) == [
        (False, ("face udp: GOSET differs: the peer claims 12 feeds, we hold 10; "
                "exchanging keys"))]
    hear(watch, THEIRS, 20.0)
    assert watch.findings(20.0, len(OURS), state, 30.0) == []  # said already
    hear(watch, THEIRS, 40.0)
    (warn, text), = watch.findings(40.0, len(OURS), state, 30.0)
    assert warn and "still differs after 30 s" in text and "allow list" in text
    hear(watch, OURS, 50.0)
    assert watch.findings(50.0, len(OURS), state, 30.0) == [
        (False, "face udp: GOSET in sync again (10 feeds)")]


def test_silence_and_drops_are_summarised_once() -> None:
    watch = FaceWatch()
    watch.opened("lora", 0.0)
    for _ in range(3):
        watch.received("lora", b"\x00" * 30, False, RxReport(FrameKind.UNKNOWN, Drop.CRC), 1.0)
    watch.received("lora", b"\x00" * 30, False, RxReport(FrameKind.ENTRY, Drop.BAD_ENTRY), 1.0)
    watch.received("lora", b"\x00" * 30, False, RxReport(FrameKind.UNKNOWN, Drop.NO_MATCH), 1.0)
    assert watch.findings(5.0, 0, bytes(32), 30.0) == [
        (False, "face lora: 4 frames dropped (crc 3, bad_entry 1)")]
    assert watch.findings(70.0, 0, bytes(32), 30.0) == [
        (False, "face lora: nothing heard for 69 s")]
    assert watch.findings(80.0, 0, bytes(32), 30.0) == []
    assert watch.counts() == {"lora": {"rx": 5, "tx": 0}}
