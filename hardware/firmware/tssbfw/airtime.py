"""LoRa time on air in whole microseconds, in integer arithmetic (no float on the board).

Semtech's formula (SX1276 datasheet 4.1.1.7; SX1261/2 datasheet 6.1.4) for an explicit
header and the PHY CRC off, as ``gateway.wire.lora.airtime``::

    T_sym     = 2**SF / BW
    n_payload = 8 + max(ceil((8*PL - 4*SF + 28) / (4*(SF - 2*DE))), 0) * CR
    T         = (n_preamble + 4.25 + n_payload) * T_sym

with DE = 1 (low-data-rate optimisation) when a symbol lasts 16 ms or more and CR the
coding-rate denominator (5..8). For SF5 and SF6 the SX126x counts differently (SX1261/2
datasheet 6.1.4): 6.25 preamble symbols are added instead of 4.25 and the numerator is
``8*PL - 4*SF + 20`` over ``4*SF``.
"""


def low_data_rate(sf: int, bw_hz: int) -> bool:
    """Whether a symbol lasts 16 ms or more (LDRO on): 2**SF / BW >= 0.016 s."""
    return (1 << sf) * 1000 >= 16 * bw_hz


def symbols_x4(sf: int, bw_hz: int, cr: int, preamble: int, frame_len: int,
               sx126x: bool = False) -> int:
    """Four times the number of symbols of a frame (an integer: 4.25 and 6.25 are quarters)."""
    if sx126x and sf < 7:
        num = 8 * frame_len - 4 * sf + 20
        den = 4 * sf
        pre_x4 = 4 * preamble + 25
    else:
        de = 1 if low_data_rate(sf, bw_hz) else 0
        num = 8 * frame_len - 4 * sf + 28
        den = 4 * (sf - 2 * de)
        pre_x4 = 4 * preamble + 17
    blocks = -((-num) // den)  # ceil
    blocks = max(blocks, 0)
    return pre_x4 + 4 * (8 + blocks * cr)


def airtime_us(sf: int, bw_hz: int, cr: int, preamble: int, frame_len: int,
               sx126x: bool = False) -> int:
    """Microseconds on air for a frame of ``frame_len`` bytes (rounded to nearest)."""
    num = symbols_x4(sf, bw_hz, cr, preamble, frame_len, sx126x) * (1 << sf) * 1000000
    den = 4 * bw_hz
    return (2 * num + den) // (2 * den)
