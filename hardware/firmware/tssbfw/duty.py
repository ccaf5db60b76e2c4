"""Duty-cycle accounting over a sliding window of airtime.

Each transmission is recorded as (end, airtime) in microseconds of the dongle clock and
counts in full until ``window`` has passed after its end: conservative, never more
airtime in any window than the limit allows. The budget is ``permille/1000 * window``;
``permille == 0`` means no limit (airtime is still recorded for the AIRTIME report).
At most ``max_records`` are kept: older ones are merged (summed, the later end kept),
which only makes the accounting stricter.
"""

UNLIMITED = 0xFFFFFFFF


class DutyCycle:
    def __init__(self, permille: int = 10, window_ms: int = 3600000,
                 max_records: int = 64) -> None:
        self.permille = permille
        self.window_ms = window_ms
        self.max_records = max_records
        self._records = []  # [end_us, airtime_us], oldest first

    def set_limit(self, permille: int, window_ms: int) -> None:
        self.permille = permille
        self.window_ms = window_ms

    def budget_us(self) -> int:
        """Airtime allowed per window; 0 when there is no limit."""
        return self.permille * self.window_ms

    def _prune(self, now_ms: int) -> None:
        horizon = (now_ms - self.window_ms) * 1000
        recs = self._records
        while recs and recs[0][0] <= horizon:
            recs.pop(0)

    def used_us(self, now_ms: int) -> int:
        self._prune(now_ms)
        total = 0
        for rec in self._records:
            total += rec[1]
        return total

    def never_fits(self, airtime_us: int) -> bool:
        """Whether a frame this long exceeds the whole budget (it could never be sent)."""
        return self.permille > 0 and airtime_us > self.budget_us()

    def fits(self, now_ms: int, airtime_us: int) -> bool:
        if self.permille == 0:
            return True
        return self.used_us(now_ms) + airtime_us <= self.budget_us()

    def available_us(self, now_ms: int) -> int:
        """Airtime still allowed now; UNLIMITED without a limit."""
        if self.permille == 0:
            return UNLIMITED
        left = self.budget_us() - self.used_us(now_ms)
        return max(0, left)

    def record(self, start_ms: int, airtime_us: int) -> None:
        self._prune(start_ms)
        self._records.append([start_ms * 1000 + airtime_us, airtime_us])
        if len(self._records) > self.max_records:
            first = self._records.pop(0)
            self._records[0][1] += first[1]
