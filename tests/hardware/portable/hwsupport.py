"""Shared helpers of the portable firmware tests (they run under CPython and MicroPython).

Plain functions and asserts only: no pytest, no typing, no f-strings with "=" and no
modules MicroPython lacks. ``tests/hardware/mp_runner.mjs`` copies this directory, the
firmware package and the protocol vectors into MicroPython's file system.
"""

import json
import sys

_HERE = __file__.rsplit("/", 1)[0] if "/" in __file__ else "."
_FW = _HERE + "/../../../hardware/firmware"
if _FW not in sys.path:
    sys.path.insert(0, _FW)

from tssbfw import kiss
from tssbfw.dongle import Dongle
from tssbfw.radio import EV_RX, EV_TX_DONE  # noqa: F401
from tssbfw.simradio import TX, SimRadio

CHIPS = {"heltec_v3": "sx1262", "tbeam_sx1262": "sx1262", "tbeam_sx1276": "sx1276",
         "heltec_v2": "sx1276"}

_vectors = []


def vectors() -> dict:
    """The protocol vectors (hardware/vectors/protocol-vectors.json)."""
    if not _vectors:
        for path in (_HERE + "/protocol-vectors.json",
                     _HERE + "/../../../hardware/vectors/protocol-vectors.json"):
            try:
                with open(path) as f:
                    _vectors.append(json.load(f))
                break
            except OSError:
                continue
    return _vectors[0]


def frame_named(name: str) -> dict:
    for frame in vectors()["frames"]:
        if frame["name"] == name:
            return frame
    raise KeyError(name)


class Rng:
    """A small deterministic generator (xorshift32), the same on both interpreters."""

    def __init__(self, seed: int) -> None:
        self.state = seed or 1

    def next(self) -> int:
        x = self.state
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        self.state = x
        return x

    def below(self, n: int) -> int:
        return self.next() % n

    def bytes(self, n: int) -> bytes:
        return bytes(self.next() & 0xFF for _ in range(n))


class Harness:
    """A Dongle on a SimRadio with a hand-driven clock; collects what it writes."""

    def __init__(self, board: str = "heltec_v3") -> None:
        self.now = 0
        self.out = bytearray()
        self.radio = SimRadio(CHIPS[board])
        self.dongle = Dongle(self.radio, board, self.clock, self._write)
        self.dongle.boot()
        self.boot_output = self.take()
        self.checked_tx = 0

    def clock(self) -> int:
        return self.now

    def _write(self, data: bytes) -> None:
        self.out.extend(data)

    def take(self) -> bytes:
        data = bytes(self.out)
        self.out = bytearray()
        return data

    def host(self, data: bytes) -> None:
        self.dongle.feed(data)
        self.dongle.poll()

    def command(self, cmd: int, payload: bytes = b"") -> list:
        """Send one command frame; return the frames the dongle answered (unescaped)."""
        self.host(kiss.encode(bytes((cmd,)) + payload))
        return frames_of(self.take())

    def advance(self, ms: int) -> None:
        self.now += ms
        self.dongle.poll()


def frames_of(data: bytes) -> list:
    dec = kiss.Decoder()
    got = dec.feed(data)
    assert dec.errors == 0
    return got


def run_session(session: dict) -> None:
    """Replay one vectors session against the firmware (step semantics: the file's doc)."""
    h = Harness(session["board"])
    name = session["name"]
    for i, step in enumerate(session["steps"]):
        where = f"{name} step {i}"
        if "host" in step:
            h.host(bytes.fromhex(step["host"]))
        elif "dongle" in step:
            want = bytes.fromhex(step["dongle"])
            got = bytes(h.out[:len(want)])
            assert got == want, f"{where}: dongle wrote {bytes(h.out).hex()}, expected {step['dongle']}"
            h.out = h.out[len(want):]
        elif "air_tx" in step:
            assert h.radio.state == TX, f"{where}: radio not transmitting"
            assert len(h.radio.sent) == h.checked_tx + 1, f"{where}: {len(h.radio.sent)} sent"
            assert h.radio.sent[-1].hex() == step["air_tx"], where
            h.checked_tx += 1
        elif "air_tx_done" in step:
            assert h.radio.finish_tx(), where
            h.dongle.poll()
        elif "air_rx" in step:
            h.radio.deliver(bytes.fromhex(step["air_rx"]), step["rssi"], step["snr_q"])
            h.dongle.poll()
        elif "clock_ms" in step:
            h.now = step["clock_ms"]
            h.dongle.poll()
        else:
            raise AssertionError(f"{where}: unknown step {step}")
    assert not h.out, f"{name}: unexpected output {bytes(h.out).hex()}"
    assert len(h.radio.sent) == h.checked_tx, f"{name}: unexpected transmissions"
