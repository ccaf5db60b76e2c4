"""The command loop (tssbfw.dongle.Dongle) on a SimRadio: commands, flow control, failures.

Byte-exact exchanges are in test_fw_vectors.py; these tests check behaviour that needs
a look inside (radio state, settings reaching the radio, failure recovery).
"""

import struct

from hwsupport import Harness, frames_of
from tssbfw import crc32, kiss
from tssbfw.dongle import (
    BANDWIDTH,
    DATA_LORA,
    ERROR,
    FREQUENCY,
    LOG,
    RADIO_FAILURE,
    RADIO_STATE,
    READY,
    SF,
    STATS,
    TX_DONE,
    TX_POWER,
)
from tssbfw.radio import RadioError
from tssbfw.simradio import RX, SLEEP, TX


def test_boot_announces_log_and_ready() -> None:
    h = Harness("heltec_v3")
    frames = frames_of(h.boot_output)
    assert frames[0][0] == LOG
    assert b"heltec_v3/sx1262" in frames[0]
    assert frames[1] == bytes((READY, 4, 0))
    assert h.radio.state == SLEEP


def test_settings_reach_the_radio_when_switched_on() -> None:
    h = Harness("heltec_v3")
    h.command(FREQUENCY, struct.pack(">I", 915000000))
    h.command(SF, b"\x09")
    assert h.radio.configures == 0  # radio off: nothing touches it
    assert h.command(RADIO_STATE, b"\x01") == [bytes((RADIO_STATE, 1)), bytes((READY, 4, 0))]
    assert h.radio.state == RX
    assert h.radio.settings.frequency == 915000000
    assert h.radio.settings.sf == 9
    # a change while on re-configures at once and returns to receive
    h.command(BANDWIDTH, struct.pack(">I", 250000))
    assert h.radio.settings.bandwidth == 250000
    assert h.radio.state == RX
    # setting the value in force does not touch the radio
    n = h.radio.configures
    assert h.command(SF, b"\x09") == [bytes((SF, 9))]
    assert h.radio.configures == n


def test_change_during_transmission_waits_for_its_end() -> None:
    h = Harness("heltec_v3")
    h.command(RADIO_STATE, b"\x01")
    h.host(kiss.encode(b"\x00hello"))
    assert h.radio.state == TX
    assert h.command(TX_POWER, b"\x11") == [bytes((TX_POWER, 17))]
    assert h.radio.settings.tx_power == 14  # not yet
    h.radio.finish_tx()
    h.dongle.poll()
    assert h.radio.settings.tx_power == 17
    assert h.radio.state == RX


def test_radio_off_during_transmission_sleeps_after_it() -> None:
    h = Harness("tbeam_sx1276")
    h.command(RADIO_STATE, b"\x01")
    h.host(kiss.encode(b"\x00hello"))
    h.command(RADIO_STATE, b"\x00")
    assert h.radio.state == TX
    h.radio.finish_tx()
    h.dongle.poll()
    assert h.radio.state == SLEEP
    assert frames_of(h.take())[0][0] == TX_DONE


def test_queue_full_and_taken_count() -> None:
    h = Harness("heltec_v3")
    for i in range(4):
        assert h.command(DATA_LORA, bytes((i + 1,)) * 10) == []
    assert h.command(DATA_LORA, b"\x05" * 10) == [bytes((ERROR, 4, DATA_LORA))]
    assert h.command(READY) == [bytes((READY, 0, 5))]
    # 300 more frames: taken wraps modulo 256
    for _ in range(300):
        h.command(DATA_LORA, b"\x01")
    assert h.command(READY) == [bytes((READY, 0, (305) & 0xFF))]
    stats = struct.unpack(">6I", h.command(STATS)[0][1:])
    assert stats[3] == 301  # tx_refused


def test_transmitted_frame_carries_crc_and_tx_done_airtime() -> None:
    h = Harness("heltec_v3")
    h.command(RADIO_STATE, b"\x01")
    packet = bytes(range(120))
    h.command(DATA_LORA, packet)
    assert h.radio.sent == [crc32.add(packet)]
    h.radio.finish_tx()
    h.dongle.poll()
    done = frames_of(h.take())
    assert done == [bytes((TX_DONE,)) + struct.pack(">IBB", 205056, 4, 1)]


def test_rx_meta_precedes_data_and_clamps_values() -> None:
    h = Harness("heltec_v2")
    h.command(RADIO_STATE, b"\x01")
    h.now = 0x1_0000_0005  # the clock is reported modulo 2**32
    h.radio.deliver(crc32.add(b"abcde"), -140, -200)
    h.dongle.poll()
    meta, data = frames_of(h.take())
    assert meta == b"\x02" + struct.pack(">hbI", -140, -128, 5)
    assert data == b"\x00abcde"


def test_radio_off_misses_frames() -> None:
    h = Harness("heltec_v3")
    assert not h.radio.deliver(crc32.add(b"abcde"), -80, 20)
    h.dongle.poll()
    assert h.take() == b""


def test_radio_failure_is_reported_and_radio_reset() -> None:
    h = Harness("heltec_v3")
    h.radio.fail_next = "busy timeout"
    got = h.command(RADIO_STATE, b"\x01")
    assert got == [bytes((ERROR, RADIO_FAILURE, RADIO_STATE)) + b"busy timeout"]
    assert h.radio.resets == 1
    assert h.radio.state == RX  # recovered: reset, configured, receiving
    assert h.command(RADIO_STATE) == [bytes((RADIO_STATE, 1))]


def test_transmission_timeout_drops_frame_and_resets() -> None:
    h = Harness("heltec_v3")
    h.command(RADIO_STATE, b"\x01")
    h.command(DATA_LORA, b"x" * 50)
    assert h.radio.state == TX
    h.advance(5000)  # the radio never reports TxDone
    got = frames_of(h.take())
    assert got[0][:3] == bytes((ERROR, RADIO_FAILURE, DATA_LORA))
    assert got[-1] == bytes((READY, 4, 1))
    assert h.radio.resets == 1
    assert h.radio.state == RX


def test_failed_reset_leaves_radio_off() -> None:
    h = Harness("heltec_v3")
    h.command(RADIO_STATE, b"\x01")
    h.command(DATA_LORA, b"x" * 50)
    h.radio.fail_next = "spi"  # the poll for TxDone fails, then so does the reset

    def broken_reset() -> None:
        raise RadioError("dead")

    h.radio.reset = broken_reset
    h.advance(1)
    got = frames_of(h.take())
    assert got[0][:3] == bytes((ERROR, RADIO_FAILURE, DATA_LORA))
    assert got[1][0] == LOG
    assert h.command(RADIO_STATE) == [bytes((RADIO_STATE, 0))]
