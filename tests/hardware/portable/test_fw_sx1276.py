"""SX1276 driver register sequences, checked against the Semtech SX1276/77/78/79
datasheet (rev 7).

Sections referred to: 4.1.2.3 (LoRa mode is selected in sleep), 4.1.4 (Frf = f * 2^19 /
32 MHz), 4.1.6 (FIFO: base addresses, FifoAddrPtr, RegRxNbBytes, FifoRxCurrentAddr),
5.4.3 (PA_BOOST output power, RegPaDac 0x87 for +20 dBm, RegOcp), 5.5.5 (packet RSSI:
-157 + PacketRssi on the HF port, -164 on the LF port, + PacketSnr/4 when SNR < 0),
6.4 (LoRa register map: RegModemConfig1/2/3, RegSyncWord 0x39, RegDioMapping1,
RegIrqFlags write-to-clear, RegVersion 0x12) and 7.2.2 (manual reset).
"""

from fakehal import FakeSX1276
from tssbfw.radio import EV_RX, EV_TX_DONE, RadioError, Settings
from tssbfw.sx1276 import SX1276, frf, pa_registers, packet_rssi


def _radio():
    hal = FakeSX1276()
    radio = SX1276(hal)
    radio.reset()
    hal.writes = []
    return hal, radio


def test_reset_checks_version() -> None:
    """7.2.2: NRESET low > 100 us then high, wait 5 ms; 6.4: RegVersion reads 0x12."""
    hal = FakeSX1276()
    SX1276(hal).reset()
    assert hal.reset_levels == [0, 1]
    assert hal.t >= 6
    hal.regs[0x42] = 0
    try:
        SX1276(hal).reset()
    except RadioError:
        return
    raise AssertionError("a silent chip was accepted")


def test_configure_sequence_eu868() -> None:
    """4.1.2.3, 4.1.4, 5.4.3, 6.4: the whole configuration of EU868.a at 14 dBm."""
    hal, radio = _radio()
    radio.configure(Settings())
    assert [(r, v.hex()) for r, v in hal.writes] == [
        (0x01, "00"),  # sleep (FSK): LongRangeMode can change only in sleep
        (0x01, "80"),  # LoRa, sleep, HF
        (0x01, "81"),  # LoRa, standby
        (0x06, "d91333"),  # RegFrf: 868.3 MHz
        (0x09, "fc"),  # RegPaConfig: PA_BOOST, OutputPower 12 -> 14 dBm
        (0x4D, "84"),  # RegPaDac: default power
        (0x0B, "2b"),  # RegOcp: on, 100 mA
        (0x0C, "23"),  # RegLna: G1, HF boost
        (0x1D, "72"),  # RegModemConfig1: BW125, 4/5, explicit header
        (0x1E, "70"),  # RegModemConfig2: SF7, PHY CRC off
        (0x26, "04"),  # RegModemConfig3: LDRO off, AGC auto
        (0x20, "0008"),  # RegPreambleMsb/Lsb: 8
        (0x39, "58"),  # RegSyncWord
        (0x31, "c3"),  # RegDetectOptimize: SF7..12
        (0x37, "0a"),  # RegDetectionThreshold: SF7..12
        (0x0E, "00"), (0x0F, "00"),  # FIFO base addresses
        (0x12, "ff"),  # clear IRQ flags
    ]


def test_pa_boost_power_levels() -> None:
    """5.4.3: Pout = 2 + OutputPower up to 17 dBm; with RegPaDac 0x87 Pout = 5 + OutputPower."""
    assert pa_registers(2) == (0xF0, 0x84, 0x2B)
    assert pa_registers(17) == (0xFF, 0x84, 0x2B)
    assert pa_registers(18) == (0xFD, 0x87, 0x31)
    assert pa_registers(20) == (0xFF, 0x87, 0x31)


def test_low_band_and_ldro() -> None:
    """6.4 RegOpMode bit 3 (LowFrequencyModeOn) below 525 MHz; RegModemConfig3 bit 3 LDRO."""
    hal, radio = _radio()
    s = Settings()
    s.frequency, s.sf, s.bandwidth = 433300000, 12, 125000
    radio.configure(s)
    writes = dict(hal.writes[1:])
    assert writes[0x01] == b"\x89"  # standby, LoRa, LF (the last op-mode write)
    assert writes[0x06] == frf(433300000)
    assert writes[0x26] == b"\x0c"
    assert writes[0x1E] == b"\xc0"


def test_transmit_and_receive_sequences() -> None:
    """4.1.6 and 6.4: DIO0 = TxDone (RegDioMapping1 01xxxxxx) / RxDone (00xxxxxx)."""
    hal, radio = _radio()
    radio.configure(Settings())
    hal.writes = []
    radio.transmit(b"\xaa\xbb")
    assert [(r, v.hex()) for r, v in hal.writes] == [
        (0x01, "81"), (0x40, "40"), (0x0D, "00"), (0x00, "aabb"), (0x22, "02"),
        (0x12, "ff"), (0x01, "83")]
    assert hal.fifo[:2] == b"\xaa\xbb"
    hal.writes = []
    radio.receive()
    assert [(r, v.hex()) for r, v in hal.writes] == [
        (0x01, "81"), (0x40, "00"), (0x0D, "00"), (0x12, "ff"), (0x01, "85")]


def test_poll_reads_fifo_from_current_address() -> None:
    """4.1.6: read RegRxNbBytes bytes from RegFifoRxCurrentAddr; 5.5.5 RSSI and SNR."""
    hal, radio = _radio()
    radio.configure(Settings())
    radio.receive()
    assert radio.poll() is None
    hal.fifo[0x20:0x29] = b"123456789"
    hal.regs[0x13] = 9
    hal.regs[0x10] = 0x20
    hal.regs[0x19] = 0xF0  # SNR -16/4 = -4 dB
    hal.regs[0x1A] = 60
    hal.regs[0x12] = 0x50  # RxDone | ValidHeader
    hal.dio0 = True
    assert radio.poll() == (EV_RX, b"123456789", -157 + 60 - 4, -16)
    assert hal.regs[0x12] == 0
    hal.regs[0x12] = 0x08
    assert radio.poll() == (EV_TX_DONE,)
    hal.regs[0x12] = 0x60  # RxDone with PayloadCrcError
    assert radio.poll() == (EV_RX, b"", 0, 0)


def test_packet_rssi_formula() -> None:
    """5.5.5: HF -157 / LF -164 + PacketRssi; SNR < 0 adds PacketSnr * 0.25."""
    assert packet_rssi(82, 28, True) == -75
    assert packet_rssi(82, 28, False) == -82
    assert packet_rssi(40, -40, True) == -127
