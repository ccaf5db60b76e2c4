"""Write ``protocol-vectors.json``: byte-exact dongle protocol frames and sessions.

The frames are built from the protocol description (``hardware/PROTOCOL.md``) with the
gateway's own KISS encoder, CRC32 and airtime formula, never with the firmware, so the
firmware tests replaying them check the firmware against an independent reference.

Run ``python hardware/vectors/make_vectors.py`` from the repository root after changing
the protocol; ``tests/hardware/test_vectors_file.py`` fails while the file is stale.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gateway.wire.crc import add_crc
from gateway.wire.kiss import kiss_encode
from gateway.wire.lora import LoRaParams, airtime

OUT = Path(__file__).with_name("protocol-vectors.json")

H2D = "host_to_dongle"
D2H = "dongle_to_host"

DOC = (
    "Byte-exact frames of the tssb-dongle host protocol (hardware/PROTOCOL.md), generated "
    "by hardware/vectors/make_vectors.py from the gateway's KISS, CRC32 and airtime code. "
    "Schema: 'frames' is a list of objects {name: unique str, direction: 'host_to_dongle' | "
    "'dongle_to_host', cmd: int (first byte of the unescaped frame), payload_hex: str (the "
    "bytes after cmd), kiss_hex: str (the whole frame on the wire: C0, escaped cmd+payload, "
    "C0), meaning: object (command name, form 'set'|'query'|'answer'|'event'|'error'|"
    "'data', and the decoded field values)}. 'sessions' is a list of {name, doc, "
    "board: str, steps: [...]}; a session starts with a freshly booted dongle (radio off, "
    "defaults, clock 0 ms, its boot READY already consumed) and every step is one object "
    "with exactly one of these keys: 'host': hex bytes the host writes (not always whole "
    "frames); 'dongle': hex bytes the dongle must write next, exactly; 'air_tx': hex of "
    "the LoRa frame (packet + CRC32) the dongle must now be transmitting; 'air_tx_done': "
    "true, the radio finishes that transmission; 'air_rx': hex of a LoRa frame the radio "
    "receives, with sibling keys 'rssi' (dBm) and 'snr_q' (quarter dB); 'clock_ms': int, "
    "the dongle clock jumps to this value. After each step the dongle runs one poll. "
    "After the last step the dongle must have written nothing more. "
    "Default settings: 868300000 Hz, 125000 Hz, SF7, CR5, sync 0x58, 14 dBm, preamble 8, "
    "duty limit 10 permille over 3600000 ms."
)

CMD = {
    "DATA_LORA": 0x00,
    "DATA_BLE": 0x01,
    "RX_META": 0x02,
    "FREQUENCY": 0x10,
    "BANDWIDTH": 0x11,
    "SF": 0x12,
    "CR": 0x13,
    "SYNC_WORD": 0x14,
    "TX_POWER": 0x15,
    "PREAMBLE": 0x16,
    "RADIO_STATE": 0x17,
    "DUTY_LIMIT": 0x18,
    "DETECT": 0x20,
    "FW_VERSION": 0x21,
    "BOARD": 0x22,
    "STATS": 0x23,
    "AIRTIME": 0x24,
    "READY": 0x25,
    "TX_DONE": 0x26,
    "LOG": 0x2F,
    "ERROR": 0x30,
}

ERRORS = {
    "UNKNOWN_COMMAND": 1,
    "BAD_LENGTH": 2,
    "BAD_VALUE": 3,
    "QUEUE_FULL": 4,
    "RADIO_FAILURE": 5,
    "TOO_LONG": 6,
    "NO_BLE": 7,
}

DEFAULT = LoRaParams(frequency_hz=868_300_000, bandwidth_hz=125_000, sf=7, cr=5,
                     tx_power_dbm=14)

PACKET_120 = bytes((i * 37 + 11) & 0xFF for i in range(120))
"""A 120-byte packet (a tinySSB log entry's size) whose bytes include C0 and DB."""
PACKET_PLAIN = bytes(range(0x40, 0x40 + 16))
"""A 16-byte packet without bytes that need escaping."""


def frame(cmd: int, payload: bytes) -> bytes:
    return kiss_encode(bytes((cmd,)) + payload)


def airtime_us(params: LoRaParams, frame_len: int) -> int:
    return round(airtime(params, frame_len) * 1e6)


def entry(name: str, direction: str, command: str, payload: bytes,
          **meaning: Any) -> dict[str, Any]:
    cmd = CMD[command]
    return {
        "name": name,
        "direction": direction,
        "cmd": cmd,
        "payload_hex": payload.hex(),
        "kiss_hex": frame(cmd, payload).hex(),
        "meaning": {"command": command, **meaning},
    }


def setting(name: str, command: str, fmt: str, field: str, value: int) -> list[dict[str, Any]]:
    """Set, query and answer frames of one typed setting."""
    payload = struct.pack(">" + fmt, value)
    return [
        entry(f"{name}_set", H2D, command, payload, form="set", **{field: value}),
        entry(f"{name}_query", H2D, command, b"", form="query"),
        entry(f"{name}_answer", D2H, command, payload, form="answer", **{field: value}),
    ]


def error(name: str, code_name: str, cmd: int, detail: str = "") -> dict[str, Any]:
    payload = bytes((ERRORS[code_name], cmd)) + detail.encode()
    meaning: dict[str, Any] = {"form": "error", "code": ERRORS[code_name],
                               "code_name": code_name, "failed_cmd": cmd}
    if detail:
        meaning["detail"] = detail
    return entry(name, D2H, "ERROR", payload, **meaning)


def ready(free: int, taken: int) -> bytes:
    return frame(CMD["READY"], bytes((free, taken)))


def tx_done(us: int, free: int, taken: int) -> bytes:
    return frame(CMD["TX_DONE"], struct.pack(">IBB", us, free, taken))


def rx_meta(rssi: int, snr_q: int, t_ms: int) -> bytes:
    return frame(CMD["RX_META"], struct.pack(">hbI", rssi, snr_q, t_ms))


def stats(rx_ok: int, rx_bad: int, tx_ok: int, tx_refused: int, kiss_errors: int,
          uptime_ms: int) -> bytes:
    return frame(CMD["STATS"], struct.pack(">6I", rx_ok, rx_bad, tx_ok, tx_refused,
                                           kiss_errors, uptime_ms))


def frames() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        entry("detect_request", H2D, "DETECT", b"\x73", form="query"),
        entry("detect_answer", D2H, "DETECT", b"\x46", form="answer"),
        entry("fw_version_query", H2D, "FW_VERSION", b"", form="query"),
        entry("fw_version_answer", D2H, "FW_VERSION", b"\x01" + b"0.1.0", form="answer",
              protocol=1, firmware="0.1.0"),
        entry("board_query", H2D, "BOARD", b"", form="query"),
        entry("board_answer_heltec_v3", D2H, "BOARD", b"heltec_v3/sx1262", form="answer",
              board="heltec_v3", chip="sx1262"),
        entry("board_answer_tbeam_sx1276", D2H, "BOARD", b"tbeam_sx1276/sx1276",
              form="answer", board="tbeam_sx1276", chip="sx1276"),
    ]
    out += setting("frequency_868", "FREQUENCY", "I", "frequency_hz", 868_300_000)
    out += setting("frequency_915_escaped", "FREQUENCY", "I", "frequency_hz", 915_000_000)
    out += setting("bandwidth_125k", "BANDWIDTH", "I", "bandwidth_hz", 125_000)
    out += setting("bandwidth_500k", "BANDWIDTH", "I", "bandwidth_hz", 500_000)
    out += setting("sf_7", "SF", "B", "sf", 7)
    out += setting("sf_12", "SF", "B", "sf", 12)
    out += setting("cr_5", "CR", "B", "cr", 5)
    out += setting("sync_word_58", "SYNC_WORD", "B", "sync_word", 0x58)
    out += setting("tx_power_20", "TX_POWER", "b", "tx_power_dbm", 20)
    out += setting("tx_power_minus_9", "TX_POWER", "b", "tx_power_dbm", -9)
    out += setting("preamble_8", "PREAMBLE", "H", "preamble", 8)
    out += setting("radio_state_on", "RADIO_STATE", "B", "radio_state", 1)
    out += setting("radio_state_off", "RADIO_STATE", "B", "radio_state", 0)
    duty = struct.pack(">HI", 10, 3_600_000)
    out += [
        entry("duty_limit_set", H2D, "DUTY_LIMIT", duty, form="set", permille=10,
              window_ms=3_600_000),
        entry("duty_limit_query", H2D, "DUTY_LIMIT", b"", form="query"),
        entry("duty_limit_answer", D2H, "DUTY_LIMIT", duty, form="answer", permille=10,
              window_ms=3_600_000),
        entry("duty_limit_off_set", H2D, "DUTY_LIMIT", struct.pack(">HI", 0, 3_600_000),
              form="set", permille=0, window_ms=3_600_000),
        entry("stats_query", H2D, "STATS", b"", form="query"),
        entry("stats_answer", D2H, "STATS", struct.pack(">6I", 12, 3, 7, 1, 2, 654_321),
              form="answer", rx_ok=12, rx_bad=3, tx_ok=7, tx_refused=1, kiss_errors=2,
              uptime_ms=654_321),
        entry("airtime_query", H2D, "AIRTIME", b"", form="query"),
        entry("airtime_answer", D2H, "AIRTIME", struct.pack(">HIII", 10, 3_600_000, 411,
                                                            35_589),
              form="answer", permille=10, window_ms=3_600_000, used_ms=411,
              available_ms=35_589),
        entry("airtime_answer_unlimited", D2H, "AIRTIME",
              struct.pack(">HIII", 0, 3_600_000, 205, 0xFFFFFFFF), form="answer",
              permille=0, window_ms=3_600_000, used_ms=205, available_ms=0xFFFFFFFF),
        entry("ready_query", H2D, "READY", b"", form="query"),
        entry("ready_answer", D2H, "READY", b"\x04\x00", form="answer", free=4, taken=0),
        entry("tx_done", D2H, "TX_DONE", struct.pack(">IBB", 205_056, 4, 1), form="event",
              airtime_us=205_056, free=4, taken=1),
        entry("rx_meta", D2H, "RX_META", struct.pack(">hbI", -75, 28, 123_456), form="event",
              rssi_dbm=-75, snr_q=28, t_ms=123_456),
        entry("rx_meta_negative_snr", D2H, "RX_META", struct.pack(">hbI", -121, -30, 5),
              form="event", rssi_dbm=-121, snr_q=-30, t_ms=5),
        entry("data_lora_to_dongle", H2D, "DATA_LORA", PACKET_120, form="data",
              packet_len=120),
        entry("data_lora_to_host", D2H, "DATA_LORA", PACKET_120, form="data",
              packet_len=120),
        entry("data_lora_plain", H2D, "DATA_LORA", PACKET_PLAIN, form="data", packet_len=16),
        entry("data_ble_to_dongle", H2D, "DATA_BLE", PACKET_PLAIN, form="data",
              packet_len=16),
        entry("log_line", D2H, "LOG", b"radio on", form="event", text="radio on"),
        error("error_unknown_command", "UNKNOWN_COMMAND", 0x7E),
        error("error_unknown_command_rx_meta", "UNKNOWN_COMMAND", CMD["RX_META"]),
        error("error_bad_length_sf", "BAD_LENGTH", CMD["SF"]),
        error("error_bad_length_data_empty", "BAD_LENGTH", CMD["DATA_LORA"]),
        error("error_bad_value_sf", "BAD_VALUE", CMD["SF"]),
        error("error_bad_value_detect", "BAD_VALUE", CMD["DETECT"]),
        error("error_queue_full", "QUEUE_FULL", CMD["DATA_LORA"]),
        error("error_radio_failure", "RADIO_FAILURE", CMD["RADIO_STATE"], "busy timeout"),
        error("error_too_long", "TOO_LONG", CMD["DATA_LORA"]),
        error("error_no_ble", "NO_BLE", CMD["DATA_BLE"]),
    ]
    return out


def h(data: bytes) -> dict[str, str]:
    return {"host": data.hex()}


def d(data: bytes) -> dict[str, str]:
    return {"dongle": data.hex()}


def sessions() -> list[dict[str, Any]]:
    def f(cmd: str, payload: bytes = b"") -> bytes:
        return frame(CMD[cmd], payload)

    p868 = struct.pack(">I", 868_300_000)
    p915 = struct.pack(">I", 915_000_000)
    big = PACKET_120
    big_air = add_crc(big)
    t124 = airtime_us(DEFAULT, len(big_air))
    small = [bytes((0x10 + i,)) * (8 + i) for i in range(5)]
    small_air = [add_crc(p) for p in small]
    good = add_crc(PACKET_PLAIN)
    bad = good[:-1] + bytes((good[-1] ^ 0x01,))
    return [
        {
            "name": "protocol_md_session",
            "doc": "The session of PROTOCOL.md: detect, version, settings, radio on, one "
                   "transmission, one reception.",
            "board": "heltec_v3",
            "steps": [
                h(f("DETECT", b"\x73")), d(f("DETECT", b"\x46")),
                h(f("FW_VERSION")), d(f("FW_VERSION", b"\x010.1.0")),
                h(f("BOARD")), d(f("BOARD", b"heltec_v3/sx1262")),
                h(f("FREQUENCY", p868)), d(f("FREQUENCY", p868)),
                h(f("SYNC_WORD", b"\x58")), d(f("SYNC_WORD", b"\x58")),
                h(f("SF")), d(f("SF", b"\x07")),
                h(f("RADIO_STATE", b"\x01")), d(f("RADIO_STATE", b"\x01")), d(ready(4, 0)),
                h(f("DATA_LORA", big)), {"air_tx": big_air.hex()},
                {"clock_ms": 206}, {"air_tx_done": True}, d(tx_done(t124, 4, 1)),
                {"clock_ms": 123_456},
                {"air_rx": good.hex(), "rssi": -75, "snr_q": 28},
                d(rx_meta(-75, 28, 123_456)), d(f("DATA_LORA", PACKET_PLAIN)),
            ],
        },
        {
            "name": "settings_and_errors",
            "doc": "Escaped values, queries of defaults, refused values that change "
                   "nothing, unknown commands and wrong lengths.",
            "board": "tbeam_sx1276",
            "steps": [
                h(f("BOARD")), d(f("BOARD", b"tbeam_sx1276/sx1276")),
                h(f("FREQUENCY", p915)), d(f("FREQUENCY", p915)),
                h(f("BANDWIDTH")), d(f("BANDWIDTH", struct.pack(">I", 125_000))),
                h(f("BANDWIDTH", struct.pack(">I", 100_000))), d(error_frame("BAD_VALUE", 0x11)),
                h(f("SF", b"\x06")), d(error_frame("BAD_VALUE", 0x12)),
                h(f("SF")), d(f("SF", b"\x07")),
                h(f("SF", b"\x07\x08")), d(error_frame("BAD_LENGTH", 0x12)),
                h(f("CR", b"\x09")), d(error_frame("BAD_VALUE", 0x13)),
                h(f("TX_POWER", b"\x15")), d(error_frame("BAD_VALUE", 0x15)),
                h(f("TX_POWER")), d(f("TX_POWER", b"\x0e")),
                h(f("PREAMBLE", b"\x00\x05")), d(error_frame("BAD_VALUE", 0x16)),
                h(f("PREAMBLE")), d(f("PREAMBLE", b"\x00\x08")),
                h(f("RADIO_STATE", b"\x02")), d(error_frame("BAD_VALUE", 0x17)),
                h(f("DUTY_LIMIT")), d(f("DUTY_LIMIT", struct.pack(">HI", 10, 3_600_000))),
                h(f("DUTY_LIMIT", struct.pack(">HI", 1001, 3_600_000))),
                d(error_frame("BAD_VALUE", 0x18)),
                h(f("DETECT", b"\x00")), d(error_frame("BAD_VALUE", 0x20)),
                h(f("STATS", b"\x00")), d(error_frame("BAD_LENGTH", 0x23)),
                h(frame(0x7E, b"\x01\x02")), d(error_frame("UNKNOWN_COMMAND", 0x7E)),
                h(f("TX_DONE")), d(error_frame("UNKNOWN_COMMAND", 0x26)),
                h(f("DATA_LORA")), d(error_frame("BAD_LENGTH", 0x00)),
                h(f("DATA_LORA", bytes(252))), d(error_frame("TOO_LONG", 0x00)),
                h(f("DATA_BLE", PACKET_PLAIN)), d(error_frame("NO_BLE", 0x01)),
                {"clock_ms": 4321},
                h(f("STATS")), d(stats(0, 0, 0, 2, 0, 4321)),
            ],
        },
        {
            "name": "kiss_errors",
            "doc": "Bytes before the first FEND, a bad escape and an over-long frame are "
                   "dropped and counted; a frame split across writes is reassembled.",
            "board": "heltec_v2",
            "steps": [
                h(bytes.fromhex("41424344")),
                h(bytes.fromhex("c0db01c0")),
                h(b"\xc0\x00" + bytes(600) + b"\xc0"),
                h(f("STATS")[:3]), h(f("STATS")[3:]),
                d(stats(0, 0, 0, 0, 3, 0)),
                h(f("BOARD")), d(f("BOARD", b"heltec_v2/sx1276")),
            ],
        },
        {
            "name": "flow_control",
            "doc": "Radio off: four DATA_LORA frames wait in the queue, the fifth is "
                   "refused with QUEUE_FULL; radio on: they leave one by one.",
            "board": "tbeam_sx1262",
            "steps": [
                h(f("DATA_LORA", small[0])), h(f("DATA_LORA", small[1])),
                h(f("DATA_LORA", small[2])), h(f("DATA_LORA", small[3])),
                h(f("DATA_LORA", small[4])), d(error_frame("QUEUE_FULL", 0x00)),
                h(f("READY")), d(ready(0, 5)),
                {"clock_ms": 1000},
                h(f("RADIO_STATE", b"\x01")), d(f("RADIO_STATE", b"\x01")), d(ready(0, 5)),
                {"air_tx": small_air[0].hex()},
                {"air_tx_done": True},
                d(tx_done(airtime_us(DEFAULT, len(small_air[0])), 1, 5)),
                {"air_tx": small_air[1].hex()},
                {"air_tx_done": True},
                d(tx_done(airtime_us(DEFAULT, len(small_air[1])), 2, 5)),
                {"air_tx": small_air[2].hex()},
                {"air_tx_done": True},
                d(tx_done(airtime_us(DEFAULT, len(small_air[2])), 3, 5)),
                {"air_tx": small_air[3].hex()},
                {"air_tx_done": True},
                d(tx_done(airtime_us(DEFAULT, len(small_air[3])), 4, 5)),
                h(f("STATS")), d(stats(0, 0, 4, 1, 0, 1000)),
            ],
        },
        {
            "name": "duty_cycle",
            "doc": "50 % over 1 s: two 124-byte frames (205.056 ms each) fit, the third "
                   "waits until the first has left the window (1 s after its end); a 10 % "
                   "budget can never hold such a frame, which is dropped with TOO_LONG.",
            "board": "heltec_v3",
            "steps": [
                h(f("DUTY_LIMIT", struct.pack(">HI", 500, 1000))),
                d(f("DUTY_LIMIT", struct.pack(">HI", 500, 1000))),
                h(f("RADIO_STATE", b"\x01")), d(f("RADIO_STATE", b"\x01")), d(ready(4, 0)),
                h(f("DATA_LORA", big)), {"air_tx": big_air.hex()},
                h(f("DATA_LORA", big)), h(f("DATA_LORA", big)),
                {"clock_ms": 206}, {"air_tx_done": True}, d(tx_done(t124, 2, 3)),
                {"air_tx": big_air.hex()},
                {"clock_ms": 412}, {"air_tx_done": True}, d(tx_done(t124, 3, 3)),
                h(f("AIRTIME")),
                d(f("AIRTIME", struct.pack(">HIII", 500, 1000, (2 * t124 + 999) // 1000,
                                           (500_000 - 2 * t124) // 1000))),
                {"clock_ms": 1205},
                {"clock_ms": 1206}, {"air_tx": big_air.hex()},
                {"clock_ms": 1412}, {"air_tx_done": True}, d(tx_done(t124, 4, 3)),
                h(f("DUTY_LIMIT", struct.pack(">HI", 100, 1000))),
                d(f("DUTY_LIMIT", struct.pack(">HI", 100, 1000))),
                h(f("DATA_LORA", big)),
                d(error_frame("TOO_LONG", 0x00)), d(ready(4, 4)),
                h(f("STATS")), d(stats(0, 0, 3, 1, 0, 1412)),
            ],
        },
        {
            "name": "rx_filtering",
            "doc": "Only frames with a good CRC32 and at least 5 bytes reach the host; "
                   "the others count as rx_bad. The CRC is stripped.",
            "board": "heltec_v3",
            "steps": [
                h(f("RADIO_STATE", b"\x01")), d(f("RADIO_STATE", b"\x01")), d(ready(4, 0)),
                {"clock_ms": 50},
                {"air_rx": bad.hex(), "rssi": -110, "snr_q": -30},
                {"air_rx": good[:4].hex(), "rssi": -100, "snr_q": 0},
                {"air_rx": add_crc(big).hex(), "rssi": -121, "snr_q": -30},
                d(rx_meta(-121, -30, 50)), d(f("DATA_LORA", big)),
                h(f("STATS")), d(stats(1, 2, 0, 0, 0, 50)),
                h(f("RADIO_STATE", b"\x00")), d(f("RADIO_STATE", b"\x00")), d(ready(4, 0)),
            ],
        },
    ]


def error_frame(code_name: str, cmd: int) -> bytes:
    return frame(CMD["ERROR"], bytes((ERRORS[code_name], cmd)))


def build() -> dict[str, Any]:
    return {"doc": DOC, "version": 1, "frames": frames(), "sessions": sessions()}


def render() -> str:
    return json.dumps(build(), indent=1) + "\n"


def main() -> int:
    OUT.write_text(render())
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
