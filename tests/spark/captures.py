"""Small hand-made captures whose metrics were worked out by hand (see the comments).

Three nodes A, B, C; one feed F of author A. Frames are stand-ins of the right length
(the analysis identifies a frame by its bytes, it does not parse it): 124-byte entry and
chunk frames, a 109-byte claim, a 16-byte WANT. Airtime is 0.2 s for every frame A, B
or C sends except the WANT (0.05 s).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cbor2

from gateway.capture import CaptureWriter, Direction, Record

F = bytes([0x11]) * 32  # the feed of A
G = bytes([0x22]) * 32  # the feed of gateway alice
E1 = b"\x01" * 124  # entry 1 of F
C1 = b"\x02" * 124  # chunk 0 of entry 1 of F
E2 = b"\x03" * 124  # entry 2 of F
C2 = b"\x06" * 124  # chunk 1 of entry 1 in the run "hand-def"
CLAIM = b"\x05" * 109
WANT = b"\x04" * 16
GE = b"\x07" * 120  # alice's entry, on a WebSocket face (no CRC trailer, no airtime)
LORA = "lora0"
RX, TX, STORE, DROP = Direction.RX, Direction.TX, Direction.STORE, Direction.DROP


def _rec(t: float, node: str, d: Direction, face: str | None = LORA, frame: bytes | None = None,
         kind: str | None = None, feed: bytes | None = None, seq: int | None = None,
         cnr: int | None = None, reason: str | None = None, air: float | None = None
         ) -> Record:
    return Record(t, node, d, face, frame, kind, feed, seq, cnr, reason, air=air)


def _write(path: Path, records: list[Record], node: str = "simulator", **meta: Any) -> Path:
    with CaptureWriter(path, node, **meta) as w:
        w.write_all(records)
    return path


# --- run "hand-ref": converges -------------------------------------------------------------
#
# A publishes entry 1 (with one chunk) at t=0 and entry 2 (no chunk) at t=10.
#   entry 1: A holds it at 0.0, B at 4.2 (chunk from A), C at 5.2 (chunk forwarded by B)
#            -> every node at 5.2, spread 5.2
#   entry 2: A at 10.0, B and C at 11.2 -> every node at 11.2, spread 1.2
# convergence time 11.2; share 6/6; delivered pairs (authors left out) 4 with latencies
# 4.2, 5.2, 1.2, 1.2 -> median 2.7, p95 4.2 + 0.85 * 1.0 = 5.05 (linear interpolation)
# curve: pairs held at 0.0, 4.2, 5.2, 10.0, 11.2 (two) -> 1, 2, 3, 4, 6 of 6
# sent: claim 0.2 s (A), want 0.05 s (B), entry 0.6 s (A x2, C), chunk 0.4 s (A, B)
#       = 7 frames, 1.25 s, 109 + 16 + 5 * 124 = 745 bytes; 1.25 s / 4 pairs = 0.3125 s
# duplicates: A hears B's chunk (held since 0.0), B hears C's entry 1 (held since 3.2):
#       2 duplicates, both redundant; entry/chunk frames reaching a node: 6 rx + 2 = 8
#       -> redundancy 2 / 8 = 0.25; both duplicates belong to entry 1
# lost: C loses the claim (collision) and A's chunk (half-duplex); A loses C's entry 1
#       (collision): 3 lost, 2 collisions; drops 5 (3 lost + 2 duplicates)
# frames reaching a node: 8 rx records + 2 duplicates = 10

def hand_ref_records() -> list[Record]:
    return [
        _rec(0.0, "A", STORE, None, kind="entry", feed=F, seq=1),
        _rec(0.0, "A", STORE, None, kind="chunk", feed=F, seq=1, cnr=0),
        _rec(1.0, "A", TX, frame=CLAIM, kind="claim", air=0.2),
        _rec(1.2, "B", RX, frame=CLAIM, kind="claim"),
        _rec(1.2, "C", DROP, frame=CLAIM, reason="collision"),
        _rec(2.0, "B", TX, frame=WANT, kind="want", air=0.05),
        _rec(2.05, "A", RX, frame=WANT, kind="want"),
        _rec(3.0, "A", TX, frame=E1, kind="entry", feed=F, seq=1, air=0.2),
        _rec(3.2, "B", RX, frame=E1, kind="entry", feed=F, seq=1),
        _rec(3.2, "B", STORE, kind="entry", feed=F, seq=1),
        _rec(3.2, "C", RX, frame=E1, kind="entry", feed=F, seq=1),
        _rec(3.2, "C", STORE, kind="entry", feed=F, seq=1),
        _rec(4.0, "A", TX, frame=C1, kind="chunk", feed=F, seq=1, cnr=0, air=0.2),
        _rec(4.2, "B", RX, frame=C1, kind="chunk", feed=F, seq=1, cnr=0),
        _rec(4.2, "B", STORE, kind="chunk", feed=F, seq=1, cnr=0),
        _rec(4.2, "C", DROP, frame=C1, reason="half-duplex"),
        _rec(5.0, "B", TX, frame=C1, kind="chunk", feed=F, seq=1, cnr=0, air=0.2),
        _rec(5.2, "C", RX, frame=C1, kind="chunk", feed=F, seq=1, cnr=0),
        _rec(5.2, "C", STORE, kind="chunk", feed=F, seq=1, cnr=0),
        _rec(5.2, "A", DROP, frame=C1, kind="unknown", reason="no_match"),
        _rec(10.0, "A", STORE, None, kind="entry", feed=F, seq=2),
        _rec(11.0, "A", TX, frame=E2, kind="entry", feed=F, seq=2, air=0.2),
        _rec(11.2, "B", RX, frame=E2, kind="entry", feed=F, seq=2),
        _rec(11.2, "B", STORE, kind="entry", feed=F, seq=2),
        _rec(11.2, "C", RX, frame=E2, kind="entry", feed=F, seq=2),
        _rec(11.2, "C", STORE, kind="entry", feed=F, seq=2),
        _rec(12.0, "C", TX, frame=E1, kind="entry", feed=F, seq=1, air=0.2),
        _rec(12.2, "B", DROP, frame=E1, kind="unknown", reason="no_match"),
        _rec(12.2, "A", DROP, frame=E1, reason="collision"),
    ]


# --- run "hand-def": one chunk never arrives ------------------------------------------------
#
# A publishes entry 1 with two chunks at t=0. B gets all three items by 4.2; C gets the
# entry (2.2) and chunk 1 (4.2) but loses chunk 0 to a collision (3.2).
# -> not converged; share 2/3 (A and B hold it); one stall: C, entry 1, "side chain
#    incomplete", chunk 0 missing, 2 of 3 items, last progress at 4.2
# delivered 1 (B, latency 4.2); sent 3 frames, 0.6 s -> 0.6 s per delivered pair

def hand_def_records() -> list[Record]:
    return [
        _rec(0.0, "A", STORE, None, kind="entry", feed=F, seq=1),
        _rec(0.0, "A", STORE, None, kind="chunk", feed=F, seq=1, cnr=0),
        _rec(0.0, "A", STORE, None, kind="chunk", feed=F, seq=1, cnr=1),
        _rec(2.0, "A", TX, frame=E1, kind="entry", feed=F, seq=1, air=0.2),
        _rec(2.2, "B", RX, frame=E1, kind="entry", feed=F, seq=1),
        _rec(2.2, "B", STORE, kind="entry", feed=F, seq=1),
        _rec(2.2, "C", RX, frame=E1, kind="entry", feed=F, seq=1),
        _rec(2.2, "C", STORE, kind="entry", feed=F, seq=1),
        _rec(3.0, "A", TX, frame=C1, kind="chunk", feed=F, seq=1, cnr=0, air=0.2),
        _rec(3.2, "B", RX, frame=C1, kind="chunk", feed=F, seq=1, cnr=0),
        _rec(3.2, "B", STORE, kind="chunk", feed=F, seq=1, cnr=0),
        _rec(3.2, "C", DROP, frame=C1, reason="collision"),
        _rec(4.0, "A", TX, frame=C2, kind="chunk", feed=F, seq=1, cnr=1, air=0.2),
        _rec(4.2, "B", RX, frame=C2, kind="chunk", feed=F, seq=1, cnr=1),
        _rec(4.2, "B", STORE, kind="chunk", feed=F, seq=1, cnr=1),
        _rec(4.2, "C", RX, frame=C2, kind="chunk", feed=F, seq=1, cnr=1),
        _rec(4.2, "C", STORE, kind="chunk", feed=F, seq=1, cnr=1),
    ]


HAND_META: dict[str, Any] = {"source": "simulator", "scenario": "hand", "seed": 1, "nodes": ["A", "B", "C"],
             "duration": 20.0}


def write_hand_ref(path: Path) -> Path:
    return _write(path, hand_ref_records(), policy="reference", **HAND_META)


def write_hand_def(path: Path) -> Path:
    return _write(path, hand_def_records(), policy="default", **HAND_META)


# --- run "gw-site": two gateway captures in one directory -----------------------------------
#
# alice records publishing entry 1 of G at Unix time 1000.0 and sends it to bob over
# WebSocket; bob stores it at 1000.1 and hears it once more at 1001.0 (redundant).
# Nodes seen: alice, bob. Converged at 1000.1, i.e. 0.1 s after the run's first record
# (1000.0); one delivered pair, latency 0.1; airtime 0 (no radio).

def write_gateway_dir(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    ws_a, ws_b = "ws:bob", "ws:alice"
    alice = [
        _rec(1000.0, "alice", STORE, None, kind="entry", feed=G, seq=1),
        _rec(1000.05, "alice", TX, ws_a, frame=GE, kind="entry", feed=G, seq=1),
        _rec(1000.5, "alice", RX, ws_a, frame=WANT, kind="want"),
    ]
    bob = [
        _rec(1000.1, "bob", RX, ws_b, frame=GE, kind="entry", feed=G, seq=1),
        _rec(1000.1, "bob", STORE, ws_b, kind="entry", feed=G, seq=1),
        _rec(1000.4, "bob", TX, ws_b, frame=WANT, kind="want"),
        _rec(1001.0, "bob", DROP, ws_b, frame=GE, kind="unknown", reason="no_match"),
    ]
    return [_write(directory / "alice.cbor", alice, "alice", source="gateway", t0=999.0),
            _write(directory / "bob.cbor", bob, "bob", source="gateway", t0=999.0)]


# --- run "gw-late": gateways whose captures began after the author had its entry ----------
#
# carol sends entry 1 of H at 2000.0 (no publication recorded: she had it before her
# capture began), dave stores it at 2000.2. No publication in the run: every entry held
# is tracked, first appearance = carol's send (2000.0), author = the first holder, carol.
# Converged at 2000.2, 0.2 s after the run's first record; one delivered pair, latency 0.2.

H = bytes([0x33]) * 32
HE = b"\x08" * 120


def write_late_gateway_dir(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    carol = [_rec(2000.0, "carol", TX, "ws:dave", frame=HE, kind="entry", feed=H, seq=1)]
    dave = [_rec(2000.2, "dave", RX, "ws:carol", frame=HE, kind="entry", feed=H, seq=1),
            _rec(2000.2, "dave", STORE, "ws:carol", kind="entry", feed=H, seq=1)]
    return [_write(directory / "carol.cbor", carol, "carol", source="gateway"),
            _write(directory / "dave.cbor", dave, "dave", source="gateway")]


# --- bad input -----------------------------------------------------------------------------

CUT_META: dict[str, Any] = {"source": "simulator", "scenario": "cut", "policy": "reference", "seed": 1,
            "nodes": ["A", "B"]}


def write_torn(path: Path) -> tuple[Path, int]:
    """A capture cut inside its last record; returns it and that record's offset."""
    records = [
        _rec(0.0, "A", STORE, None, kind="entry", feed=F, seq=1),
        _rec(1.0, "A", TX, frame=E2, kind="entry", feed=F, seq=1, air=0.2),
        _rec(1.2, "B", RX, frame=E2, kind="entry", feed=F, seq=1),
        _rec(1.2, "B", STORE, kind="entry", feed=F, seq=1),
    ]
    _write(path, records, **CUT_META)
    size = path.stat().st_size
    last = len(cbor2.dumps(records[-1].to_map()))
    with open(path, "r+b") as fp:
        fp.truncate(size - 3)
    return path, size - last


def write_corrupt(path: Path) -> tuple[Path, int]:
    """A capture with a byte that is no CBOR item after its second record."""
    _write(path, hand_def_records()[:2], source="simulator", scenario="broken",
           policy="reference")
    offset = path.stat().st_size
    with open(path, "ab") as fp:
        fp.write(b"\xff")
        fp.write(cbor2.dumps(hand_def_records()[2].to_map()))
    return path, offset
