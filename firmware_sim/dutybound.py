"""How long each node ran at its duty-cycle limit, read from its transmissions.

A LoRa radio in the EU868 sub-band may send 1 % of any hour (a sliding window, as the
channel and the Node count it). A node whose trailing hour already holds more than
``DUTY_BOUND_SHARE`` of that budget is *duty-bound*: the default preset sends no request
of its own from there (``push_reserve``), so whatever it lacks waits until its budget
frees, while its airtime goes to relays and answers for its neighbours. In city-100 the
late (node, entry) pairs gather at such nodes (docs/replication.md, "twelfth session").

:class:`DutyTracker` follows one node: each transmission (start, airtime) goes into the
window, and the time during which the window's sum stayed above the threshold is added
up exactly (between two transmissions the sum only falls, as old ones leave the window).
"""

from __future__ import annotations

from collections import deque

from gateway.replication.policy import DEFAULT

__all__ = ["DUTY_BOUND_SHARE", "DUTY_WINDOW_S", "DutyTracker"]

# of the budget: where the default preset's requests stop (its ``push_reserve`` is left)
DUTY_BOUND_SHARE = 1.0 - DEFAULT.push_reserve
# ETSI EN 300 220: the duty cycle counts over any hour (captures that do not say)
DUTY_WINDOW_S = 3600.0


class DutyTracker:
    """Airtime in the trailing window of one node, and how long it exceeded ``threshold``
    seconds (``bound``, up to the last :meth:`advance`). Airtime is kept in whole
    microseconds, as :class:`gateway.replication.faces.AirtimeBudget` keeps it, so that
    adding and taking away never drifts."""

    __slots__ = ("_mark", "_sent", "_threshold", "_used", "bound", "window")

    def __init__(self, threshold: float, window: float = DUTY_WINDOW_S) -> None:
        if threshold <= 0 or window <= 0:
            raise ValueError("a duty tracker needs a positive threshold and window")
        self._threshold = round(threshold * 1e6)
        self.window = window
        self._sent: deque[tuple[float, int]] = deque()  # (start, airtime in us)
        self._used = 0
        self._mark = 0.0  # the time up to which ``bound`` is counted
        self.bound = 0.0

    def advance(self, t: float) -> None:
        """Count the time up to ``t`` (not before the last call's)."""
        if t <= self._mark:
            return
        sent, window, threshold = self._sent, self.window, self._threshold
        while sent and sent[0][0] + window <= t:
            leaves = sent[0][0] + window
            if self._used > threshold:
                self.bound += leaves - self._mark
            self._mark = max(self._mark, leaves)
            self._used -= sent.popleft()[1]
        if self._used > threshold:
            self.bound += t - self._mark
        self._mark = t

    def send(self, t: float, airtime: float) -> None:
        """A transmission of ``airtime`` seconds started at ``t``."""
        self.advance(t)
        us = round(airtime * 1e6)
        self._sent.append((t, us))
        self._used += us
