"""LoRa physical-layer numbers: sensitivity, noise, SNR, path loss and the capture rule.

Everything here is a pure function of its arguments; the channel (``channel.py``) applies
it to transmissions in flight. Sources, one per number:

* **Airtime**: Semtech's time-on-air formula (SX1276 datasheet section 4.1.1.7, SX1261/2
  datasheet section 6.1.4), implemented once in :func:`gateway.wire.lora.airtime` and
  re-used here (``airtime``), never re-implemented.
* **Receiver sensitivity** per spreading factor and bandwidth: Semtech SX1276/77/78/79
  datasheet (rev. 7), table 10 "Receiver specifications", band 1 (862-1020 MHz), LoRa
  modem: 125 kHz -123/-126/-129/-132/-133/-136 dBm for SF7..SF12, 250 kHz
  -120/-123/-125/-128/-130/-133 dBm, 500 kHz -116/-119/-122/-125/-128/-130 dBm. The
  125 kHz row is also the table used by Augustin et al. 2016 ("A Study of LoRa", Sensors
  16(9), doi:10.3390/s16091466).
* **SNR demodulation floor**: SX1276 datasheet table 13 "Range of spreading factors":
  -7.5, -10, -12.5, -15, -17.5, -20 dB for SF7..SF12.
* **Noise floor**: thermal noise -174 dBm/Hz + 10 log10(BW) + a 6 dB receiver noise
  figure (the figure Semtech's AN1200.22 "LoRa Modulation Basics" uses for its link
  budget); SNR = received power - 10 log10(noise + interference).
* **Path loss**: log-distance with log-normal shadowing,
  ``PL(d) = PL(d0) + 10 gamma log10(d / d0) + X_sigma``. The default (``log-distance``)
  has d0 = 40 m, PL(d0) = 127.41 dB, gamma = 2.08, sigma = 3.57 dB, measured by Bor,
  Roedig, Voigt and Alonso, "Do LoRa Low-Power Wide-Area Networks Scale?" (MSWiM 2016,
  the LoRaSim paper) in a built-up area. The ``open-terrain`` preset has d0 = 1 km,
  PL(d0) = 128.95 dB, gamma = 2.32, sigma = 7.8 dB, from Petajajarvi et al., "On the
  Coverage of LPWANs: Range Evaluation and Channel Attenuation Model for LoRa
  Technology" (ITST 2015), measured with nodes on the ground around Oulu.
* **Capture effect**: a frame survives overlapping frames on the same channel
  (frequency, bandwidth and spreading factor) only when its power is at least 6 dB above
  the sum of theirs (the threshold the simulator issue prescribes; it is also LoRaSim's
  power threshold). Different spreading factors are treated as orthogonal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from gateway.wire.lora import LoRaParams, airtime

__all__ = [
    "BANDWIDTHS_HZ",
    "BELOW_SENSITIVITY",
    "CAPTURE_THRESHOLD_DB",
    "COLLISION",
    "DUTY_CYCLE",
    "HALF_DUPLEX",
    "NOISE_FIGURE_DB",
    "PATH_LOSS_PRESETS",
    "SNR_FLOOR_DB",
    "SPREADING_FACTORS",
    "PathLoss",
    "airtime",
    "check_params",
    "dbm_to_mw",
    "mw_to_dbm",
    "noise_floor_dbm",
    "reception",
    "sensitivity_dbm",
    "snr_db",
    "total_mw",
]

# drop reasons the channel adds to the Node's own (capture field ``reason``)
HALF_DUPLEX = "half-duplex"
BELOW_SENSITIVITY = "below-sensitivity"
COLLISION = "collision"
DUTY_CYCLE = "duty-cycle"

SPREADING_FACTORS = range(7, 13)
BANDWIDTHS_HZ = (125_000, 250_000, 500_000)

_SENSITIVITY: dict[int, tuple[float, ...]] = {  # SX1276 datasheet table 10, SF7..SF12
    125_000: (-123.0, -126.0, -129.0, -132.0, -133.0, -136.0),
    250_000: (-120.0, -123.0, -125.0, -128.0, -130.0, -133.0),
    500_000: (-116.0, -119.0, -122.0, -125.0, -128.0, -130.0),
}

SNR_FLOOR_DB: dict[int, float] = {7: -7.5, 8: -10.0, 9: -12.5, 10: -15.0, 11: -17.5, 12: -20.0}
"""Lowest SNR at which each spreading factor still demodulates (SX1276 table 13)."""

NOISE_FIGURE_DB = 6.0
THERMAL_NOISE_DBM_HZ = -174.0
CAPTURE_THRESHOLD_DB = 6.0


def check_params(params: LoRaParams) -> None:
    """Raise ValueError unless the simulator has numbers for this SF and bandwidth."""
    if params.sf not in SPREADING_FACTORS:
        raise ValueError(f"spreading factor {params.sf} is not simulated; use 7..12")
    if params.bandwidth_hz not in BANDWIDTHS_HZ:
        raise ValueError(f"bandwidth {params.bandwidth_hz} Hz is not simulated; use "
                         "125000, 250000 or 500000")


def sensitivity_dbm(sf: int, bandwidth_hz: int) -> float:
    """The weakest signal the receiver decodes at this SF and bandwidth (dBm)."""
    row = _SENSITIVITY.get(bandwidth_hz)
    if row is None or sf not in SPREADING_FACTORS:
        raise ValueError(f"no sensitivity for SF{sf} at {bandwidth_hz} Hz; "
                         "SF 7..12 and 125/250/500 kHz are simulated")
    return row[sf - 7]


def noise_floor_dbm(bandwidth_hz: int) -> float:
    """Thermal noise in the channel plus the receiver's noise figure (dBm)."""
    return THERMAL_NOISE_DBM_HZ + 10.0 * math.log10(bandwidth_hz) + NOISE_FIGURE_DB


def dbm_to_mw(dbm: float) -> float:
    return float(10.0 ** (dbm / 10.0))


def mw_to_dbm(mw: float) -> float:
    return 10.0 * math.log10(mw) if mw > 0 else -math.inf


_HALF_MARGIN = 1e-6  # tenths this close to a half go the exact way (the product's error
# is below 1e-12 for any power a radio sees)


def round_tenth(x: float) -> float:
    """``round(x, 1)``, the very same float, in a fraction of the time.

    ``round(x, 1)`` finds the decimal digits of ``x`` exactly (about 0.4 us): the
    simulator rounds every signal it records (millions). Where ``10 x`` is not within
    ``_HALF_MARGIN`` of a half, the nearest integer ``r`` to it is the digits rounding
    gives, and ``r / 10`` (a correctly rounded division) is the double nearest that
    decimal, as ``round`` returns; near a half, at zero (the sign of -0.0) and for huge
    or non-finite values ``round`` itself answers.
    """
    y = x * 10.0
    if -1e15 < y < 1e15:
        r = round(y)
        if r and abs(y - r) < 0.5 - _HALF_MARGIN:
            return r / 10
    return round(x, 1)


def snr_db(signal_dbm: float, bandwidth_hz: int, interference_mw: float = 0.0) -> float:
    """Signal to noise-plus-interference ratio in dB."""
    return signal_dbm - mw_to_dbm(dbm_to_mw(noise_floor_dbm(bandwidth_hz)) + interference_mw)


def total_mw(powers_dbm: Iterable[float]) -> float:
    """The summed power of several signals, in mW."""
    return sum(dbm_to_mw(p) for p in powers_dbm)


def reception(signal_dbm: float, sensitivity: float, interference_mw: float = 0.0, *,
              transmitting: bool = False,
              capture_db: float = CAPTURE_THRESHOLD_DB) -> str | None:
    """Whether a frame is decoded: None, or the reason it is lost.

    ``interference_mw`` is the summed power, at this receiver, of the other frames on the
    same channel that overlap this one in time (:func:`total_mw`). A receiver that
    transmits while the frame is on the air hears nothing (half-duplex); a frame below
    ``sensitivity`` is not decoded; a frame with company survives only if it is at least
    ``capture_db`` above the sum of the others (capture effect).
    """
    if transmitting:
        return HALF_DUPLEX
    if signal_dbm < sensitivity:
        return BELOW_SENSITIVITY
    if interference_mw > 0 and signal_dbm - mw_to_dbm(interference_mw) < capture_db:
        return COLLISION
    return None


@dataclass(frozen=True, slots=True)
class PathLoss:
    """Log-distance path loss with log-normal shadowing (all values in dB and metres)."""

    name: str
    d0_m: float
    pl_d0_db: float
    gamma: float
    sigma_db: float
    min_distance_m: float = 1.0  # closer nodes are treated as this far apart

    def __post_init__(self) -> None:
        if self.d0_m <= 0 or self.gamma <= 0 or self.sigma_db < 0 or self.min_distance_m <= 0:
            raise ValueError("path loss needs d0 > 0, gamma > 0, sigma >= 0")

    def median_db(self, distance_m: float) -> float:
        """Path loss without shadowing at ``distance_m``."""
        d = max(distance_m, self.min_distance_m)
        return self.pl_d0_db + 10.0 * self.gamma * math.log10(d / self.d0_m)

    def distance_for(self, loss_db: float) -> float:
        """The distance at which the median path loss reaches ``loss_db`` (metres)."""
        return float(self.d0_m * 10.0 ** ((loss_db - self.pl_d0_db) / (10.0 * self.gamma)))


PATH_LOSS_PRESETS: dict[str, PathLoss] = {
    "log-distance": PathLoss("log-distance", 40.0, 127.41, 2.08, 3.57),  # Bor et al. 2016
    "open-terrain": PathLoss("open-terrain", 1000.0, 128.95, 2.32, 7.8),  # Petajajarvi 2015
}
"""Named path-loss models; ``log-distance`` is the default (see the module docstring)."""
