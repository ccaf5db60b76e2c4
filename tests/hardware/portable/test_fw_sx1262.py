"""SX1262 driver command sequences, checked against the Semtech SX1261/2 datasheet (rev 2.1).

Sections referred to: 8.1 (reset), 8.3.1 (BUSY), 9.2.1 and table 9-2 (CalibrateImage),
12.1 (register table: LoRa sync word 0x0740/0x0741, reset 0x1424), 13.1 (operational
modes: SetSleep, SetStandby, SetTx, SetRx, Calibrate, SetPaConfig, SetDIO2AsRfSwitchCtrl,
SetDIO3AsTCXOCtrl), 13.3 (DIO and IRQ), 13.4 (RF, modulation and packet commands:
SetPacketType first, SetRfFrequency = f * 2^25 / 32 MHz, SetModulationParams, SetPacketParams),
13.5 (status commands), 14.2/14.3 (basic Tx/Rx operation), 15.1 and 15.4 (known
limitations: BW500 modulation quality, IQ polarity register).
"""

from fakehal import FakeSX1262
from hwsupport import Harness, frames_of
from tssbfw import crc32, kiss
from tssbfw.radio import EV_RX, EV_TX_DONE, RadioError, Settings
from tssbfw.sx1262 import SX1262, image_calibration, rf_frequency, sync_word_bytes


def _radio(tcxo=1.8):
    hal = FakeSX1262()
    radio = SX1262(hal, tcxo, True)
    radio.reset()
    hal.log = []
    return hal, radio


def test_reset_pulses_nreset_and_checks_sync_word_reset_value() -> None:
    """8.1: NRESET low then high; 12.1: 0x0740/0x0741 read back 0x14 0x24 after reset."""
    hal = FakeSX1262()
    SX1262(hal, None).reset()
    assert hal.reset_levels == [0, 1]
    assert hal.log == [bytes.fromhex("1d07400000" + "00"), bytes.fromhex("8000")]
    dead = FakeSX1262()
    dead.regs = {}
    try:
        SX1262(dead, None).reset()
    except RadioError:
        return
    raise AssertionError("a silent chip was accepted")


def test_configure_sequence_heltec_v3_eu868() -> None:
    """13.1/13.4/14.2: the whole configuration of EU868.a (868.3 MHz, BW125, SF7, 4/5)."""
    hal, radio = _radio()
    radio.configure(Settings())
    expected = [
        "8000",  # SetStandby(STDBY_RC)
        "9702000140",  # SetDIO3AsTCXOCtrl(1.8 V, 5 ms = 320 * 15.625 us)
        "897f",  # Calibrate(all blocks), needed again once the TCXO runs (13.1.12)
        "070000",  # ClearDeviceErrors (XOSC start error from the calibration at POR)
        "9d01",  # SetDIO2AsRfSwitchCtrl(enable)
        "9601",  # SetRegulatorMode(DC-DC)
        "8a01",  # SetPacketType(LoRa)
        "86" + (868300000 * 2 ** 25 // 32000000).to_bytes(4, "big").hex(),  # SetRfFrequency
        "98d7db",  # CalibrateImage(863-870 MHz)
        "9504070001",  # SetPaConfig(SX1262, +22 dBm table 13-21)
        "8e0e04",  # SetTxParams(14 dBm, 200 us ramp)
        "8b07040100",  # SetModulationParams(SF7, BW125, 4/5, LDRO off)
        "8c000800ff0000",  # SetPacketParams(preamble 8, explicit, 255, CRC off, std IQ)
        "0d07405484",  # WriteRegister(0x0740: sync word 0x58 as 0x5484)
        "1d07360000",  # ReadRegister(0x0736) ...
        "0d07360d",  # ... bit 2 set for standard IQ (15.4)
        "8f0000",  # SetBufferBaseAddress(0, 0)
        "08026302630000" + "0000",  # SetDioIrqParams(TxDone|RxDone|HdrErr|CrcErr|Timeout)
        "02ffff",  # ClearIrqStatus(all)
    ]
    assert [e.hex() for e in hal.log] == expected


def test_packet_type_comes_first_and_pa_before_tx_params() -> None:
    """13.4.2: SetPacketType precedes the RF, modulation and packet commands;
    13.1.14/14.2: SetPaConfig precedes SetTxParams; 13.1.12: TCXO set before Calibrate."""
    hal, radio = _radio()
    s = Settings()
    s.frequency, s.sf, s.bandwidth = 915000000, 12, 125000
    radio.configure(s)
    ops = hal.opcodes()
    for later in (0x86, 0x8B, 0x8C):
        assert ops.index(0x8A) < ops.index(later)
    assert ops.index(0x95) < ops.index(0x8E)
    assert ops.index(0x97) < ops.index(0x89)


def test_modulation_params_codes_and_ldro() -> None:
    """13.4.5.2 (tables 13-47/13-48): bandwidth codes, CR 4/5..4/8 = 1..4, LDRO."""
    cases = [(12, 125000, 8, "8b0c040401"), (7, 500000, 5, "8b07060100"),
             (11, 41700, 6, "8b0b0a0201"), (9, 7800, 7, "8b09000301"),
             (10, 250000, 5, "8b0a050100")]
    for sf, bw, cr, want in cases:
        hal, radio = _radio(None)
        s = Settings()
        s.sf, s.bandwidth, s.cr = sf, bw, cr
        radio.configure(s)
        assert [e.hex() for e in hal.log if e[0] == 0x8B] == [want]


def test_image_calibration_table() -> None:
    """9.2.1, table 9-2: frequency pairs per band."""
    assert image_calibration(433300000) == (0x6B, 0x6F)
    assert image_calibration(490000000) == (0x75, 0x81)
    assert image_calibration(780000000) == (0xC1, 0xC5)
    assert image_calibration(868300000) == (0xD7, 0xDB)
    assert image_calibration(904600000) == (0xE1, 0xE9)
    assert image_calibration(917500000) == (0xE1, 0xE9)


def test_rf_frequency_and_sync_word() -> None:
    """13.4.1: RFfreq = f * 2^25 / Fxtal (32 MHz); sync word 0xXY -> 0xX4Y4."""
    assert rf_frequency(32000000) == 2 ** 25
    assert rf_frequency(915000000) == 0x39300000
    assert sync_word_bytes(0x58) == b"\x54\x84"
    assert sync_word_bytes(0x12) == b"\x14\x24"  # private network, the reset value
    assert sync_word_bytes(0x34) == b"\x34\x44"  # LoRaWAN public


def test_transmit_sequence() -> None:
    """14.2 steps 7-12 and 15.1 (0x0889 bit 2 set below BW500, cleared at BW500)."""
    hal, radio = _radio()
    radio.configure(Settings())
    hal.log = []
    radio.transmit(b"\x01\x02\x03")
    assert [e.hex() for e in hal.log] == [
        "8000", "1d08890000", "0d088904", "8c000800030000", "0e00010203", "02ffff", "83000000"]
    assert hal.buffer == b"\x01\x02\x03"
    s = Settings()
    s.bandwidth = 500000
    radio.configure(s)
    hal.log = []
    radio.transmit(b"\x09")
    assert hal.log[2].hex() == "0d088900"


def test_receive_is_continuous() -> None:
    """13.1.5: SetRx with timeout 0xFFFFFF = continuous receive."""
    hal, radio = _radio()
    radio.configure(Settings())
    hal.log = []
    radio.receive()
    assert [e.hex() for e in hal.log] == ["8000", "8c000800ff0000", "02ffff", "82ffffff"]


def test_poll_reads_packet_rssi_and_snr() -> None:
    """13.5.3/13.5.4: GetRxBufferStatus, ReadBuffer from its start pointer, GetPacketStatus:
    RSSI = -RssiPkt/2 dBm, SNR = SnrPkt/4 dB (two's complement)."""
    hal, radio = _radio()
    radio.configure(Settings())
    assert radio.poll() is None  # DIO1 low: no SPI traffic
    hal.log = []
    hal.rx = b"hello world"
    hal.rssi_raw = 150
    hal.snr_raw = -30
    hal.irq_flags = 0x0002
    ev = radio.poll()
    assert ev == (EV_RX, b"hello world", -75, -30)
    assert hal.opcodes() == [0x12, 0x02, 0x13, 0x1E, 0x14]
    assert hal.irq_flags == 0
    hal.irq_flags = 0x0001
    assert radio.poll() == (EV_TX_DONE,)
    hal.irq_flags = 0x0042  # RxDone with CRC error: reported as a bad frame
    assert radio.poll() == (EV_RX, b"", 0, 0)


def test_busy_timeout_raises() -> None:
    """8.3.1: the host waits for BUSY low before each command; a stuck BUSY is a failure."""
    hal, radio = _radio()
    hal.busy_forever = True
    try:
        radio.configure(Settings())
    except RadioError as exc:
        assert "busy" in str(exc)
        return
    raise AssertionError("BUSY stuck high went unnoticed")


def test_sleep_then_wake_by_nss() -> None:
    """13.1.1: SetSleep(cold start); a falling NSS edge wakes the chip."""
    hal, radio = _radio()
    radio.configure(Settings())
    radio.sleep()
    assert hal.log[-1].hex() == "8400"
    assert hal.wakes == 0
    try:
        radio.receive()
    except RadioError:
        radio.configure(Settings())
    assert hal.wakes == 1
    radio.receive()
    assert hal.log[-1].hex() == "82ffffff"


def test_dongle_on_sx1262_end_to_end() -> None:
    """The command loop driving the driver: radio on, a frame received, one transmitted."""
    h = Harness("heltec_v3")
    hal = FakeSX1262()
    h.dongle.radio = SX1262(hal, 1.8, True)
    h.dongle.radio.reset()
    h.command(0x17, b"\x01")
    assert hal.log[-1].hex() == "82ffffff"
    hal.rx = crc32.add(b"packet")
    hal.rssi_raw, hal.snr_raw, hal.irq_flags = 200, 20, 0x0002
    h.now = 77
    h.dongle.poll()
    meta, data = frames_of(h.take())
    assert meta.hex() == "02ff9c140000004d" and data == b"\x00packet"
    h.host(kiss.encode(b"\x00abc"))
    assert hal.buffer == crc32.add(b"abc")
    hal.irq_flags = 0x0001
    h.dongle.poll()
    assert frames_of(h.take())[0][0] == 0x26
    assert hal.log[-1].hex() == "82ffffff"
