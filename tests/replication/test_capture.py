"""Captures: written during a 3-Node run, read back whole; torn tails and foreign files."""

from __future__ import annotations

from pathlib import Path

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.capture import (
    FORMAT,
    CaptureError,
    CaptureReader,
    CaptureWriter,
    Direction,
    Record,
    RecordEncoder,
    read_capture,
    records_for_rx,
    records_for_tx,
)
from gateway.replication import NewEntry

from .mesh import Mesh, author, converged


def run_captured(path: Path) -> Mesh:
    mesh = Mesh()
    nodes = [mesh.add(n) for n in "abc"]
    mesh.link("a", "b")
    mesh.link("b", "c")
    writer = CaptureWriter(path, "mesh", source="test", t0=0.0, policy="default")

    def on_rx(t: float, node: str, frame: bytes, report: object) -> None:
        writer.write_all(records_for_rx(t, node, "radio", frame, report))  # type: ignore[arg-type]

    mesh.on_rx = on_rx
    mesh.on_tx = lambda t, node, out: writer.write(records_for_tx(t, node, out))
    keys = []
    for i, node in enumerate(nodes):
        keys.append(author(node, i + 1, [b"post %d" % j * (1 + 60 * j) for j in range(3)]))
        for ev in node.drain_events():  # our own entries are stored entries too
            assert isinstance(ev, NewEntry) and ev.own
            writer.write(Record(0.0, node.name, Direction.STORE, kind="entry", feed=ev.fid,
                                seq=ev.seq))
    mesh.run_until(lambda: converged(nodes, {k.fid: 3 for k in keys}), limit=900)
    assert not path.exists()  # still being written under its .part name
    writer.close()
    return mesh


def test_every_stored_entry_appears_in_the_capture(tmp_path: Path) -> None:
    path = tmp_path / "three.cbor"
    mesh = run_captured(path)
    records = list(read_capture(path))
    assert records[0].dir is Direction.META and records[0].meta["policy"] == "default"
    stored = {(r.node, r.feed, r.seq) for r in records
              if r.dir is Direction.STORE and r.kind == "entry"}
    chunks = {(r.node, r.feed, r.seq, r.cnr) for r in records
              if r.dir is Direction.STORE and r.kind == "chunk"}
    for name, node in mesh.nodes.items():
        for fid in node.store.feeds():
            replica = node.store.replica(fid)
            for seq in range(1, replica.max_seq + 1):
                assert (name, fid, seq) in stored
                packet = node.store.read_packet(fid, seq)
                assert packet is not None
    # chunks of replicated (not authored) entries were stored from frames
    assert any(c[0] == "c" for c in chunks)
    txs = [r for r in records if r.dir is Direction.TX]
    rxs = [r for r in records if r.dir in (Direction.RX, Direction.DROP)]
    assert txs and rxs and all(r.frame for r in txs + rxs)
    assert any(r.kind == "claim" for r in txs)
    drops = [r for r in records if r.dir is Direction.DROP]
    assert all(r.reason for r in drops)


def test_torn_last_record_is_ignored_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "c.cbor"
    with CaptureWriter(path, "n1") as w:
        w.write(Record(1.0, "n1", Direction.TX, "radio", b"\x01" * 40, "novelty"))
        w.write(Record(2.0, "n1", Direction.RX, "radio", b"\x02" * 105, "claim", rssi=-91.5,
                       snr=6.25))
    whole = path.read_bytes()
    path.write_bytes(whole[:-7])
    reader = CaptureReader(path)
    records = list(reader)
    assert [r.dir for r in records] == [Direction.META, Direction.TX]
    assert reader.torn == 1
    path.write_bytes(whole)
    last = list(read_capture(path))[-1]
    assert (last.rssi, last.snr, last.kind, last.frame) == (-91.5, 6.25, "claim", b"\x02" * 105)


def test_a_file_that_is_not_a_capture_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.cbor"
    path.write_bytes(cbor2.dumps({"t": 0, "node": "n", "dir": "rx"}))
    with pytest.raises(CaptureError, match="not a tinySSB capture"):
        list(read_capture(path))
    path.write_bytes(b"\xff\xff garbage")
    with pytest.raises(CaptureError):
        list(read_capture(path))


def test_aborted_writer_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "gone.cbor"
    w = CaptureWriter(path, "n")
    w.write(Record(0.5, "n", Direction.TX, "radio", b"x" * 10, "want"))
    w.abort()
    assert list(tmp_path.iterdir()) == []


def test_pcap_export_holds_every_frame(tmp_path: Path) -> None:
    import struct

    from gateway.capture import export_pcap

    path = tmp_path / "c.cbor"
    with CaptureWriter(path, "n1") as w:
        w.write(Record(1.25, "n1", Direction.TX, "radio", b"\x01" * 40, "novelty"))
        w.write(Record(2.5, "n1", Direction.STORE, kind="entry", feed=b"f" * 32, seq=1))
        w.write(Record(3.0, "n1", Direction.DROP, "radio", b"\x02" * 9, "unknown",
                       reason="no_match"))
    n = export_pcap(read_capture(path), tmp_path / "c.pcap")
    data = (tmp_path / "c.pcap").read_bytes()
    assert n == 2
    magic, _, _, _, _, _, linktype = struct.unpack_from("<IHHiIII", data)
    assert (magic, linktype) == (0xA1B2C3D4, 147)
    sec, usec, incl, orig = struct.unpack_from("<IIII", data, 24)
    assert (sec, usec, incl, orig) == (1, 250000, 40, 40)
    assert data[40:80] == b"\x01" * 40
    assert data[80 + 16:] == b"\x02" * 9


_text = st.text(max_size=12)
_opt_float = st.none() | st.floats(allow_nan=True, allow_infinity=True) | st.integers(-5, 5)
_opt_int = st.none() | st.integers(-(2**64), 2**64) | st.booleans()
_opt_bytes = st.none() | st.binary(max_size=300)
_records = st.builds(
    Record, st.floats(0, 1e10) | st.integers(0, 2**40), _text,
    st.sampled_from([d for d in Direction if d is not Direction.META]),
    st.none() | _text, _opt_bytes, st.none() | _text, _opt_bytes, _opt_int, _opt_int,
    st.none() | _text, _opt_float, _opt_float, _opt_float)


@settings(max_examples=300, deadline=None)
@given(_records)
def test_record_encoder_writes_exactly_the_cbor_of_the_record_map(record: Record) -> None:
    encoder = RecordEncoder()
    expected = cbor2.dumps(record.to_map())
    assert encoder.encode(record) == expected
    assert encoder.encode(record) == expected  # again, from its remembered strings
    meta = Record(0.0, "n", Direction.META, meta={"format": FORMAT, "k": [1, 2.5]})
    assert encoder.encode(meta) == cbor2.dumps(meta.to_map())


_drop_items = st.lists(st.tuples(st.sampled_from(["n1", "n2", "n3"]),
                                 st.sampled_from(["collision", "half-duplex"]) | _text,
                                 st.floats(allow_nan=True) | st.integers(-5, 5),
                                 st.floats(-50, 50)), max_size=6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e6) | st.integers(0, 9), st.none() | _text,
                          _opt_bytes, _drop_items), max_size=4))
def test_drops_of_one_frame_encode_as_the_records_one_by_one(
        batches: list[tuple[float, str | None, bytes | None,
                            list[tuple[str, str, float, float]]]]) -> None:
    """The simulator writes a frame's channel drops at its receivers in one go."""
    encoder = RecordEncoder()
    for t, face, frame, items in batches:
        expected = b"".join(cbor2.dumps(Record(t, node, Direction.DROP, face, frame,
                                               reason=reason, rssi=rssi, snr=snr).to_map())
                            for node, reason, rssi, snr in items)
        assert encoder.drops(t, face, frame, items) == expected
        assert encoder.drops(t, face, frame, items) == expected  # from what it learnt


def test_a_zst_capture_is_compressed_and_reads_like_a_plain_one(tmp_path: Path) -> None:
    """Issue 18: captures that can be compressed (a city-100 day is 1.2 GB plain)."""
    records = [Record(float(i), "n", Direction.TX, face="lora", frame=bytes([i % 7]) * 124,
                      kind="entry") for i in range(3000)]
    for name in ("plain.cbor", "small.cbor.zst"):
        with CaptureWriter(tmp_path / name, "n", x=1) as w:
            w.write_all(records)
    plain, small = tmp_path / "plain.cbor", tmp_path / "small.cbor.zst"
    assert small.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"  # zstd frame
    assert small.stat().st_size * 10 < plain.stat().st_size
    assert list(read_capture(small)) == list(read_capture(plain))
    # a gateway killed mid-run leaves a .part file: readable up to the last flushed block
    w = CaptureWriter(tmp_path / "cut.cbor.zst", "n")
    w.write_all(records[:1000])
    w.flush()
    w.write_all(records[1000:1010])
    part = tmp_path / "cut.cbor.zst.part"
    got = list(read_capture(part))
    assert len(got) >= 1001 and got[1:1001] == records[:1000]
    w.abort()
    assert not part.exists()
