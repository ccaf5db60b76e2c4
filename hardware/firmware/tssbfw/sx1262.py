"""SX1262 LoRa driver over an injected SPI/pin object (``hal``; see ``tssbfw.hal``).

Commands and registers from the Semtech SX1261/2 datasheet (rev 2.1): section 8.3 (BUSY
handling), 9.2.1 (CalibrateImage bands), 13 (command set), 12.1 (register map: LoRa
sync word 0x0740/0x0741, reset value 0x1424), 14.2/14.3 (basic Tx/Rx sequences) and
15.1/15.4 (BW500 modulation-quality and inverted-IQ register fixes).
"""

from tssbfw.airtime import low_data_rate
from tssbfw.compat import const
from tssbfw.radio import BANDWIDTHS, EV_RX, EV_TX_DONE, RadioError, apply_limits

SET_SLEEP = const(0x84)
SET_STANDBY = const(0x80)
SET_TX = const(0x83)
SET_RX = const(0x82)
SET_REGULATOR_MODE = const(0x96)
CALIBRATE = const(0x89)
CALIBRATE_IMAGE = const(0x98)
SET_PA_CONFIG = const(0x95)
WRITE_REGISTER = const(0x0D)
READ_REGISTER = const(0x1D)
WRITE_BUFFER = const(0x0E)
READ_BUFFER = const(0x1E)
SET_DIO_IRQ_PARAMS = const(0x08)
GET_IRQ_STATUS = const(0x12)
CLEAR_IRQ_STATUS = const(0x02)
SET_DIO2_AS_RF_SWITCH = const(0x9D)
SET_DIO3_AS_TCXO = const(0x97)
SET_RF_FREQUENCY = const(0x86)
SET_PACKET_TYPE = const(0x8A)
SET_TX_PARAMS = const(0x8E)
SET_MODULATION_PARAMS = const(0x8B)
SET_PACKET_PARAMS = const(0x8C)
GET_RX_BUFFER_STATUS = const(0x13)
GET_PACKET_STATUS = const(0x14)
CLEAR_DEVICE_ERRORS = const(0x07)
SET_BUFFER_BASE_ADDRESS = const(0x8F)

REG_SYNC_WORD = const(0x0740)
REG_IQ_POLARITY = const(0x0736)
REG_TX_MODULATION = const(0x0889)

IRQ_TX_DONE = const(0x0001)
IRQ_RX_DONE = const(0x0002)
IRQ_HEADER_ERR = const(0x0020)
IRQ_CRC_ERR = const(0x0040)
IRQ_TIMEOUT = const(0x0200)
IRQ_MASK = const(0x0263)

PACKET_TYPE_LORA = const(0x01)
STDBY_RC = const(0x00)
BUSY_TIMEOUT_MS = const(100)

# SetModulationParams bandwidth codes, in the order of radio.BANDWIDTHS (table 13-47)
BW_CODES = (0x00, 0x08, 0x01, 0x09, 0x02, 0x0A, 0x03, 0x04, 0x05, 0x06)

# SetDIO3AsTCXOCtrl voltage codes (table 13-35): volts * 10 -> code
TCXO_CODES = {16: 0x00, 17: 0x01, 18: 0x02, 22: 0x03, 24: 0x04, 27: 0x05, 30: 0x06, 33: 0x07}

# CalibrateImage frequency pairs of table 9-2, by lowest frequency (MHz) of the band
IMAGE_BANDS = ((902, 0xE1, 0xE9), (863, 0xD7, 0xDB), (779, 0xC1, 0xC5), (470, 0x75, 0x81),
               (430, 0x6B, 0x6F))


def rf_frequency(freq_hz: int) -> int:
    """SetRfFrequency value: freq * 2**25 / 32 MHz (section 13.4.1)."""
    return (freq_hz << 25) // 32000000


def image_calibration(freq_hz: int) -> tuple:
    """CalibrateImage arguments for the band holding ``freq_hz`` (section 9.2.1).

    Frequencies below the lowest band of table 9-2 get an 8 MHz window around them in
    the table's 4 MHz steps.
    """
    mhz = freq_hz // 1000000
    for low, f1, f2 in IMAGE_BANDS:
        if mhz >= low:
            return (f1, f2)
    return ((mhz - 4) // 4, (mhz + 4 + 3) // 4)


def sync_word_bytes(sync: int) -> bytes:
    """SX127x sync word 0xXY as the SX126x register pair 0xX4, 0xY4 (0x58 -> 54 84)."""
    return bytes(((sync & 0xF0) | 0x04, ((sync & 0x0F) << 4) | 0x04))


class SX1262:
    def __init__(self, hal, tcxo_voltage=None, dio2_rf_switch: bool = True) -> None:
        self.hal = hal
        self.tcxo_voltage = tcxo_voltage
        self.dio2_rf_switch = dio2_rf_switch
        self.settings = None
        self._asleep = False

    # --- SPI transactions ---------------------------------------------------------

    def _wait_busy(self) -> None:
        hal = self.hal
        start = hal.ticks_ms()
        while hal.busy():
            if hal.elapsed_ms(start) > BUSY_TIMEOUT_MS:
                raise RadioError("busy timeout")
            hal.sleep_ms(0)

    def _wake(self) -> None:
        # any falling edge of NSS wakes the chip from sleep (section 13.1.1)
        self.hal.select(True)
        self.hal.sleep_ms(1)
        self.hal.select(False)
        self._asleep = False

    def command(self, opcode: int, args: bytes = b"", read: int = 0) -> bytes:
        """Send one command; return the ``read`` bytes clocked in after ``args``."""
        if self._asleep:
            self._wake()
        self._wait_busy()
        hal = self.hal
        hal.select(True)
        try:
            resp = hal.transfer(bytes((opcode,)) + bytes(args) + bytes(read))
        finally:
            hal.select(False)
        return resp[1 + len(args):]

    def write_register(self, addr: int, data: bytes) -> None:
        self.command(WRITE_REGISTER, bytes((addr >> 8, addr & 0xFF)) + bytes(data))

    def read_register(self, addr: int, n: int = 1) -> bytes:
        # address, then one NOP clocking out the status, then the data
        return self.command(READ_REGISTER, bytes((addr >> 8, addr & 0xFF, 0)), n)

    def irq_status(self) -> int:
        resp = self.command(GET_IRQ_STATUS, b"\x00", 2)
        return (resp[0] << 8) | resp[1]

    # --- radio interface (tssbfw.radio) ---------------------------------------------

    def reset(self) -> None:
        """Pulse NRESET (section 8.1), wait for BUSY, check the sync-word reset value."""
        hal = self.hal
        hal.set_reset(0)
        hal.sleep_ms(1)
        hal.set_reset(1)
        hal.sleep_ms(5)
        self._asleep = False
        self.settings = None
        if self.read_register(REG_SYNC_WORD, 2) != b"\x14\x24":
            raise RadioError("no SX126x answer")
        self.command(SET_STANDBY, bytes((STDBY_RC,)))

    def configure(self, s) -> None:
        """Apply settings ``s`` (a ``radio.Settings``); the radio is left in STDBY_RC."""
        bw_code = BW_CODES[BANDWIDTHS.index(s.bandwidth)]
        self.command(SET_STANDBY, bytes((STDBY_RC,)))
        if self.tcxo_voltage is not None:
            code = TCXO_CODES[int(self.tcxo_voltage * 10 + 0.5)]
            self.command(SET_DIO3_AS_TCXO, bytes((code, 0x00, 0x01, 0x40)))  # 5 ms
            self.command(CALIBRATE, b"\x7f")  # all blocks, now with the TCXO (13.1.12)
            self.command(CLEAR_DEVICE_ERRORS, b"\x00\x00")
        if self.dio2_rf_switch:
            self.command(SET_DIO2_AS_RF_SWITCH, b"\x01")
        self.command(SET_REGULATOR_MODE, b"\x01")  # DC-DC
        self.command(SET_PACKET_TYPE, bytes((PACKET_TYPE_LORA,)))
        self.command(SET_RF_FREQUENCY, rf_frequency(s.frequency).to_bytes(4, "big"))
        self.command(CALIBRATE_IMAGE, bytes(image_calibration(s.frequency)))
        self.command(SET_PA_CONFIG, b"\x04\x07\x00\x01")  # SX1262, up to +22 dBm
        self.command(SET_TX_PARAMS, bytes((s.tx_power & 0xFF, 0x04)))  # ramp 200 us
        ldro = 1 if low_data_rate(s.sf, s.bandwidth) else 0
        self.command(SET_MODULATION_PARAMS, bytes((s.sf, bw_code, s.cr - 4, ldro)))
        self._packet_params(s, 0xFF)
        self.write_register(REG_SYNC_WORD, sync_word_bytes(s.sync_word))
        iq = self.read_register(REG_IQ_POLARITY)[0]
        self.write_register(REG_IQ_POLARITY, bytes((iq | 0x04,)))  # standard IQ (15.4)
        self.command(SET_BUFFER_BASE_ADDRESS, b"\x00\x00")
        mask = bytes((IRQ_MASK >> 8, IRQ_MASK & 0xFF))
        self.command(SET_DIO_IRQ_PARAMS, mask + mask + b"\x00\x00\x00\x00")
        self.command(CLEAR_IRQ_STATUS, b"\xff\xff")
        self.settings = s.copy()

    def _packet_params(self, s, length: int) -> None:
        # preamble, explicit header, payload length, CRC off, standard IQ (13.4.6.2)
        self.command(SET_PACKET_PARAMS,
                     bytes((s.preamble >> 8, s.preamble & 0xFF, 0x00, length, 0x00, 0x00)))

    def receive(self) -> None:
        if self.settings is None:
            raise RadioError("receive before configure")
        self.command(SET_STANDBY, bytes((STDBY_RC,)))
        self._packet_params(self.settings, 0xFF)
        self.command(CLEAR_IRQ_STATUS, b"\xff\xff")
        self.command(SET_RX, b"\xff\xff\xff")  # continuous receive

    def transmit(self, frame: bytes) -> None:
        s = self.settings
        if s is None:
            raise RadioError("transmit before configure")
        self.command(SET_STANDBY, bytes((STDBY_RC,)))
        mod = self.read_register(REG_TX_MODULATION)[0]
        mod = mod & 0xFB if s.bandwidth == 500000 else mod | 0x04  # section 15.1
        self.write_register(REG_TX_MODULATION, bytes((mod,)))
        self._packet_params(s, len(frame))
        self.command(WRITE_BUFFER, b"\x00" + bytes(frame))
        self.command(CLEAR_IRQ_STATUS, b"\xff\xff")
        self.command(SET_TX, b"\x00\x00\x00")  # no chip time-out: the dongle times out

    def sleep(self) -> None:
        self.command(SET_SLEEP, b"\x00")  # cold start: configure() again after waking
        self._asleep = True
        self.settings = None

    def poll(self):
        if not self.hal.irq():
            return None
        irq = self.irq_status()
        self.command(CLEAR_IRQ_STATUS, bytes((irq >> 8, irq & 0xFF)))
        if irq & IRQ_TX_DONE:
            return (EV_TX_DONE,)
        if irq & (IRQ_HEADER_ERR | IRQ_CRC_ERR):
            return (EV_RX, b"", 0, 0)  # counted as a bad frame
        if irq & IRQ_RX_DONE:
            status = self.command(GET_RX_BUFFER_STATUS, b"\x00", 2)
            length, start = status[0], status[1]
            data = self.command(READ_BUFFER, bytes((start, 0x00)), length)
            pkt = self.command(GET_PACKET_STATUS, b"\x00", 3)
            snr = pkt[1] - 256 if pkt[1] > 127 else pkt[1]
            return (EV_RX, bytes(data), -(pkt[0] >> 1), snr)
        return None


apply_limits(SX1262, "sx1262")
