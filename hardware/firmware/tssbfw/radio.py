"""What the command loop needs from a radio driver, and the settings it configures.

A driver (``sx1262.SX1262``, ``sx1276.SX1276``, or a fake in tests and the simulator)
provides:

- ``CHIP`` ("sx1262"/"sx1276") and the limits ``FREQ_MIN``, ``FREQ_MAX`` (Hz),
  ``SF_MIN``, ``SF_MAX``, ``POWER_MIN``, ``POWER_MAX`` (dBm);
- ``reset()``: hardware reset, the radio is left unconfigured in standby or sleep;
- ``configure(settings)``: apply a ``Settings`` and stay in standby;
- ``receive()``: continuous receive; ``transmit(frame)``: start sending one LoRa frame;
- ``sleep()``: lowest-power mode, configuration may be lost;
- ``poll()``: ``None`` or one event: ``(EV_TX_DONE,)`` or
  ``(EV_RX, frame, rssi_dbm, snr_quarter_db)``.

Drivers raise ``RadioError`` when the chip does not answer or a command times out.
"""

from tssbfw.compat import const

EV_TX_DONE = const(1)
EV_RX = const(2)

BANDWIDTHS = (7800, 10400, 15600, 20800, 31250, 41700, 62500, 125000, 250000, 500000)
"""The LoRa bandwidths of SX127x and SX126x in Hz, in the order of their register codes."""


LIMITS = {
    # chip: (FREQ_MIN, FREQ_MAX, SF_MIN, SF_MAX, POWER_MIN, POWER_MAX)
    # SX1261/2 datasheet 3.1 (150-960 MHz, SF5-12) and 13.4.4 (SetTxParams -9..+22 dBm);
    # SX1276 datasheet 2.5.1 (137-1020 MHz), 4.1.1.2 (SF6 needs an implicit header) and
    # 5.4.3 (PA_BOOST +2..+20 dBm).
    "sx1262": (150000000, 960000000, 5, 12, -9, 22),
    "sx1276": (137000000, 1020000000, 7, 12, 2, 20),
}


def apply_limits(cls, chip: str) -> None:
    """Give a radio class the CHIP name and limit attributes of ``chip``."""
    lim = LIMITS[chip]
    cls.CHIP = chip
    cls.FREQ_MIN, cls.FREQ_MAX, cls.SF_MIN, cls.SF_MAX, cls.POWER_MIN, cls.POWER_MAX = lim


class RadioError(Exception):
    """The radio did not answer, or a command timed out."""


class Settings:
    """LoRa settings in force; the defaults are those after boot (PROTOCOL.md)."""

    def __init__(self) -> None:
        self.frequency = 868300000
        self.bandwidth = 125000
        self.sf = 7
        self.cr = 5
        self.sync_word = 0x58
        self.tx_power = 14
        self.preamble = 8

    def copy(self) -> "Settings":
        other = Settings()
        other.frequency = self.frequency
        other.bandwidth = self.bandwidth
        other.sf = self.sf
        other.cr = self.cr
        other.sync_word = self.sync_word
        other.tx_power = self.tx_power
        other.preamble = self.preamble
        return other
