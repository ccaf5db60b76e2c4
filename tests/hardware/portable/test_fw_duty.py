"""Duty-cycle accounting (tssbfw.duty): a sliding window of airtime."""

from tssbfw.duty import UNLIMITED, DutyCycle


def test_budget_and_window() -> None:
    d = DutyCycle(permille=10, window_ms=3600000)
    assert d.budget_us() == 36000000  # 1 % of an hour = 36 s
    assert d.fits(0, 36000000)
    d.record(0, 30000000)
    assert d.used_us(1000) == 30000000
    assert d.available_us(1000) == 6000000
    assert d.fits(1000, 6000000)
    assert not d.fits(1000, 6000001)
    # the record counts until a whole window has passed after its end (30 s)
    assert d.used_us(30000 + 3600000 - 1) == 30000000
    assert d.used_us(30000 + 3600000) == 0


def test_never_fits() -> None:
    d = DutyCycle(permille=100, window_ms=1000)
    assert d.never_fits(100001)
    assert not d.never_fits(100000)
    d.set_limit(0, 1000)
    assert not d.never_fits(10 ** 9)


def test_no_limit_still_reports_use() -> None:
    d = DutyCycle(permille=0, window_ms=60000)
    d.record(0, 205056)
    assert d.fits(0, 10 ** 9)
    assert d.available_us(0) == UNLIMITED
    assert d.used_us(100) == 205056


def test_records_are_bounded_and_merging_is_conservative() -> None:
    d = DutyCycle(permille=1000, window_ms=1000000, max_records=8)
    for i in range(100):
        d.record(i * 10, 1000)
    assert len(d._records) == 8
    assert d.used_us(1000) == 100 * 1000
    # merged records expire with their latest member, never earlier
    assert d.used_us(1000000 + 980) > 0
