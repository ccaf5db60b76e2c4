"""WANT and CHNK: building request vectors, answering them, and the request timer.

Vectors are built from a rotating offset into the GOSET, adding items until the running
BIPF size of the items passes the policy's budget (about 100 B; the item that crosses
is kept when the packet still fits in 120 B). Answers spend a credit of packets per
request, taken round-robin over the slots asked for, consecutive sequence (or chunk)
numbers per slot, as the references do (wire-compat.md section 4).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ..store.base import FeedStore
from ..wire.entry import DMX_LEN, PACKET_LEN
from ..wire.want import MAX_PROTOCOL_INT, ChunkRequest, encode_chnk, encode_want
from .policy import OffsetStep, Policy

__all__ = [
    "Answer",
    "RequestBuilder",
    "RequestTimer",
    "answer_chnk",
    "answer_want",
]

_LIST_HEADER_MAX = 2  # BIPF tag of a list up to 2^11 bytes
_WANT_SLOTS_MAX = (PACKET_LEN - DMX_LEN - _LIST_HEADER_MAX) // 2  # slots of 2 B each fill a
# WANT (its offset takes 2 B more): the builder never looks at more


@dataclass(slots=True, frozen=True)
class Answer:
    """A stored packet to send because a peer asked for it."""

    packet: bytes
    fid: bytes
    seq: int
    cnr: int | None  # None: the entry itself


def _fits(items_size: int) -> bool:
    return DMX_LEN + _LIST_HEADER_MAX + items_size <= PACKET_LEN


def _int_size(v: int) -> int:
    """Bytes of a non-negative int in signed-minimal BIPF: a 1-byte tag plus the body."""
    return 2 + v.bit_length() // 8


class RequestBuilder:
    """Builds the WANT and CHNK vectors of one face, with rotating offsets.

    :attr:`cycle_end` tells whether the last WANT reached the end of a pass over the
    whole GOSET (a WANT covers one window of it when the set is large).
    """

    __slots__ = ("_chnk_offset", "_covered", "_jumped", "_want_offset", "_width", "cycle_end",
                 "policy")

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._want_offset = 0
        self._chnk_offset = 0
        self._covered = 0
        self._width = 0  # slots of the last WANT (0: none yet)
        self._jumped = False  # the last WANT left the rotation for a focus
        self.cycle_end = False

    def want(self, dmx: bytes, keys: Sequence[bytes], store: FeedStore,
             focus: Sequence[int] = ()) -> bytes | None:
        """Our next WANT packet, or None for an empty set.

        Like the Python reference, only the slots count against the budget (the offset
        does not), and the slot that crosses it is kept. ``focus``: set indices the WANT
        should cover; when the next window in turn (as wide as the last WANT) holds none
        of them, the window starts at the one that lets it cover most of them, and the
        rotation goes on from there. Not twice in a row: the WANT after such a jump takes
        the next window in turn, so that no part of the set goes unasked while hints keep
        coming for another.
        """
        n = len(keys)
        if n == 0:
            return None
        offset = self._want_offset % n
        if focus:
            offset = self._focused(offset, n, focus)
        seqs: list[int] = []
        head = _int_size(offset)
        size = 0
        budget = self.policy.request_budget
        # (_int_size and _fits inlined, the tops read in one call: a WANT per round and
        # face, a slot per GOSET key)
        # (every slot takes 2 bytes or more: no more than _WANT_SLOTS_MAX are looked at)
        for top in store.tops([*keys[offset:], *keys[:offset]][:_WANT_SLOTS_MAX]):
            nxt = top + 1 if top >= 0 else 1  # (-1: not held)
            if nxt > MAX_PROTOCOL_INT:  # noqa: PLR1730 - cheaper than min() per slot
                nxt = MAX_PROTOCOL_INT
            item = 2 + nxt.bit_length() // 8
            if DMX_LEN + _LIST_HEADER_MAX + head + size + item > PACKET_LEN:
                break
            seqs.append(nxt)
            size += item
            if size > budget:
                break
        self._width = max(len(seqs), 1)
        step = 1 if self.policy.offset_step is OffsetStep.ONE else self._width
        self._want_offset = (offset + step) % n
        self._covered += len(seqs) if self.policy.offset_step is OffsetStep.PAST else 1
        self.cycle_end = self._covered >= n
        if self.cycle_end:
            self._covered = 0
        return encode_want(dmx, offset, seqs)

    def _focused(self, offset: int, n: int, focus: Sequence[int]) -> int:
        """Where the WANT window starts, given ``focus`` (see :meth:`want`)."""
        width = self._width
        if not width or self._jumped or any((f - offset) % n < width for f in focus):
            self._jumped = False
            return offset
        self._jumped = True
        best, most = offset, 0
        for f in focus:
            covered = sum(1 for g in focus if (g - f) % n < width)
            if covered > most:
                best, most = f, covered
        return best

    def chnk(self, dmx: bytes, keys: Sequence[bytes], store: FeedStore) -> bytes | None:
        """Our next CHNK packet, or None when no side chain is incomplete."""
        n = len(keys)
        if n == 0 or not store.has_pending_chains():
            return None
        offset = self._chnk_offset % n
        reqs: list[ChunkRequest] = []
        size = 0
        last_feed = offset
        full = False
        # the feeds with pending chains, from the offset on round the set: the same order
        # as a walk over every key that skips the others
        held = store.with_pending(keys)
        cut = bisect.bisect_left(held, offset)
        for fndx in held[cut:] + held[:cut]:
            replica = store.get(keys[fndx])
            assert replica is not None
            for seq in sorted(replica.pending)[: self.policy.chnk_per_feed]:
                cnr = replica.pending[seq].next_cnr
                if max(fndx, seq, cnr) > MAX_PROTOCOL_INT:
                    continue
                item = 1 + _int_size(fndx) + _int_size(seq) + _int_size(cnr)
                if not _fits(size + item):
                    full = True
                    break
                reqs.append(ChunkRequest(fndx, seq, cnr))
                size += item
                last_feed = fndx
                if size > self.policy.request_budget:
                    full = True
                    break
            if full:
                break
        if not reqs:
            return None
        if self.policy.offset_step is OffsetStep.ONE:
            self._chnk_offset = (offset + 1) % n
        else:
            self._chnk_offset = (last_feed + 1) % n
        return encode_chnk(dmx, reqs)


def _round_robin(streams: list[Iterator[Answer]], credit: int) -> list[Answer]:
    out: list[Answer] = []
    while streams and len(out) < credit:
        alive = []
        for it in streams:
            if len(out) >= credit:
                alive.append(it)
                continue
            nxt = next(it, None)
            if nxt is not None:
                out.append(nxt)
                alive.append(it)
        streams = alive
    return out


def answer_want(slots: Sequence[tuple[int, int]], keys: Sequence[bytes], store: FeedStore,
                credit: int) -> list[Answer]:
    """The stored entries a WANT asks for (its ``(goset index, next seq)`` slots, from
    :meth:`Want.slots`): up to ``credit``, round-robin over the slots."""

    def entries(fid: bytes, first: int) -> Iterator[Answer]:
        replica = store.get(fid)
        top = replica.max_seq if replica is not None else 0
        for seq in range(first, top + 1):
            packet = store.read_packet(fid, seq)
            if packet is None:
                return
            yield Answer(packet, fid, seq, None)

    seen: set[int] = set()
    streams = []
    for fndx, seq in slots:
        if fndx in seen:
            continue
        seen.add(fndx)
        streams.append(entries(keys[fndx], seq))
    return _round_robin(streams, credit)


def answer_chnk(requests: Sequence[ChunkRequest], keys: Sequence[bytes], store: FeedStore,
                credit: int) -> list[Answer]:
    """The stored chunks a CHNK asks for: up to ``credit``, round-robin over requests."""

    def chunks(fid: bytes, seq: int, first: int) -> Iterator[Answer]:
        cnr = first
        while True:
            chunk = store.read_chunk(fid, seq, cnr)
            if chunk is None:
                return
            yield Answer(chunk, fid, seq, cnr)
            cnr += 1

    streams = []
    seen: set[tuple[int, int]] = set()
    for r in requests:
        if r.fndx >= len(keys) or (r.fndx, r.seq) in seen:
            continue
        seen.add((r.fndx, r.seq))
        streams.append(chunks(keys[r.fndx], r.seq, r.cnr))
    return _round_robin(streams, credit)


class RequestTimer:
    """When to send the next WANT/CHNK on one face, adapted to how fast answers come.

    The Python reference's rule: ``rtt`` starts at ``rtt_initial``; the first entry or
    chunk arriving after a request sets ``rtt = alpha*rtt + (1-alpha)*(arrival - sent)``
    (at least ``rtt_min``); a period without arrivals multiplies it by ``rtt_backoff``
    up to ``rtt_max``. Requests go out every ``rtt``. With ``backoff_per_cycle`` the
    backoff waits for a whole pass of WANTs over the GOSET to bring nothing: with a large
    set one WANT covers only a window of it, and a quiet window says nothing about the
    others.
    """

    __slots__ = ("_arrived", "_cycle_arrived", "_cycle_closed", "_sampled", "_sent_at",
                 "next_at", "policy", "rtt")

    def __init__(self, policy: Policy, now: float, jitter: Callable[[], float]) -> None:
        self.policy = policy
        self.rtt = policy.rtt_initial
        self.next_at = now + jitter()
        self._sent_at: float | None = None
        self._arrived = False
        self._sampled = False
        self._cycle_arrived = False
        self._cycle_closed = False

    def due(self, now: float) -> bool:
        return now >= self.next_at

    def sent(self, now: float, cycle_end: bool = True, lacking: bool = False) -> None:
        """A request period starts now; ``cycle_end``: this WANT ends a pass over the set
        (``lacking``, an unfinished side chain, changes nothing: this timer polls anyway)."""
        p = self.policy
        if self._sent_at is not None:
            if p.backoff_per_cycle:
                quiet = self._cycle_closed and not self._cycle_arrived
            else:
                quiet = not self._arrived
            if quiet:
                self.rtt = min(self.rtt * p.rtt_backoff, p.rtt_max)
        if not p.backoff_per_cycle or self._cycle_closed:
            self._cycle_arrived = False
        self._cycle_closed = cycle_end
        self._sent_at = now
        self._arrived = self._sampled = False
        self.next_at = now + self.rtt

    def arrival(self, now: float) -> None:
        """An entry or chunk we asked for arrived."""
        self._arrived = self._cycle_arrived = True
        if self.policy.request_after_answers and self._sent_at is not None:
            # answers still coming: the next request waits until they pause, or it
            # would ask again for what is on its way (and be answered twice)
            self.next_at = max(self.next_at, now + self.rtt / 4)
        if self._sent_at is None or self._sampled:
            return
        self._sampled = True
        p = self.policy
        sample = now - self._sent_at
        self.rtt = max(p.rtt_alpha * self.rtt + (1 - p.rtt_alpha) * sample, p.rtt_min)
        self.next_at = min(self.next_at, self._sent_at + self.rtt)

    def postpone(self, until: float) -> None:
        """Not before ``until`` (the face cannot send earlier); the rtt stays as it is."""
        self.next_at = max(self.next_at, until)

    def rearm(self, now: float, *, checkable: bool = False) -> None:
        """A peer has more than we do: ask soon, at the initial pace. (``checkable``, for
        :class:`RepairTimer`'s sake: a polling timer asks anyway, so no hint settles.)"""
        self.rtt = min(self.rtt, self.policy.rtt_initial)
        self.next_at = min(self.next_at, now)
