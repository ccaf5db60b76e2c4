"""LoRa radio settings: the reference profiles and the time a frame spends on air.

The airtime formula is Semtech's (SX1276 datasheet section 4.1.1.7, "Time on air";
SX1261/2 datasheet section 6.1.4 for the same symbol count)::

    T_sym      = 2**SF / BW
    T_preamble = (n_preamble + 4.25) * T_sym
    n_payload  = 8 + max(ceil((8*PL - 4*SF + 28 + 16*CRC - 20*IH) / (4*(SF - 2*DE))) * (CR + 4), 0)

with CR = 1..4 for the coding rates 4/5..4/8, IH = 1 for an implicit header, CRC = 1
when the PHY CRC is on and DE = 1 when low-data-rate optimisation is on (mandated when
a symbol lasts 16 ms or longer). tinySSB uses an explicit header and no PHY CRC: its
own CRC32 trailer protects each frame. A 124-byte frame at SF7/125 kHz takes 205 ms.

The gateway (dongle configuration), the replication Node (LoRa duty-cycle budget) and
the simulator (channel occupancy) all take their numbers from here.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "PROFILES",
    "REGIONS",
    "SYNC_WORD_TINYSSB",
    "LoRaParams",
    "PowerLimit",
    "airtime",
    "check_power",
    "power_limit",
    "power_limit_at",
    "profile",
]

SYNC_WORD_TINYSSB = 0x58
"""SX127x sync-word register value of the reference mesh (0x5484 on SX126x)."""


@dataclass(frozen=True, slots=True)
class LoRaParams:
    """One radio configuration. ``cr`` is the coding-rate denominator (5 means 4/5)."""

    frequency_hz: int
    bandwidth_hz: int
    sf: int
    cr: int = 5
    sync_word: int = SYNC_WORD_TINYSSB
    tx_power_dbm: int = 14
    preamble: int = 8
    explicit_header: bool = True
    phy_crc: bool = False

    def __post_init__(self) -> None:
        if not 6 <= self.sf <= 12:
            raise ValueError(f"spreading factor must be 6..12, got {self.sf}")
        if not 5 <= self.cr <= 8:
            raise ValueError(f"coding rate denominator must be 5..8 (4/5..4/8), got {self.cr}")
        if self.bandwidth_hz <= 0 or self.frequency_hz <= 0:
            raise ValueError("frequency and bandwidth must be positive")
        if not 0 <= self.sync_word <= 0xFF:
            raise ValueError(f"sync word must be one byte, got {self.sync_word:#x}")
        if not 1 <= self.preamble <= 0xFFFF:
            raise ValueError(f"preamble length must be 1..65535 symbols, got {self.preamble}")

    @property
    def symbol_s(self) -> float:
        """Duration of one LoRa symbol in seconds."""
        return float(2**self.sf) / self.bandwidth_hz

    @property
    def low_data_rate(self) -> bool:
        """Whether low-data-rate optimisation is required (symbols of 16 ms or more)."""
        return self.symbol_s >= 0.016

    def airtime(self, frame_len: int) -> float:
        """Seconds on air for a PHY payload of ``frame_len`` bytes (memoised: the
        replication Node asks for every frame it queues)."""
        return _airtime_cached(self, frame_len)


def airtime(params: LoRaParams, frame_len: int) -> float:
    """Seconds a frame of ``frame_len`` bytes occupies the channel under ``params``."""
    if not 0 <= frame_len <= 255:
        raise ValueError(f"a LoRa frame holds 0..255 bytes, got {frame_len}")
    sf = params.sf
    de = 1 if params.low_data_rate else 0
    ih = 0 if params.explicit_header else 1
    crc = 1 if params.phy_crc else 0
    numerator = 8 * frame_len - 4 * sf + 28 + 16 * crc - 20 * ih
    n_payload = 8 + max(math.ceil(numerator / (4 * (sf - 2 * de))) * params.cr, 0)
    return (params.preamble + 4.25 + n_payload) * params.symbol_s


@functools.lru_cache(maxsize=4096)
def _airtime_cached(params: LoRaParams, frame_len: int) -> float:
    return airtime(params, frame_len)


@dataclass(frozen=True, slots=True)
class PowerLimit:
    """What a region's rules allow a transmitter on a profile's frequency.

    ``max_dbm`` is the highest setting the gateway accepts (dBm at the chip, taken as
    ERP/EIRP with the 0 dBi antennas the boards ship with); ``default_dbm`` is what it
    configures when the user sets nothing; ``rule`` names where the limit comes from.
    """

    region: str
    max_dbm: int
    default_dbm: int
    rule: str
    band_hz: tuple[int, int]  # where the rule applies (the region's whole LoRa band)


REGIONS: dict[str, PowerLimit] = {
    # ETSI EN 300 220 / ERC Rec 70-03 annex 1, band h1.4 (868.0-868.6 MHz): 25 mW ERP, 1 %;
    # the rest of 863-870 MHz allows 25 mW too, except 869.4-869.65 (500 mW, unused here)
    "EU868": PowerLimit("EU868", 14, 14, "25 mW ERP in 868.0-868.6 MHz (ERC Rec 70-03)",
                        (863_000_000, 870_000_000)),
    # ERC Rec 70-03 annex 1, band h1.2 (433.05-434.79 MHz): 10 mW ERP
    "EU433": PowerLimit("EU433", 10, 10, "10 mW ERP in 433.05-434.79 MHz (ERC Rec 70-03)",
                        (433_050_000, 434_790_000)),
    # FCC part 15.247: 1 W conducted; the boards' chips give 20-22 dBm at most
    "US915": PowerLimit("US915", 30, 20, "1 W in 902-928 MHz (FCC part 15.247)",
                        (902_000_000, 928_000_000)),
    # ACMA LIPD class licence, 915-928 MHz: 1 W EIRP
    "AU915": PowerLimit("AU915", 30, 20, "1 W EIRP in 915-928 MHz (ACMA LIPD)",
                        (915_000_000, 928_000_000)),
}
"""Transmit-power rules by region, the ones the profiles below fall under."""


def _plan(region: str, freq_mhz: float, bw_khz: int, sf: int, cr: int = 5,
          sync: int = SYNC_WORD_TINYSSB) -> tuple[LoRaParams, str]:
    power = REGIONS[region].default_dbm
    return LoRaParams(round(freq_mhz * 1e6), bw_khz * 1000, sf, cr, sync, power), region


_PLANS: dict[str, tuple[LoRaParams, str]] = {
    # the 2025 ESP32 firmware (wire-compat.md section 5); its default is US915.a
    "US915.a": _plan("US915", 904.6, 125, 7),
    "US915.b": _plan("US915", 904.6, 250, 7),
    "US915.c": _plan("US915", 904.6, 500, 7),
    "AU915.a": _plan("AU915", 917.5, 125, 7),
    "AU915.b": _plan("AU915", 917.5, 250, 7),
    "EU868.a": _plan("EU868", 868.3, 125, 7),
    "EU868.b": _plan("EU868", 868.3, 250, 7),
    "EU868.c": _plan("EU868", 868.3, 500, 7),
    "EU433.a": _plan("EU433", 433.3, 125, 7),
    "E22-868": _plan("EU868", 868.2, 125, 9, cr=7, sync=0x12),
    # the 2023 T-Beam firmware: same names, other settings, hence the prefix
    "tbeam23/AU915.a": _plan("AU915", 917.5, 500, 8),
    "tbeam23/AU915.b": _plan("AU915", 917.5, 125, 7),
    "tbeam23/EU868.a": _plan("EU868", 868.3, 250, 7),
    "tbeam23/EU868.b": _plan("EU868", 868.3, 125, 7),
    "tbeam23/US915.a": _plan("US915", 904.6, 500, 8),
    "tbeam23/US915.b": _plan("US915", 904.6, 125, 7),
}

PROFILES: dict[str, LoRaParams] = {name: params for name, (params, _) in _PLANS.items()}
"""Radio plans of the reference firmware, by name. All use CR 4/5 and sync word 0x58
except the E22 module plan; preamble 8, explicit header, no PHY CRC; transmit power the
region's legal default (:data:`REGIONS`: 14 dBm on EU868, 10 on EU433, 20 elsewhere)."""


def power_limit(name: str) -> PowerLimit:
    """The transmit-power rule of the region profile ``name`` falls under."""
    try:
        return REGIONS[_PLANS[name][1]]
    except KeyError:
        raise KeyError(f"unknown LoRa profile {name!r}") from None


def power_limit_at(frequency_hz: int) -> PowerLimit | None:
    """The rule for a frequency (the first region whose band holds it); None outside."""
    return next((r for r in REGIONS.values()
                 if r.band_hz[0] <= frequency_hz <= r.band_hz[1]), None)


def check_power(name: str, dbm: int) -> int:
    """``dbm`` when profile ``name`` may transmit with it; ValueError naming the limit."""
    limit = power_limit(name)
    if dbm > limit.max_dbm:
        raise ValueError(f"{dbm} dBm is above the legal limit of {limit.max_dbm} dBm for "
                         f"{name} ({limit.rule}); use {limit.max_dbm} or less")
    if dbm < -9:
        raise ValueError(f"{dbm} dBm is below what the radios support (-9 dBm)")
    return dbm


def profile(name: str, **overrides: Any) -> LoRaParams:
    """Return the named profile, optionally with some fields replaced.

    Raises :class:`KeyError` naming the known profiles when ``name`` is unknown.
    """
    try:
        base = PROFILES[name]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise KeyError(f"unknown LoRa profile {name!r}; known profiles: {known}") from None
    return replace(base, **overrides) if overrides else base
