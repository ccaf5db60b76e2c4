"""A radio without hardware, for the simulated dongle and the firmware tests.

Transmissions go to the ``on_air(frame)`` callback and to ``sent``; they finish when
``finish_tx()`` is called (or at once with ``auto_tx_done``). ``deliver(frame, rssi,
snr_q)`` hands the radio a received frame, which it reports only while receiving.
``fail_next`` makes the next radio operation raise ``RadioError``. Not flashed to boards.
"""

from tssbfw.radio import EV_RX, EV_TX_DONE, LIMITS, RadioError

SLEEP = "sleep"
STANDBY = "standby"
RX = "rx"
TX = "tx"


class SimRadio:
    def __init__(self, chip: str = "sx1262", on_air=None, auto_tx_done: bool = False) -> None:
        lim = LIMITS[chip]
        self.CHIP = chip
        self.FREQ_MIN, self.FREQ_MAX, self.SF_MIN, self.SF_MAX = lim[0], lim[1], lim[2], lim[3]
        self.POWER_MIN, self.POWER_MAX = lim[4], lim[5]
        self.on_air = on_air
        self.auto_tx_done = auto_tx_done
        self.state = SLEEP
        self.settings = None
        self.sent = []
        self.resets = 0
        self.configures = 0
        self.missed = 0
        self.fail_next = None
        self._events = []

    def _op(self) -> None:
        if self.fail_next is not None:
            msg = self.fail_next
            self.fail_next = None
            raise RadioError(msg)

    def reset(self) -> None:
        self._op()
        self.resets += 1
        self.state = STANDBY
        self.settings = None
        self._events = []

    def configure(self, settings) -> None:
        self._op()
        self.configures += 1
        self.settings = settings.copy()
        self.state = STANDBY

    def receive(self) -> None:
        self._op()
        if self.settings is None:
            raise RadioError("receive before configure")
        self.state = RX

    def transmit(self, frame: bytes) -> None:
        self._op()
        if self.settings is None:
            raise RadioError("transmit before configure")
        self.state = TX
        self.sent.append(bytes(frame))
        if self.on_air is not None:
            self.on_air(bytes(frame))
        if self.auto_tx_done:
            self.finish_tx()

    def finish_tx(self) -> bool:
        """End the transmission in progress; False when there is none."""
        if self.state != TX:
            return False
        self.state = STANDBY
        self._events.append((EV_TX_DONE,))
        return True

    def sleep(self) -> None:
        self._op()
        self.state = SLEEP

    def deliver(self, frame: bytes, rssi: int, snr_q: int) -> bool:
        """A frame arrives over the air; True when the radio was listening."""
        if self.state != RX:
            self.missed += 1
            return False
        self._events.append((EV_RX, bytes(frame), rssi, snr_q))
        return True

    def poll(self):
        self._op()
        if self._events:
            return self._events.pop(0)
        return None
