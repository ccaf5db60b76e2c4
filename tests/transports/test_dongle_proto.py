"""The sans-I/O codec of the dongle protocol, against PROTOCOL.md and the shared vectors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.transports.dongle_proto import (
    MAX_PACKET,
    RADIO_SETTINGS,
    TX_QUEUE,
    Airtime,
    BleData,
    BoardId,
    Cmd,
    Detected,
    DongleParser,
    DutyLimit,
    ErrorCode,
    ErrorFrame,
    FwVersion,
    LogLine,
    Message,
    RadioConfig,
    RadioState,
    Ready,
    Received,
    RxMeta,
    SettingValue,
    Stats,
    TxCredit,
    TxDone,
    encode_ble,
    encode_data,
    encode_detect,
    encode_duty_limit,
    encode_query,
    encode_radio_state,
    encode_setting,
    parse_frame,
)
from gateway.wire.kiss import kiss_encode, kiss_unescape
from gateway.wire.lora import PROFILES, LoRaParams, profile

FAST = settings(max_examples=200, deadline=None)
VECTORS = Path(__file__).resolve().parents[2] / "hardware" / "vectors" / "protocol-vectors.json"


def parse_all(data: bytes, now: float = 0.0) -> tuple[list[Message], DongleParser]:
    parser = DongleParser()
    return parser.feed(data, now), parser


# ------------------------------------------------------------------- PROTOCOL.md examples

def test_session_of_protocol_md_host_frames() -> None:
    assert encode_detect().hex() == "c02073c0"
    assert encode_query(Cmd.FW_VERSION).hex() == "c021c0"
    assert encode_setting(Cmd.FREQUENCY, 868_300_000).hex() == "c01033c134e0c0"
    assert encode_setting(Cmd.SYNC_WORD, 0x58).hex() == "c01458c0"
    assert encode_radio_state(True).hex() == "c01701c0"
    assert encode_setting(Cmd.FREQUENCY, 915_000_000).hex() == "c0103689cadbdcc0"


def test_session_of_protocol_md_dongle_frames() -> None:
    stream = bytes.fromhex("c02046c0" "c02101302e312e30c0" "c01033c134e0c0" "c01701c0"
                           "c0250400c0" "c026000321000401c0" "c002ffb51c0001e240c0")
    stream += kiss_encode(b"\x00" + b"P" * 120)
    msgs, parser = parse_all(stream, now=17.5)
    assert msgs == [
        Detected(), FwVersion(1, "0.1.0"), SettingValue(Cmd.FREQUENCY, 868_300_000),
        RadioState(True), Ready(4, 0), TxDone(205_056, 4, 1),
        Received(b"P" * 120, -75, 7.0, 123456, 17.5),
    ]
    assert parser.counters.messages == 7 and parser.counters.invalid == 0


# ------------------------------------------------------------------------ shared vectors

def _vectors() -> dict[str, Any]:
    if not VECTORS.exists():
        pytest.skip("hardware/vectors/protocol-vectors.json not present")
    doc: dict[str, Any] = json.loads(VECTORS.read_text())
    return doc


_FIELD = {Cmd.FREQUENCY: "frequency_hz", Cmd.BANDWIDTH: "bandwidth_hz", Cmd.SF: "sf",
          Cmd.CR: "cr", Cmd.SYNC_WORD: "sync_word", Cmd.TX_POWER: "tx_power_dbm",
          Cmd.PREAMBLE: "preamble"}


def _host_frame(m: dict[str, Any], payload: bytes) -> bytes:
    """What our encoders make of a host->dongle vector's meaning."""
    cmd = Cmd[m["command"]]
    if m["form"] == "data":
        return encode_data(payload) if cmd == Cmd.DATA_LORA else encode_ble(payload)
    if cmd == Cmd.DETECT:
        return encode_detect()
    if m["form"] == "query":
        return encode_query(cmd)
    if cmd == Cmd.RADIO_STATE:
        return encode_radio_state(bool(m["radio_state"]))
    if cmd == Cmd.DUTY_LIMIT:
        return encode_duty_limit(DutyLimit(m["permille"], m["window_ms"]))
    return encode_setting(cmd, m[_FIELD[cmd]])


def _dongle_message(m: dict[str, Any], payload: bytes) -> Message | RxMeta:
    """The message a dongle->host vector's meaning describes."""
    cmd = Cmd[m["command"]]
    if cmd in _FIELD:
        return SettingValue(cmd, m[_FIELD[cmd]])
    simple: dict[Cmd, Message | RxMeta] = {
        Cmd.DETECT: Detected(),
        Cmd.DATA_LORA: Received(payload, None, None, None),
        Cmd.RADIO_STATE: RadioState(bool(m.get("radio_state"))),
        Cmd.DUTY_LIMIT: DutyLimit(m.get("permille", 0), m.get("window_ms", 0)),
        Cmd.FW_VERSION: FwVersion(m.get("protocol", 0), m.get("firmware", "")),
        Cmd.BOARD: BoardId(m.get("board", ""), m.get("chip", "")),
        Cmd.AIRTIME: Airtime(m.get("permille", 0), m.get("window_ms", 0), m.get("used_ms", 0),
                             m.get("available_ms", 0)),
        Cmd.READY: Ready(m.get("free", 0), m.get("taken", 0)),
        Cmd.TX_DONE: TxDone(m.get("airtime_us", 0), m.get("free", 0), m.get("taken", 0)),
        Cmd.RX_META: RxMeta(m.get("rssi_dbm", 0), m.get("snr_q", 0) / 4, m.get("t_ms", 0)),
        Cmd.LOG: LogLine(m.get("text", "")),
        Cmd.ERROR: ErrorFrame(m.get("code", 0), m.get("failed_cmd", 0), m.get("detail", "")),
    }
    if cmd == Cmd.STATS:
        return Stats(m["rx_ok"], m["rx_bad"], m["tx_ok"], m["tx_refused"], m["kiss_errors"],
                     m["uptime_ms"])
    return simple[cmd]


def test_vector_frames_byte_exact() -> None:
    frames = _vectors()["frames"]
    assert len(frames) > 50
    seen = set()
    for f in frames:
        payload = bytes.fromhex(f["payload_hex"])
        wire = bytes.fromhex(f["kiss_hex"])
        m = f["meaning"]
        seen.add((m["command"], f["direction"]))
        assert Cmd[m["command"]] == f["cmd"], f["name"]
        if f["direction"] == "host_to_dongle":
            assert _host_frame(m, payload) == wire, f["name"]
        else:
            expected = _dongle_message(m, payload)
            assert parse_frame(bytes((f["cmd"],)) + payload) == expected, f["name"]
            if not isinstance(expected, Received):
                assert expected.to_frame() == wire, f["name"]
    # every command the protocol has appears in the vectors in some direction
    assert {c for c, _ in seen} == {c.name for c in Cmd}


def test_vector_sessions_parse_cleanly() -> None:
    sessions = _vectors()["sessions"]
    assert sessions
    for s in sessions:
        parser = DongleParser()
        out: list[Message] = []
        rx_frames = []
        for step in s["steps"]:
            if "dongle" in step:
                out += parser.feed(bytes.fromhex(step["dongle"]))
            if "air_rx" in step:
                rx_frames.append((bytes.fromhex(step["air_rx"]), step["rssi"], step["snr_q"]))
        assert parser.counters.invalid == 0, s["name"]
        assert parser.counters.kiss_dropped == 0, s["name"]
        assert parser.counters.orphan_meta == parser.counters.rx_without_meta == 0, s["name"]
        received = [m for m in out if isinstance(m, Received)]
        good = [(f[:-4], rssi, snr_q / 4) for f, rssi, snr_q in rx_frames
                if len(f) >= 5 and _crc_ok(f)]
        assert [(r.packet, r.rssi, r.snr) for r in received] == good, s["name"]


def _crc_ok(frame: bytes) -> bool:
    from gateway.wire.crc import crc32_trailer
    return crc32_trailer(frame[:-4]) == frame[-4:]


def test_vector_protocol_md_session_is_what_the_link_sends() -> None:
    """Our handshake and configuration frames are byte-exact with the session's host steps."""
    session = next(s for s in _vectors()["sessions"] if s["name"] == "protocol_md_session")
    host = [bytes.fromhex(step["host"]) for step in session["steps"] if "host" in step]
    assert host[0] == encode_detect()
    assert host[1] == encode_query(Cmd.FW_VERSION)
    assert host[2] == encode_query(Cmd.BOARD)
    assert host[3] == encode_setting(Cmd.FREQUENCY, 868_300_000)
    assert host[6] == encode_radio_state(True)
    body = kiss_unescape(host[7][1:-1])
    assert body is not None and body[0] == Cmd.DATA_LORA
    assert host[7] == encode_data(body[1:])


# ------------------------------------------------------------------------ encoders

def test_encoders_reject_what_does_not_fit() -> None:
    with pytest.raises(ValueError):
        encode_data(b"")
    with pytest.raises(ValueError):
        encode_data(bytes(MAX_PACKET + 1))
    assert len(encode_data(bytes(range(1, MAX_PACKET + 1)))) >= MAX_PACKET + 3
    with pytest.raises(ValueError):
        encode_setting(Cmd.SF, 256)
    with pytest.raises(ValueError):
        encode_setting(Cmd.TX_POWER, 128)
    with pytest.raises(ValueError):
        encode_setting(Cmd.STATS, 1)
    with pytest.raises(ValueError):
        encode_query(Cmd.DATA_LORA)
    with pytest.raises(ValueError):
        DutyLimit(1001, 1000)
    assert encode_setting(Cmd.TX_POWER, -9).hex() == "c015f7c0"
    assert encode_query(Cmd.DUTY_LIMIT).hex() == "c018c0"


# ------------------------------------------------------------------------ properties

_u32 = st.integers(0, 2**32 - 1)
_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40)
_packet = st.binary(min_size=1, max_size=MAX_PACKET)


def _setting() -> st.SearchStrategy[SettingValue]:
    ranges = {Cmd.FREQUENCY: (0, 2**32 - 1), Cmd.BANDWIDTH: (0, 2**32 - 1), Cmd.SF: (0, 255),
              Cmd.CR: (0, 255), Cmd.SYNC_WORD: (0, 255), Cmd.TX_POWER: (-128, 127),
              Cmd.PREAMBLE: (0, 65535)}
    return st.sampled_from(sorted(ranges)).flatmap(
        lambda c: st.builds(SettingValue, st.just(c), st.integers(*ranges[c])))


_message: st.SearchStrategy[Message] = st.one_of(
    st.builds(Received, _packet, st.integers(-32768, 32767),
              st.integers(-128, 127).map(lambda q: q / 4), _u32),
    st.builds(BleData, _packet),
    _setting(),
    st.builds(RadioState, st.booleans()),
    st.builds(DutyLimit, st.integers(0, 1000), _u32),
    st.just(Detected()),
    st.builds(FwVersion, st.integers(0, 255), _text),
    st.builds(BoardId, _text.filter(lambda t: "/" not in t),
              _text.filter(lambda t: "/" not in t)),
    st.builds(Stats, _u32, _u32, _u32, _u32, _u32, _u32),
    st.builds(Airtime, st.integers(0, 65535), _u32, _u32, _u32),
    st.builds(Ready, st.integers(0, 255), st.integers(0, 255)),
    st.builds(TxDone, _u32, st.integers(0, 255), st.integers(0, 255)),
    st.builds(LogLine, _text),
    st.builds(ErrorFrame, st.sampled_from(list(ErrorCode)), st.integers(0, 255), _text),
)


@FAST
@given(st.lists(_message, max_size=12), st.data())
def test_stream_round_trip_in_any_chunking(msgs: list[Message], data: st.DataObject) -> None:
    stream = b"".join(m.to_frame() for m in msgs)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    parser = DongleParser()
    out: list[Message] = []
    for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        out += parser.feed(stream[a:b], now=3.0)
    expected = [Received(m.packet, m.rssi, m.snr, m.dongle_ms, 3.0)
                if isinstance(m, Received) else m for m in msgs]
    assert out == expected
    assert parser.counters.invalid == parser.counters.kiss_dropped == 0


@FAST
@given(st.binary(max_size=600))
def test_garbage_never_raises_and_the_stream_recovers(data: bytes) -> None:
    parser = DongleParser()
    for i in range(0, len(data), 37):
        parser.feed(data[i:i + 37])
    assert parser.feed(b"\xc0" + Ready(3, 9).to_frame())[-1:] == [Ready(3, 9)]


@FAST
@given(st.lists(_message, min_size=1, max_size=6), st.binary(min_size=1, max_size=80))
def test_garbage_between_frames_loses_nothing_else(msgs: list[Message], junk: bytes) -> None:
    """Banner text or a broken frame before the good ones costs only itself."""
    junk = junk.replace(b"\xc0", b"")  # junk inside one frame slot
    stream = b"Boot banner\r\n" + kiss_encode(b"\x7e" + junk) + b"".join(
        m.to_frame() for m in msgs)
    out, parser = parse_all(stream)
    assert [type(m) for m in out] == [type(m) for m in msgs]
    assert parser.counters.invalid == 1 and parser.counters.kiss_dropped == 1


def test_bad_shapes_are_counted() -> None:
    frames = [b"\x7e", b"\x10\x01\x02", b"\x20\x47", b"\x17\x02", b"\x22noslash",
              b"\x23" + bytes(23), b"\x25\x04", b"\x26" + bytes(5), b"\x30\x01", b"\x00",
              b"\x18" + (1001).to_bytes(2, "big") + bytes(4), b"\x21", b"\x02" + bytes(6)]
    out, parser = parse_all(b"".join(kiss_encode(f) for f in frames))
    assert out == [] and parser.counters.invalid == len(frames)


def test_meta_pairing() -> None:
    meta = RxMeta(-100, -2.5, 5).to_frame()
    data = kiss_encode(b"\x00abc")
    out, parser = parse_all(meta + kiss_encode(b"\x25\x04\x00") + data + meta + meta + data)
    assert out == [Ready(4, 0), Received(b"abc", None, None, None),
                   Received(b"abc", -100, -2.5, 5)]
    assert parser.counters.orphan_meta == 2 and parser.counters.rx_without_meta == 1


# ------------------------------------------------------------------------ flow control

@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["send", "deliver", "tx", "report"]),
                          st.integers(0, 3)), max_size=200))
def test_credit_never_overruns_the_queue(ops: list[tuple[str, int]]) -> None:
    """A model dongle whose frames arrive with a delay, reports in flight and a
    transmitter finishing at random: a host spending only its credit is never refused."""
    credit = TxCredit()
    credit.start(TX_QUEUE, 0)
    wire: list[int] = []  # host frames on their way to the dongle
    reports: list[tuple[int, int]] = []  # READY/TX_DONE on their way to the host
    queue = 0
    taken = 0
    refused = 0
    sent = 0
    for op, n in ops:
        if op == "send":
            for _ in range(n):
                if credit.credit > 0:
                    credit.spend()
                    sent += 1
                    wire.append(sent)
        elif op == "deliver":
            for _ in range(min(n, len(wire))):
                wire.pop(0)
                taken = (taken + 1) % 256
                if queue < TX_QUEUE:
                    queue += 1
                else:
                    refused += 1
        elif op == "tx" and queue:
            queue -= 1
            reports.append((TX_QUEUE - queue, taken))
        elif op == "report" and reports:
            for _ in range(min(n + 1, len(reports))):
                credit.report(*reports.pop(0))
    assert refused == 0
    assert 0 <= credit.credit <= TX_QUEUE


def test_credit_bare_free_would_overrun() -> None:
    """The race PROTOCOL.md describes: a report written before our frame arrived."""
    credit = TxCredit()
    credit.start(1, 0)
    credit.spend()                # frame 1 on its way; credit 0
    assert credit.credit == 0
    credit.report(1, 0)           # TX_DONE written before frame 1 arrived
    assert credit.credit == 0     # bare free would say 1
    credit.report(0, 1)
    assert credit.credit == 0 and credit.in_flight == 0
    credit.report(1, 1)
    assert credit.credit == 1


def test_credit_resync_and_wrap() -> None:
    credit = TxCredit()
    assert credit.credit == 0 and credit.queued == 0
    credit.start(4, 254)
    for _ in range(3):
        credit.spend()
    assert credit.sent == 1 and credit.in_flight == 3 and credit.credit == 1
    assert credit.queued == 3
    assert credit.resync() == 3 and credit.credit == 4


# ------------------------------------------------------------------------ radio config

@pytest.mark.parametrize("name", sorted(PROFILES))
def test_profiles_map_to_settings_and_back(name: str) -> None:
    params = profile(name)
    config = RadioConfig.from_params(params)
    assert config.to_params() == params
    pairs = config.settings()
    assert [c for c, _ in pairs] == list(RADIO_SETTINGS)
    assert RadioConfig.from_settings(dict(pairs)) == config
    assert config.frames() == [encode_setting(c, v) for c, v in pairs]
    assert dict(pairs)[Cmd.FREQUENCY] == params.frequency_hz


def test_radio_config_refuses_what_the_dongle_cannot_do() -> None:
    with pytest.raises(ValueError, match="explicit header"):
        RadioConfig.from_params(LoRaParams(868_300_000, 125_000, 7, explicit_header=False))
    with pytest.raises(ValueError):
        RadioConfig.from_params(LoRaParams(868_300_000, 125_000, 7, phy_crc=True))
    with pytest.raises(KeyError, match="PREAMBLE"):
        RadioConfig.from_settings({Cmd.FREQUENCY: 1})


def test_eu868b_settings_are_exact() -> None:
    frames = RadioConfig.from_params(profile("EU868.b")).frames()
    assert [f.hex() for f in frames] == [
        "c01033c134e0c0", "c0110003d090c0", "c01207c0", "c01305c0", "c01458c0",
        "c0150ec0", "c0160008c0"]  # TX_POWER 14 dBm: the EU868 legal default


def test_error_describe() -> None:
    assert ErrorFrame(3, 0x12).describe().startswith("SF: BAD_VALUE")
    assert "busy" in ErrorFrame(5, 0x17, "busy").describe()
    assert ErrorFrame(99, 0x7E).name == "ERROR_99"
