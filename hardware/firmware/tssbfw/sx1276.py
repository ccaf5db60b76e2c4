"""SX1276 LoRa driver over an injected SPI/pin object (``hal``; see ``tssbfw.hal``).

Registers from the Semtech SX1276/77/78/79 datasheet (rev 7): section 4.1.2.3 (LoRa
mode is entered from sleep), 4.1.6 (data buffer/FIFO use), 5.4.3 (PA_BOOST and RegPaDac
for +20 dBm), 5.5.5 (packet RSSI and SNR), 6.4 (LoRa register map) and 7.2.2 (manual
reset).
"""

from tssbfw.airtime import low_data_rate
from tssbfw.compat import const
from tssbfw.radio import BANDWIDTHS, EV_RX, EV_TX_DONE, RadioError, apply_limits

REG_FIFO = const(0x00)
REG_OP_MODE = const(0x01)
REG_FRF_MSB = const(0x06)
REG_PA_CONFIG = const(0x09)
REG_OCP = const(0x0B)
REG_LNA = const(0x0C)
REG_FIFO_ADDR_PTR = const(0x0D)
REG_FIFO_TX_BASE = const(0x0E)
REG_FIFO_RX_BASE = const(0x0F)
REG_FIFO_RX_CURRENT = const(0x10)
REG_IRQ_FLAGS = const(0x12)
REG_RX_NB_BYTES = const(0x13)
REG_PKT_SNR = const(0x19)
REG_PKT_RSSI = const(0x1A)
REG_MODEM_CONFIG1 = const(0x1D)
REG_MODEM_CONFIG2 = const(0x1E)
REG_PREAMBLE_MSB = const(0x20)
REG_PREAMBLE_LSB = const(0x21)
REG_PAYLOAD_LENGTH = const(0x22)
REG_MODEM_CONFIG3 = const(0x26)
REG_DETECT_OPTIMIZE = const(0x31)
REG_DETECTION_THRESHOLD = const(0x37)
REG_SYNC_WORD = const(0x39)
REG_DIO_MAPPING1 = const(0x40)
REG_VERSION = const(0x42)
REG_PA_DAC = const(0x4D)

LONG_RANGE = const(0x80)
LOW_FREQ = const(0x08)
MODE_SLEEP = const(0x00)
MODE_STDBY = const(0x01)
MODE_TX = const(0x03)
MODE_RX_CONTINUOUS = const(0x05)

IRQ_RX_DONE = const(0x40)
IRQ_CRC_ERROR = const(0x20)
IRQ_TX_DONE = const(0x08)

VERSION = const(0x12)
LF_LIMIT_HZ = const(525000000)


def frf(freq_hz: int) -> bytes:
    """RegFrf: freq * 2**19 / 32 MHz as three bytes (section 4.1.4 / 6.4)."""
    return ((freq_hz << 19) // 32000000).to_bytes(3, "big")


def pa_registers(power: int) -> tuple:
    """(RegPaConfig, RegPaDac, RegOcp) for ``power`` dBm on PA_BOOST (section 5.4.3).

    Pout = 17 - (15 - OutputPower) up to +17 dBm; +18..+20 dBm need RegPaDac 0x87,
    giving Pout = OutputPower + 5, and a higher over-current limit (140 mA).
    """
    if power > 17:
        return (0x80 | 0x70 | (power - 5), 0x87, 0x20 | 17)
    return (0x80 | 0x70 | (power - 2), 0x84, 0x20 | 11)


def packet_rssi(pkt_rssi: int, snr_q: int, hf: bool) -> int:
    """Packet RSSI in dBm from RegPktRssiValue and RegPktSnrValue (section 5.5.5)."""
    rssi = (-157 if hf else -164) + pkt_rssi
    if snr_q < 0:
        rssi += snr_q // 4
    return rssi


class SX1276:
    def __init__(self, hal) -> None:
        self.hal = hal
        self.settings = None
        self._lf = 0

    def read(self, reg: int) -> int:
        return self.read_burst(reg, 1)[0]

    def read_burst(self, reg: int, n: int) -> bytes:
        hal = self.hal
        hal.select(True)
        try:
            resp = hal.transfer(bytes((reg & 0x7F,)) + bytes(n))
        finally:
            hal.select(False)
        return resp[1:]

    def write(self, reg: int, data) -> None:
        if isinstance(data, int):
            data = bytes((data,))
        hal = self.hal
        hal.select(True)
        try:
            hal.transfer(bytes((reg | 0x80,)) + bytes(data))
        finally:
            hal.select(False)

    def _mode(self, mode: int) -> None:
        self.write(REG_OP_MODE, LONG_RANGE | self._lf | mode)

    def reset(self) -> None:
        hal = self.hal
        hal.set_reset(0)
        hal.sleep_ms(1)  # > 100 us (section 7.2.2)
        hal.set_reset(1)
        hal.sleep_ms(10)  # > 5 ms
        self.settings = None
        version = self.read(REG_VERSION)
        if version != VERSION:
            raise RadioError(f"no SX1276 answer (RegVersion {version:02x})")

    def configure(self, s) -> None:
        bw_code = BANDWIDTHS.index(s.bandwidth)
        self._lf = LOW_FREQ if s.frequency < LF_LIMIT_HZ else 0
        self.write(REG_OP_MODE, MODE_SLEEP)  # LongRangeMode changes only in sleep
        self._mode(MODE_SLEEP)
        self._mode(MODE_STDBY)
        self.write(REG_FRF_MSB, frf(s.frequency))
        pa_config, pa_dac, ocp = pa_registers(s.tx_power)
        self.write(REG_PA_CONFIG, pa_config)
        self.write(REG_PA_DAC, pa_dac)
        self.write(REG_OCP, ocp)
        self.write(REG_LNA, 0x23)  # maximum gain, LNA boost on the HF port
        self.write(REG_MODEM_CONFIG1, (bw_code << 4) | ((s.cr - 4) << 1))  # explicit header
        self.write(REG_MODEM_CONFIG2, s.sf << 4)  # PHY CRC off
        ldro = 0x08 if low_data_rate(s.sf, s.bandwidth) else 0
        self.write(REG_MODEM_CONFIG3, ldro | 0x04)  # AGC auto on
        self.write(REG_PREAMBLE_MSB, bytes((s.preamble >> 8, s.preamble & 0xFF)))
        self.write(REG_SYNC_WORD, s.sync_word)
        self.write(REG_DETECT_OPTIMIZE, (self.read(REG_DETECT_OPTIMIZE) & 0xF8) | 0x03)
        self.write(REG_DETECTION_THRESHOLD, 0x0A)  # SF7..SF12
        self.write(REG_FIFO_TX_BASE, 0x00)
        self.write(REG_FIFO_RX_BASE, 0x00)
        self.write(REG_IRQ_FLAGS, 0xFF)
        self.settings = s.copy()

    def receive(self) -> None:
        if self.settings is None:
            raise RadioError("receive before configure")
        self._mode(MODE_STDBY)
        self.write(REG_DIO_MAPPING1, 0x00)  # DIO0 = RxDone
        self.write(REG_FIFO_ADDR_PTR, 0x00)
        self.write(REG_IRQ_FLAGS, 0xFF)
        self._mode(MODE_RX_CONTINUOUS)

    def transmit(self, frame: bytes) -> None:
        if self.settings is None:
            raise RadioError("transmit before configure")
        self._mode(MODE_STDBY)
        self.write(REG_DIO_MAPPING1, 0x40)  # DIO0 = TxDone
        self.write(REG_FIFO_ADDR_PTR, 0x00)
        self.write(REG_FIFO, frame)
        self.write(REG_PAYLOAD_LENGTH, len(frame))
        self.write(REG_IRQ_FLAGS, 0xFF)
        self._mode(MODE_TX)

    def sleep(self) -> None:
        self._mode(MODE_SLEEP)

    def poll(self):
        if not self.hal.irq():
            return None
        flags = self.read(REG_IRQ_FLAGS)
        self.write(REG_IRQ_FLAGS, flags)  # write 1 to clear
        if flags & IRQ_TX_DONE:
            return (EV_TX_DONE,)
        if flags & IRQ_RX_DONE:
            if flags & IRQ_CRC_ERROR:
                return (EV_RX, b"", 0, 0)
            length = self.read(REG_RX_NB_BYTES)
            self.write(REG_FIFO_ADDR_PTR, self.read(REG_FIFO_RX_CURRENT))
            data = self.read_burst(REG_FIFO, length)
            snr = self.read(REG_PKT_SNR)
            snr = snr - 256 if snr > 127 else snr
            rssi = packet_rssi(self.read(REG_PKT_RSSI), snr, not self._lf)
            return (EV_RX, bytes(data), rssi, snr)
        return None


apply_limits(SX1276, "sx1276")
