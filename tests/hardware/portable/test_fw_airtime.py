"""Airtime in integer microseconds (tssbfw.airtime).

The comparison with gateway.wire.lora.airtime over many parameter sets is in
tests/hardware/test_against_gateway.py (CPython only); here the figures quoted by
wire-compat.md section 5 and the SX126x SF5/SF6 variant (SX1261/2 datasheet 6.1.4).
"""

from tssbfw.airtime import airtime_us, low_data_rate


def test_reference_figures() -> None:
    # a full 124-byte frame: ~205 ms at SF7/BW125, ~103 ms BW250, ~51 ms BW500
    assert airtime_us(7, 125000, 5, 8, 124) == 205056
    assert airtime_us(7, 250000, 5, 8, 124) == 102528
    assert airtime_us(7, 500000, 5, 8, 124) == 51264
    assert 89000 < airtime_us(8, 500000, 5, 8, 124) < 91000


def test_low_data_rate_threshold() -> None:
    # LDRO is mandated when a symbol lasts 16 ms or more (SX1276 datasheet 4.1.1.6)
    assert low_data_rate(11, 125000)
    assert low_data_rate(12, 125000)
    assert not low_data_rate(10, 125000)
    assert not low_data_rate(12, 500000)


def test_sx126x_sf5_sf6_formula() -> None:
    # SX1261/2 datasheet 6.1.4, SF5/SF6: Npre + 6.25 + 8 + ceil((8PL - 4SF + 20)/(4SF))*CR
    # SF6, BW125, CR 4/5, preamble 8, 20 bytes: ceil(156/24) = 7 -> 8+6.25+8+35 = 57.25
    assert airtime_us(6, 125000, 5, 8, 20, sx126x=True) == 57250 * 512 // 1000
    # the SX127x count differs for the same parameters
    assert airtime_us(6, 125000, 5, 8, 20) != airtime_us(6, 125000, 5, 8, 20, sx126x=True)
    # for SF7 and above both chips count alike
    assert airtime_us(9, 125000, 7, 8, 60, sx126x=True) == airtime_us(9, 125000, 7, 8, 60)


def test_empty_frame_is_header_only() -> None:
    # 0 bytes at SF12: the payload term is max(..., 0) -> 8 symbols after the preamble
    assert airtime_us(12, 125000, 5, 8, 0) == (8 * 4 + 17 + 32) * 4096 * 1000000 // 500000
