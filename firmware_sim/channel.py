"""The shared LoRa channel: who hears which frame, at what power, and which frames are lost.

Radios sit at fixed positions. When the channel is first used it works out, for every
pair of radios on the same channel (frequency, bandwidth, spreading factor), the median
received power from the path-loss model; pairs that cannot come within reach even with
a shadowing draw of +3 sigma are never considered again, so a frame costs work in
proportion to the radios around its sender, not to the whole mesh.

Each transmission draws one shadowing value per receiver from the channel's seeded
``random.Random`` (Gaussian in dB, clipped to +/-3 sigma, sampled as one of 4096
equally likely quantiles), which fixes the frame's power at that receiver for its whole
time on air. When the frame ends, every receiver gets an
outcome (see :func:`firmware_sim.phy.reception`): decoded, or lost because the receiver
was transmitting itself (half-duplex), because the frame was below the receiver's
sensitivity, or because an overlapping frame on the same channel was not at least 6 dB
weaker in sum (capture effect). A frame below the sensitivity is reported as lost only
when it comes from a *neighbour* (a link whose median power reaches the sensitivity:
the same rule the scenario check uses to call a node reachable); from farther away it
simply was not heard. Powers more than 9 dB below the sensitivity (the 6 dB capture
threshold plus 3 dB) are treated as part of the noise: it would take several such frames
at once to spoil a frame the receiver can decode.

The channel also enforces each radio's duty cycle (EU868: 1 % of every hour; ETSI EN 300
220, sub-band 868.0-868.6 MHz) with the sliding-window rule the Node uses; a
transmission that would exceed it is refused.
Propagation delay (microseconds) is neglected.
"""

from __future__ import annotations

import math
import random
import struct
from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from statistics import NormalDist
from typing import NamedTuple

from gateway.replication.faces import AirtimeBudget
from gateway.wire.lora import LoRaParams

from .phy import (
    BELOW_SENSITIVITY,
    CAPTURE_THRESHOLD_DB,
    COLLISION,
    HALF_DUPLEX,
    PathLoss,
    airtime,
    check_params,
    dbm_to_mw,
    mw_to_dbm,
    noise_floor_dbm,
    sensitivity_dbm,
)

__all__ = [
    "ChannelKey",
    "Link",
    "LoRaChannel",
    "Radio",
    "Reception",
    "Transmission",
]

ChannelKey = tuple[int, int, int]  # frequency Hz, bandwidth Hz, spreading factor

SHADOW_CLIP = 3.0  # shadowing draws are clipped to +/- this many sigma
NOISE_MARGIN_DB = CAPTURE_THRESHOLD_DB + 3.0  # weaker than sensitivity minus this: noise

# channel activity detection (listen before talk): an SX126x/SX127x decides after about
# two symbols whether a LoRa preamble or payload is on the air (SX126x AN1200.48 uses 2
# symbols for SF7..SF12; SX1276 datasheet section 4.1.6, CAD). Modelled as: a frame on
# the radio's channel, at or above its sensitivity, begun at least that long ago.
CAD_SYMBOLS = 2

SHADOW_BITS = 12  # shadowing draws take one of 2**12 equally likely normal quantiles
SHADOW_LEVELS = 1 << SHADOW_BITS
_WORD_SHIFT = 32 - SHADOW_BITS  # a level is the top bits of one 32-bit Mersenne Twister word
FAR_Q = 1 / 16  # links whose frames clear the noise margin less often than this are "far"


@cache
def shadow_levels() -> tuple[float, ...]:
    """The 4096 mid-point quantiles of the standard normal, clipped to +/-3, ascending.

    Drawing a uniform index into this table samples the (clipped) normal distribution
    to a resolution far finer than any radio measures, and lets a link that needs a draw
    of at least z skip every draw below it with one integer comparison.
    """
    n = 1 << SHADOW_BITS
    normal = NormalDist()
    return tuple(max(-SHADOW_CLIP, min(SHADOW_CLIP, normal.inv_cdf((i + 0.5) / n)))
                 for i in range(n))


def _notice_level(link: Link, offsets: list[float]) -> int:
    """The lowest shadowing level at which a frame over ``link`` is noticed (``_hear``:
    at or above the receiver's sensitivity, or from a neighbour); SHADOW_LEVELS: never.
    The power ``median + offset`` does not decrease with the level, so the same sum
    compared at each level gives one threshold."""
    if link.neighbour:
        return 0
    return bisect_left(range(SHADOW_LEVELS), True,
                       key=lambda level: link.median + offsets[level] >= link.sensitivity)


@dataclass(slots=True, frozen=True)
class Link:
    """A receiver within possible reach of a sender."""

    receiver: int
    median: float  # dBm without shadowing
    first: int  # lowest shadowing level that lifts the frame above the receiver's noise
    # margin (0 for a neighbour: every frame of it is reported, decoded or not)
    sensitivity: float  # the receiver's
    neighbour: bool  # the median reaches the receiver's sensitivity


@dataclass(slots=True)
class Radio:
    """One LoRa transceiver on the channel."""

    index: int
    name: str
    x: float
    y: float
    params: LoRaParams
    key: ChannelKey
    sensitivity: float
    noise_mw: float
    budget: AirtimeBudget | None  # the same ledger as the Node keeps for its face
    noise_dbm: float = 0.0  # mw_to_dbm(noise_mw), set by the channel
    busy_until: float = -math.inf
    own: deque[tuple[float, float]] = field(default_factory=deque)  # recent (start, end)
    links: list[Link] = field(default_factory=list)  # drawn one by one
    far: list[Link] = field(default_factory=list)  # each rarely clears the noise: thinned
    far_q: float = 0.0  # the largest chance of a far link clearing it
    # ``links`` unpacked for the draw: (first, median, receiver, notice), the levels as
    # the smallest random word that carries them (see ``_draw``), and the struct that
    # splits the words
    near: list[tuple[int, float, int, int]] = field(default_factory=list)
    unpack: Callable[[bytes], tuple[int, ...]] = struct.Struct("<0I").unpack
    airtimes: dict[int, float] = field(default_factory=dict)  # frame length -> seconds

    def transmitting_during(self, start: float, end: float) -> bool:
        return any(s < end and e > start for s, e in self.own)


@dataclass(slots=True)
class Transmission:
    """One frame on the air; ``power`` holds its dBm at every receiver it may matter to."""

    sender: int
    frame: bytes
    start: float
    end: float
    key: ChannelKey
    power: dict[int, float] = field(default_factory=dict)  # receiver -> dBm, above noise
    noticed: list[tuple[int, float]] = field(default_factory=list)  # (receiver, dBm):
    # see finish()

    # written out: the generated one runs as plain Python even in the compiled build,
    # and this class is made per frame
    def __init__(self, sender: int, frame: bytes, start: float, end: float, key: ChannelKey,
                 power: dict[int, float] | None = None,
                 noticed: list[tuple[int, float]] | None = None) -> None:
        self.sender = sender
        self.frame = frame
        self.start = start
        self.end = end
        self.key = key
        self.power = {} if power is None else power
        self.noticed = [] if noticed is None else noticed

    @property
    def airtime(self) -> float:
        return self.end - self.start


class Reception(NamedTuple):
    """What one receiver made of one frame: ``drop`` None means decoded (a tuple: a frame
    has outcomes at every radio around it, and tuples are the cheapest to make)."""

    receiver: int
    rssi: float
    snr: float
    drop: str | None


class LoRaChannel:
    """Radios, their links, the frames in flight and the outcome of each frame."""

    def __init__(self, path_loss: PathLoss, rng: random.Random, *,
                 capture_db: float = CAPTURE_THRESHOLD_DB) -> None:
        self.path_loss = path_loss
        self.capture_db = capture_db
        self._rng = rng
        self.radios: list[Radio] = []
        self._by_name: dict[str, int] = {}
        self._linked = False
        self._offsets: list[float] = []
        # the frames that may still overlap one on the air, in the order they went on air
        # (a frame is only dropped once it ended before any frame on the air began)
        self._recent: deque[Transmission] = deque()
        self._longest = 0.0  # the longest airtime seen: older frames cannot overlap new ones
        self._airtime: dict[tuple[LoRaParams, int], float] = {}

    # --- set-up -----------------------------------------------------------------------
    def add_radio(self, name: str, x: float, y: float, params: LoRaParams, *,
                  duty_cycle: float = 0.01, duty_window: float = 3600.0) -> int:
        """Place a radio; returns its index. ValueError for settings the model lacks."""
        check_params(params)
        if name in self._by_name:
            raise ValueError(f"radio {name!r} exists already")
        key = (params.frequency_hz, params.bandwidth_hz, params.sf)
        budget = AirtimeBudget(duty_cycle, duty_window) if duty_cycle else None
        radio = Radio(len(self.radios), name, float(x), float(y), params, key,
                      sensitivity_dbm(params.sf, params.bandwidth_hz),
                      dbm_to_mw(noise_floor_dbm(params.bandwidth_hz)), budget)
        radio.noise_dbm = mw_to_dbm(radio.noise_mw)
        self.radios.append(radio)
        self._by_name[name] = radio.index
        self._linked = False
        return radio.index

    def index(self, name: str) -> int:
        return self._by_name[name]

    def distance(self, a: int, b: int) -> float:
        ra, rb = self.radios[a], self.radios[b]
        return math.hypot(ra.x - rb.x, ra.y - rb.y)

    def median_rssi(self, sender: int, receiver: int) -> float:
        """Received power without shadowing (dBm); 0 dBi antennas."""
        return (self.radios[sender].params.tx_power_dbm
                - self.path_loss.median_db(self.distance(sender, receiver)))

    def reachable(self, sender: int, receiver: int) -> bool:
        """Does the median signal reach the receiver's sensitivity (same channel)?"""
        rs, rr = self.radios[sender], self.radios[receiver]
        return rs.key == rr.key and self.median_rssi(sender, receiver) >= rr.sensitivity

    def _link(self) -> None:
        """For every radio, the receivers a frame of it could ever matter to."""
        sigma = self.path_loss.sigma_db
        levels = shadow_levels()
        self._offsets = offsets = [sigma * z for z in levels]  # a level's shadowing in dB
        for radio in self.radios:
            radio.links, radio.far, radio.far_q = [], [], 0.0
            for other in self.radios:
                if other is radio or other.key != radio.key:
                    continue
                median = self.median_rssi(radio.index, other.index)
                floor = other.sensitivity - NOISE_MARGIN_DB
                neighbour = median >= other.sensitivity
                if neighbour or sigma == 0:  # a neighbour's every frame is accounted for
                    first = 0 if median >= floor else SHADOW_LEVELS
                else:
                    first = bisect_left(levels, (floor - median) / sigma)
                if first >= SHADOW_LEVELS:
                    continue
                link = Link(other.index, median, first, other.sensitivity, neighbour)
                q = (SHADOW_LEVELS - first) / SHADOW_LEVELS
                if neighbour or q >= FAR_Q:
                    radio.links.append(link)
                else:
                    radio.far.append(link)
                    radio.far_q = max(radio.far_q, q)
            radio.near = [(link.first << _WORD_SHIFT, link.median, link.receiver,
                           _notice_level(link, offsets) << _WORD_SHIFT)
                          for link in radio.links]
            radio.unpack = struct.Struct(f"<{len(radio.links)}I").unpack
        self._linked = True

    # --- transmitting -----------------------------------------------------------------
    def frame_airtime(self, radio: int, frame_len: int) -> float:
        r = self.radios[radio]
        cached = r.airtimes.get(frame_len)  # (hashing the LoRaParams each time costs more)
        if cached is None:
            params = r.params
            cached = self._airtime.get((params, frame_len))
            if cached is None:
                cached = self._airtime[(params, frame_len)] = airtime(params, frame_len)
            r.airtimes[frame_len] = cached
        return cached

    def busy(self, radio: int, now: float) -> bool:
        return self.radios[radio].busy_until > now

    def sensed(self, radio: int, now: float) -> bool:
        """Channel activity detection at ``radio`` now (see ``CAD_SYMBOLS``)."""
        r = self.radios[radio]
        begun = now - CAD_SYMBOLS * r.params.symbol_s
        for tx in self._recent:
            if tx.start <= begun and tx.end > now and tx.power.get(radio, -math.inf) >= r.sensitivity:
                return True
        return False

    def transmit(self, sender: int, frame: bytes, now: float) -> Transmission | None:
        """Put ``frame`` on the air from ``sender`` now; None if its duty cycle forbids it.

        The radio must be idle (see :meth:`busy`): a radio sends one frame at a time.
        """
        if not self._linked:
            self._link()
        radio = self.radios[sender]
        if radio.busy_until > now:
            raise RuntimeError(f"radio {radio.name} is still transmitting")
        air = self.frame_airtime(sender, len(frame))
        if radio.budget is not None:
            if not radio.budget.allows(now, air):
                return None
            radio.budget.spend(now, air)
        tx = Transmission(sender, bytes(frame), now, now + air, radio.key)
        horizon = now - self._longest
        self._longest = max(self._longest, air)
        self._draw(tx, radio)
        recent = self._recent
        while recent and recent[0].end < horizon:
            recent.popleft()
        recent.append(tx)
        own = radio.own
        while own and own[0][1] < horizon:
            own.popleft()
        own.append((now, tx.end))
        radio.busy_until = tx.end
        return tx

    def _draw(self, tx: Transmission, sender: Radio) -> None:
        """One shadowing draw per link: the frame's power wherever it clears the noise.

        Near links draw a level each. Far links, which rarely clear the noise margin,
        are thinned: candidates are picked with probability ``far_q`` by geometric jumps
        over the list, each kept with probability q / far_q (its own chance q), and a
        kept one draws its level uniformly among those that clear the margin. Every link
        still ends up with exactly the distribution of its own draw, at a cost in
        proportion to the frames that matter rather than to the radios in range.
        """
        rng = self._rng
        power, noticed = tx.power, tx.noticed
        near = sender.near
        if near:
            # one draw of 32 bits per link, all at once: getrandbits(32 n) is the n words
            # getrandbits(12) would take one by one, least significant first, and a
            # level is the top 12 bits of its word (CPython's Mersenne Twister)
            # (levels compared as words: level >= L exactly when word >= L << shift)
            n, offsets, shift = len(near), self._offsets, _WORD_SHIFT
            words = sender.unpack(rng.getrandbits(32 * n).to_bytes(4 * n, "little"))
            for (first, median, receiver, notice), word in zip(
                    near, words):  # _hear(), inlined: this loop is the channel's hot spot
                if word < first:
                    continue
                p = median + offsets[word >> shift]
                power[receiver] = p
                if word >= notice:
                    noticed.append((receiver, p))
        far, q0 = sender.far, sender.far_q
        if not far:
            return
        uniform = rng.random
        skip = math.log1p(-q0)
        i = -1
        while True:
            i += 1 + int(math.log(1.0 - uniform()) / skip)
            if i >= len(far):
                return
            link = far[i]
            span = SHADOW_LEVELS - link.first
            if uniform() * q0 * SHADOW_LEVELS < span:
                self._hear(tx, link, link.first + rng.randrange(span))

    def _hear(self, tx: Transmission, link: Link, level: int) -> None:
        p = link.median + self.path_loss.sigma_db * shadow_levels()[level]
        tx.power[link.receiver] = p
        if p >= link.sensitivity or link.neighbour:
            tx.noticed.append((link.receiver, p))

    def finish(self, tx: Transmission) -> list[Reception]:
        """The outcome at every receiver that noticed ``tx``; call at ``tx.end``.

        Noticed: the frame reached the receiver's sensitivity (decoded, or lost to a
        collision or to half-duplex), or it came from a neighbour (a link whose median
        reaches the sensitivity) and faded below it.
        """
        return [Reception(*o) for o in self.outcomes(tx)]

    def outcomes(self, tx: Transmission) -> list[tuple[int, float, float, str | None]]:
        """:meth:`finish` as plain tuples (receiver, rssi, snr, drop): the simulator's
        hot path, where a NamedTuple per outcome costs a Python-level call."""
        out: list[tuple[int, float, float, str | None]] = []
        start, end = tx.start, tx.end
        radios, capture_db = self.radios, self.capture_db
        overlapping = [g.power for g in self._recent
                       if g is not tx and g.start < end and g.end > start]
        log10 = math.log10
        for receiver, p in tx.noticed:  # reception() and dbm_to_mw(), inlined: a hot loop
            radio = radios[receiver]
            transmitting = False
            for s, e in radio.own:
                if s < end and e > start:
                    transmitting = True
                    break
            if p < radio.sensitivity:  # a neighbour's frame faded
                out.append((receiver, p, p - radio.noise_dbm,
                            HALF_DUPLEX if transmitting else BELOW_SENSITIVITY))
                continue
            interference = 0.0
            for power in overlapping:  # in the order the frames went on air
                q = power.get(receiver)
                if q is not None:
                    interference += 10.0 ** (q / 10.0)
            if transmitting:
                drop: str | None = HALF_DUPLEX
            elif interference > 0 and p - 10.0 * log10(interference) < capture_db:
                drop = COLLISION
            else:
                drop = None
            snr = p - (radio.noise_dbm if interference == 0.0
                       else mw_to_dbm(radio.noise_mw + interference))
            out.append((receiver, p, snr, drop))
        return out
