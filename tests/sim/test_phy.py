"""Physical-layer numbers: airtime against Semtech's formula values, the reception rule
with hand-computed outcomes, sensitivity, noise and path loss."""

from __future__ import annotations

import math
import struct
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmware_sim import phy
from firmware_sim.phy import round_tenth
from gateway.wire.lora import LoRaParams, profile

# Time on air in ms of 120..124-byte frames (explicit header, no PHY CRC, CR 4/5,
# preamble 8, LDRO on where a symbol lasts >= 16 ms), worked out by hand from the
# Semtech SX1276 datasheet formula (section 4.1.1.7) and checked against Semtech's
# LoRa calculator. Rows: bandwidth kHz, SF; columns: 120, 121, 122, 123, 124 bytes.
SEMTECH_MS = {
    (125, 7): (199.936, 199.936, 199.936, 205.056, 205.056),
    (125, 8): (348.672, 358.912, 358.912, 358.912, 358.912),
    (125, 9): (635.904, 635.904, 635.904, 656.384, 656.384),
    (125, 10): (1148.928, 1148.928, 1189.888, 1189.888, 1189.888),
    (125, 11): (2543.616, 2543.616, 2543.616, 2543.616, 2625.536),
    (125, 12): (4595.712, 4595.712, 4595.712, 4759.552, 4759.552),
    (250, 7): (99.968, 99.968, 99.968, 102.528, 102.528),
    (250, 8): (174.336, 179.456, 179.456, 179.456, 179.456),
    (250, 9): (317.952, 317.952, 317.952, 328.192, 328.192),
    (250, 10): (574.464, 574.464, 594.944, 594.944, 594.944),
    (250, 11): (1067.008, 1067.008, 1067.008, 1067.008, 1107.968),
    (250, 12): (2297.856, 2297.856, 2297.856, 2379.776, 2379.776),
    (500, 7): (49.984, 49.984, 49.984, 51.264, 51.264),
    (500, 8): (87.168, 89.728, 89.728, 89.728, 89.728),
    (500, 9): (158.976, 158.976, 158.976, 164.096, 164.096),
    (500, 10): (287.232, 287.232, 297.472, 297.472, 297.472),
    (500, 11): (533.504, 533.504, 533.504, 533.504, 553.984),
    (500, 12): (985.088, 985.088, 985.088, 1026.048, 1026.048),
}


@pytest.mark.parametrize("bw_khz, sf", sorted(SEMTECH_MS))
def test_airtime_of_full_frames_matches_semtech_within_1ms(bw_khz: int, sf: int) -> None:
    params = LoRaParams(868_300_000, bw_khz * 1000, sf)
    for length, expected_ms in zip(range(120, 125), SEMTECH_MS[(bw_khz, sf)], strict=True):
        assert abs(phy.airtime(params, length) * 1000 - expected_ms) < 1.0, (length, sf)


def test_airtime_matches_published_lorawan_calculator_values() -> None:
    # 51-byte application payload + 13 bytes of LoRaWAN framing, PHY CRC on (uplink):
    # The Things Network's airtime calculator shows 118.0 ms at SF7 and 2793.5 ms at SF12.
    sf7 = LoRaParams(868_100_000, 125_000, 7, phy_crc=True)
    assert phy.airtime(sf7, 64) * 1000 == pytest.approx(118.016, abs=0.001)
    assert phy.airtime(replace(sf7, sf=12), 64) * 1000 == pytest.approx(2793.472, abs=0.001)


def test_profile_airtime_from_wire_compat_notes() -> None:
    # wire-compat.md: ~205 ms at SF7/BW125, ~103 ms BW250, ~51 ms BW500 for 124 bytes
    assert phy.airtime(profile("EU868.a"), 124) == pytest.approx(0.205, abs=0.001)
    assert phy.airtime(profile("EU868.b"), 124) == pytest.approx(0.103, abs=0.001)
    assert phy.airtime(profile("EU868.c"), 124) == pytest.approx(0.051, abs=0.001)


def test_sensitivity_table_and_limits() -> None:
    assert phy.sensitivity_dbm(7, 125_000) == -123.0
    assert phy.sensitivity_dbm(12, 125_000) == -136.0
    assert phy.sensitivity_dbm(7, 250_000) == -120.0
    assert phy.sensitivity_dbm(12, 500_000) == -130.0
    for sf in phy.SPREADING_FACTORS:  # a higher SF hears weaker signals
        for bw in phy.BANDWIDTHS_HZ:
            if sf > 7:
                assert phy.sensitivity_dbm(sf, bw) < phy.sensitivity_dbm(sf - 1, bw)
    with pytest.raises(ValueError, match="SF6"):
        phy.sensitivity_dbm(6, 125_000)
    with pytest.raises(ValueError, match="62500"):
        phy.sensitivity_dbm(7, 62_500)
    with pytest.raises(ValueError, match="bandwidth"):
        phy.check_params(LoRaParams(868_300_000, 62_500, 7))


def test_noise_floor_and_snr() -> None:
    # -174 dBm/Hz + 10 log10(125 000) (= 50.97 dB) + 6 dB = -117.03 dBm
    assert phy.noise_floor_dbm(125_000) == pytest.approx(-117.031, abs=0.001)
    assert phy.snr_db(-107.031, 125_000) == pytest.approx(10.0, abs=0.001)
    # an interferer as strong as the noise halves the SNR's linear value: -3.01 dB
    noise_mw = phy.dbm_to_mw(phy.noise_floor_dbm(125_000))
    assert phy.snr_db(-107.031, 125_000, noise_mw) == pytest.approx(10.0 - 3.0103, abs=0.001)


def test_path_loss_presets() -> None:
    bor = phy.PATH_LOSS_PRESETS["log-distance"]
    assert (bor.d0_m, bor.pl_d0_db, bor.gamma, bor.sigma_db) == (40.0, 127.41, 2.08, 3.57)
    assert bor.median_db(40.0) == pytest.approx(127.41)
    assert bor.median_db(400.0) == pytest.approx(127.41 + 20.8)  # one decade: 10 gamma dB
    assert bor.distance_for(bor.median_db(225.0)) == pytest.approx(225.0)
    open_ = phy.PATH_LOSS_PRESETS["open-terrain"]
    assert open_.median_db(1000.0) == pytest.approx(128.95)
    assert open_.median_db(10_000.0) == pytest.approx(128.95 + 23.2)


# --- the reception rule, outcomes worked out by hand --------------------------------

SENS = -123.0


def test_a_lone_frame_above_sensitivity_is_decoded() -> None:
    assert phy.reception(-100.0, SENS) is None
    assert phy.reception(-123.0, SENS) is None  # exactly at sensitivity
    assert phy.reception(-123.1, SENS) == phy.BELOW_SENSITIVITY


def test_capture_effect_single_interferer() -> None:
    # -90 against -96: exactly 6 dB above, survives; against -95: 5 dB, lost
    assert phy.reception(-90.0, SENS, phy.dbm_to_mw(-96.0)) is None
    assert phy.reception(-90.0, SENS, phy.dbm_to_mw(-95.0)) == phy.COLLISION
    # the weaker one never survives the stronger
    assert phy.reception(-96.0, SENS, phy.dbm_to_mw(-90.0)) == phy.COLLISION


def test_capture_effect_counts_the_sum_of_the_others() -> None:
    # two interferers at -100 dBm each sum to -96.99 dBm: a -90 dBm frame is 6.99 dB above
    two = phy.total_mw([-100.0, -100.0])
    assert phy.mw_to_dbm(two) == pytest.approx(-96.99, abs=0.01)
    assert phy.reception(-90.0, SENS, two) is None
    # three at -100 dBm sum to -95.23 dBm: only 5.23 dB below -90, so the frame is lost,
    # although it is 10 dB above each of them alone
    three = phy.total_mw([-100.0] * 3)
    assert phy.reception(-90.0, SENS, three) == phy.COLLISION


def test_half_duplex_beats_everything() -> None:
    assert phy.reception(-50.0, SENS, transmitting=True) == phy.HALF_DUPLEX
    assert phy.reception(-130.0, SENS, transmitting=True) == phy.HALF_DUPLEX


@given(signal=st.floats(-140, -30), others=st.lists(st.floats(-150, -30), max_size=4),
       extra=st.floats(-150, -30))
def test_more_interference_never_rescues_a_frame(signal: float, others: list[float],
                                                 extra: float) -> None:
    before = phy.reception(signal, SENS, phy.total_mw(others))
    after = phy.reception(signal, SENS, phy.total_mw([*others, extra]))
    if before is not None:
        assert after is not None


@given(signal=st.floats(-122, -30), interferer=st.floats(-150, -30))
def test_capture_threshold_is_six_db(signal: float, interferer: float) -> None:
    outcome = phy.reception(signal, SENS, phy.dbm_to_mw(interferer))
    if signal - interferer >= 6.0 + 1e-9:
        assert outcome is None
    elif signal - interferer < 6.0 - 1e-9:
        assert outcome == phy.COLLISION


def _near_half(k_steps: tuple[int, int]) -> float:
    """A float a few ulps from the half (k + 0.5) / 10."""
    k, steps = k_steps
    x = (k + 0.5) / 10
    for _ in range(abs(steps)):
        x = math.nextafter(x, math.inf if steps > 0 else -math.inf)
    return x


@given(st.floats(allow_nan=False) | st.floats(-200.0, 50.0)
       | st.integers(-20000, 5000).map(lambda k: (k + 0.5) / 10)
       | st.tuples(st.integers(-20000, 5000), st.integers(-3, 3)).map(_near_half))
def test_round_tenth_is_round_to_one_digit(x: float) -> None:
    expected = round(x, 1)
    assert struct.pack("<d", round_tenth(x)) == struct.pack("<d", expected)  # -0.0 too
