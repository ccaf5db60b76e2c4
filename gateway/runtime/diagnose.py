"""Why do two nodes not replicate? Per-face observations a person can read in the log.

The gateway feeds every received frame's :class:`RxReport` here. Per face we keep what
the neighbours last claimed in GOSET (key count and XOR) next to our own set, what was
dropped and why, and when the face was last heard. :meth:`FaceWatch.findings` turns
that into a few log lines per status interval, only when something changed or looks
wrong: "sets differ", "in sync again", "nothing heard for 60 s", "12 frames dropped:
crc 10, no_match 2".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..replication.events import Drop, FrameKind, RxReport
from ..transports.base import RadioMeta
from ..wire.crc import CRC_LEN
from ..wire.errors import WireError
from ..wire.goset import Claim, decode_goset

__all__ = ["FaceWatch"]

_QUIET_AFTER = 60.0  # seconds of silence on a face before we say so


@dataclass(slots=True)
class _Heard:
    """One neighbour on a face: a sender the link names (UDP), or the face's peer."""

    last: float
    rx: int = 0
    rssi: float | None = None
    snr: float | None = None

    def heard(self, now: float, meta: RadioMeta | None) -> None:
        self.last = now
        self.rx += 1
        if meta is not None and meta.rssi is not None:
            self.rssi = meta.rssi
        if meta is not None and meta.snr is not None:
            self.snr = meta.snr

    def as_dict(self, now: float) -> dict[str, Any]:
        return {"last_heard_s": round(now - self.last, 1), "rx": self.rx,
                "rssi": self.rssi, "snr": self.snr}


@dataclass(slots=True)
class _FaceView:
    opened: float
    last_rx: float | None = None
    rx: int = 0
    tx: int = 0
    radio: _Heard | None = None  # the last RSSI/SNR heard on the face
    neighbours: dict[str, _Heard] = field(default_factory=dict)
    claim: tuple[int, bytes] | None = None  # (cnt, xor) of the largest recent claim
    in_sync: bool | None = None
    differs_since: float | None = None
    warned_differs: bool = False
    said_quiet: bool = False
    drops: Counter[str] = field(default_factory=Counter)


class FaceWatch:
    """Per-face GOSET agreement, silence and drops, for the gateway's log."""

    def __init__(self) -> None:
        self._faces: dict[str, _FaceView] = {}

    def opened(self, face: str, now: float) -> None:
        self._faces[face] = _FaceView(now)

    def closed(self, face: str) -> None:
        self._faces.pop(face, None)

    def sent(self, face: str) -> None:
        view = self._faces.get(face)
        if view is not None:
            view.tx += 1

    def received(self, face: str, frame: bytes, crc: bool, report: RxReport,
                 now: float, meta: RadioMeta | None = None) -> None:
        view = self._faces.get(face)
        if view is None:
            return
        view.rx += 1
        view.last_rx = now
        if view.radio is None:
            view.radio = _Heard(now)
        view.radio.heard(now, meta)
        if meta is not None and meta.sender is not None:
            view.neighbours.setdefault(meta.sender, _Heard(now)).heard(now, meta)
        view.said_quiet = False
        if report.drop is not None and report.drop is not Drop.NO_MATCH:
            view.drops[report.drop.value] += 1
        if report.kind is FrameKind.CLAIM and report.drop is None:
            packet = frame[:-CRC_LEN] if crc else frame
            try:
                claim = decode_goset(packet)
            except WireError:
                return
            if isinstance(claim, Claim) and (view.claim is None or claim.cnt >= view.claim[0]):
                view.claim = (claim.cnt, claim.xor)

    def findings(self, now: float, keys: int, state: bytes,
                 differs_warn_after: float) -> list[tuple[bool, str]]:
        """(is_warning, text) lines worth logging now; resets per-interval counters."""
        lines: list[tuple[bool, str]] = []
        for name, view in self._faces.items():
            lines.extend(self._claims(name, view, now, keys, state, differs_warn_after))
            heard = view.last_rx if view.last_rx is not None else view.opened
            if now - heard >= _QUIET_AFTER and not view.said_quiet:
                view.said_quiet = True
                lines.append((False, f"face {name}: nothing heard for {now - heard:.0f} s"))
            if view.drops:
                total = sum(view.drops.values())
                why = ", ".join(f"{k} {n}" for k, n in view.drops.most_common())
                lines.append((False, f"face {name}: {total} frames dropped ({why})"))
                view.drops.clear()
            view.claim = None
        return lines

    @staticmethod
    def _claims(name: str, view: _FaceView, now: float, keys: int, state: bytes,
                warn_after: float) -> list[tuple[bool, str]]:
        if view.claim is None:
            return []
        cnt, xor = view.claim
        same = cnt == keys and xor == state
        out: list[tuple[bool, str]] = []
        if same:
            if view.in_sync is False:
                out.append((False, f"face {name}: GOSET in sync again ({keys} feeds)"))
            view.differs_since = None
            view.warned_differs = False
        else:
            if view.in_sync is not False:
                out.append((False, (f"face {name}: GOSET differs: the peer claims {cnt} "
                                   f"feeds, we hold {keys}; exchanging keys")))
                view.differs_since = now
            elif (view.differs_since is not None and not view.warned_differs
                  and now - view.differs_since >= warn_after):
                view.warned_differs = True
                out.append((True, (f"face {name}: GOSET still differs after "
                                  f"{now - view.differs_since:.0f} s (peer {cnt} feeds, us "
                                  f"{keys}); a replication policy with an allow list on "
                                  "either side, or the 100-feed cap, keeps sets apart")))
        view.in_sync = same
        return out

    def counts(self) -> dict[str, dict[str, int]]:
        return {name: {"rx": v.rx, "tx": v.tx} for name, v in self._faces.items()}

    def peers(self, now: float) -> dict[str, dict[str, Any]]:
        """Per face: frames in and out, when it was last heard, the last RSSI/SNR, and
        the senders heard on it when the link names them (``neighbours``)."""
        out: dict[str, dict[str, Any]] = {}
        for name, v in self._faces.items():
            radio = v.radio.as_dict(now) if v.radio is not None else {}
            out[name] = {"rx": v.rx, "tx": v.tx,
                         "last_heard_s": radio.get("last_heard_s"),
                         "rssi": radio.get("rssi"), "snr": radio.get("snr"),
                         "neighbours": [{"peer": peer, **h.as_dict(now)}
                                        for peer, h in sorted(v.neighbours.items())]}
        return out
