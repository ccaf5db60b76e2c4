"""The replication Node: sans-I/O tinySSB replication over any number of faces.

Bytes and the current time go in (:meth:`Node.receive`), frames to send and the next
deadline come out (:meth:`Node.frames_to_send`, :meth:`Node.next_deadline`). The Node
never reads a clock, never sleeps, never touches a socket, and draws randomness only
from the ``random.Random`` it is given, so the gateway runtime and the simulator drive
the very same object.

Dispatch follows the references: a frame's first 7 bytes are looked up in the DMX table
(GOSET, our WANT and CHNK DMX, and the DMX of the next entry of every feed we
replicate); a 120-byte frame is also hashed and looked up in the table of side-chain
chunks we expect next. A frame may match both.
"""

from __future__ import annotations

import logging
import random
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from ..store.base import FeedStore, StoreError
from ..wire.crc import add_crc, strip_crc
from ..wire.entry import DMX_LEN, PACKET_LEN, Entry, FeedKey, hash20
from ..wire.errors import FrameError, PacketError, WireError
from ..wire.goset import GOSET_DMX, Claim, Novelty, chnk_dmx, decode_goset, want_dmx
from ..wire.want import decode_chnk, decode_want, encode_want
from .admission import Admission
from .events import (
    ChainComplete,
    Drop,
    Event,
    FeedAdded,
    FrameKind,
    NewEntry,
    Outgoing,
    RxReport,
    Stored,
)
from .faces import AirtimeBudget, Face, FaceKind, Priority, Queued, SendQueue
from .goset import GosetOut, GosetSync
from .pacing import AnswerCredit, TokenBucket
from .policy import DEFAULT, Policy
from .relay import Relay, RelayQueue
from .repair import CHAIN_WAIT, RepairTimer
from .requests import Answer, RequestBuilder, RequestTimer, answer_chnk, answer_want
from .sets import BoundSet

__all__ = ["Node", "NodeStats"]

log = logging.getLogger(__name__)

_MIN_FRAME = DMX_LEN + 1
_INF = float("inf")
_RECENT_MAX = 2048  # data packets remembered as held, to tell a neighbour's news from echoes
_COPIES_KEPT = 64  # items whose copies are counted until they make way (mesh density)
_ECHO_ALPHA = 0.1  # weight of one relay's outcome in a face's echo rate
_ORPHANS_MAX = 64  # unplaced frames a hint settles on, per face (hint_settle)
_HELLO_DMX = want_dmx(bytes(32))  # the WANT of a node holding no key (see _hello)
_WEAK_KEPT = 64  # weakly heard requests remembered per push face
_ANSWERED_KEPT = 8  # requests per face whose answers are recognised as still queued
STORE_RETRY = 10.0  # s: after a failed store write (disk full), no ingest attempt this long
# unplaced packet-sized frames kept in case what they follow comes next (their key, their
# entry, the entry before them), at most this many and, once they prompted a claim, this
# long: in city-100's first hours a tenth of the keys take more than 10 minutes to reach
# a node, and an entry kept that long is taken and pushed on as soon as its key comes
_ORPHANS_KEPT = 256
_ORPHAN_LIFE = 1800.0


@dataclass(slots=True)
class NodeStats:
    rx: int = 0
    tx: int = 0
    tx_bytes: int = 0
    airtime: float = 0.0
    rx_kinds: Counter[str] = field(default_factory=Counter)
    tx_kinds: Counter[str] = field(default_factory=Counter)
    drops: Counter[str] = field(default_factory=Counter)
    entries_stored: int = 0
    chunks_stored: int = 0
    queue_dropped: int = 0
    relays_cancelled: int = 0  # relays given up: enough neighbours sent the same packet
    relays_stale: int = 0  # relays given up: the budget held them past ``push_stale``
    relays_skipped: int = 0  # relays left out: nobody relays on what we relay (a leaf)
    orphans_adopted: int = 0  # kept frames stored once their predecessor arrived
    no_echo: int = 0  # our relays of entries that no neighbour relayed on
    hints: int = 0  # requests brought forward by a frame we could not place
    hints_settled: int = 0  # hint requests not sent: what the hint showed had arrived
    pushed: int = 0  # frames sent unasked (push faces)
    answered: int = 0  # frames sent in answer to a WANT/CHNK on push faces
    weak_requests: int = 0  # requests over a weak link left for stronger neighbours
    floor_beacons: int = 0  # request rounds while the budget ran low (beacon_floor)


class _FaceState:
    __slots__ = ("added", "answered", "bucket", "budget", "builder", "copies", "credit", "density",
                 "echo_rate", "echoes", "face", "floor_at", "heard_requests", "hint_orphans",
                 "hint_seqs", "jittered", "next_tx", "queue", "relays", "set_builders",
                 "set_next", "set_turn", "timer", "weak_requests")

    def __init__(self, face: Face, timer: RequestTimer | RepairTimer, builder: RequestBuilder,
                 relays: RelayQueue | None = None, credit: AnswerCredit | None = None,
                 added: float = 0.0) -> None:
        self.face = face
        self.added = added  # when the face came (its airtime budget starts empty then)
        self.credit = credit  # adaptive per-request credit (None: the policy's, fixed)
        self.bucket = TokenBucket(face.rate, face.burst) if face.rate else None
        self.relays = relays  # push relaying (broadcast faces under a push policy)
        # WANT/CHNK heard from neighbours since our last request round (push faces): ours
        # would say the same, and the answers to theirs reach us too
        self.heard_requests: set[bytes] = set()
        # what neighbours' WANTs showed they hold beyond us since our hint came (fid ->
        # their last seq): once we hold all of it, the hint is settled (push faces)
        self.hint_seqs: dict[bytes, int] = {}
        # frames we could not place that brought the request due (push faces): once each
        # of them is stored (what it follows came, mostly pushed), the hint is settled
        self.hint_orphans: set[bytes] = set()
        # first answers to requests heard over a weak link (push faces), and when: answered
        # only when asked for again (no stronger neighbour's answer reached the asker)
        self.weak_requests: OrderedDict[bytes, float] = OrderedDict()
        # request -> the first answer we queued for it (point-to-point faces): the same
        # request again while that answer still waits is answered already
        self.answered: OrderedDict[bytes, bytes] = OrderedDict()
        # entries we relayed, until a neighbour's relay of them is heard (or the time)
        self.echoes: dict[bytes, float] = {}
        # running share of our relayed entries that a neighbour relayed on (1: all):
        # a node whose relays nobody takes on is rarely the one the mesh needs
        self.echo_rate = 1.0
        # copies heard of the items we took lately (push faces), and their running mean:
        # how many neighbours relay what we hear, i.e. how dense the mesh is around us
        self.copies: OrderedDict[bytes, int] = OrderedDict()
        self.density = 1.0
        self.floor_at = float("-inf")  # our last request round while the budget ran low
        self.builder = builder
        self.set_builders: dict[str, RequestBuilder] = {}  # bound set name -> its builder
        self.set_turn = 0  # budgeted faces: whose turn it is among the bound sets
        self.set_next: str | None = None  # a bound set to ask before the others' turn
        self.queue = SendQueue(face.queue_size)
        self.budget = AirtimeBudget(face.duty_cycle, face.duty_window) if face.duty_cycle else None
        self.next_tx = float("-inf")
        self.jittered = False  # the head's random delay has been waited already
        self.timer = timer

    def ready_at(self, head: Queued) -> float:
        """When the packet at the head of the queue may go out (inf: never)."""
        n = len(head.packet)
        if n > self.face.mtu:
            return _INF
        t = self.next_tx
        if self.bucket is not None:
            t = self.bucket.earliest(t)
        if self.budget is not None:
            # max(t, ...) without the call: asked at every wake-up and after every frame
            free = self.budget.earliest(t, self.face.airtime(n))
            if free > t:  # noqa: PLR1730 - max() costs a call
                t = free
        return t


class Node:
    """One tinySSB node: a store, a GOSET, faces, and the replication logic between them.

    Besides the GOSET the Node replicates *bound sets* (:meth:`set_keys`): named sets of
    feeds whose WANT/CHNK vectors carry their own DMX, as tinyISP's per-contract sets.
    ``goset_filter`` tells which feeds already in the store join the GOSET at start
    (default: all); the others are only armed for their next entry.
    """

    def __init__(self, store: FeedStore, *, policy: Policy = DEFAULT,
                 rng: random.Random | None = None, name: str = "node", now: float = 0.0,
                 goset_filter: Callable[[bytes], bool] | None = None,
                 own: Collection[bytes] = ()) -> None:
        self.store = store
        store.max_chain_chunks = policy.max_chain_chunks
        self.policy = policy
        self.name = name
        self._rng = rng if rng is not None else random.Random()
        self.admission = Admission(policy)
        self.goset = GosetSync(policy, self._rng, accept=policy.wants_feed,
                               admit=self.admission.admit, scarce=self._radio_scarce)
        self._faces: dict[str, _FaceState] = {}
        self._events: list[Event] = []
        self._entry_dmx: dict[bytes, bytes] = {}  # next-entry DMX -> fid
        self._dmx_of: dict[bytes, bytes] = {}  # fid -> its armed DMX
        self._state = self.goset.state
        self._want_dmx = want_dmx(self._state)
        self._chnk_dmx = chnk_dmx(self._state)
        self._sets: dict[str, BoundSet] = {}
        self._set_dmx: dict[bytes, tuple[BoundSet, bool]] = {}  # DMX -> (set, is WANT)
        self._recent: OrderedDict[bytes, None] = OrderedDict()  # data packets held lately
        self._snr: float | None = None  # of the frame being received
        # packet-sized frames we could not place, newest last (push policies): relays of
        # one item by different neighbours arrive in any order, and a chunk heard before
        # its entry (or an entry before its predecessor) is taken once that one is stored
        # -> when first heard, and how often (orphan_copies; else 1)
        self._orphans: OrderedDict[bytes, tuple[float, int]] = OrderedDict()
        # the GOSET state (XOR) a neighbour last showed it holds too (an equal claim, a
        # WANT/CHNK under our DMX): while ours differs, nobody understands our requests
        self._agreed_state: bytes | None = None
        self._differs_since = now  # when our GOSET last became one no neighbour confirmed
        self._born = now  # the set we start with (our store's) asks at once: see _unsettled
        self._doubt_at = float("-inf")  # when a neighbour last showed a set unlike ours
        self._hello_ok = float("-inf")  # an empty set's WANT not before (see _hello)
        # ... and from our own request round not before this: a node that is given its
        # feeds in its first minutes (a tinyISP client's contract) has nothing to say
        self._hello_first = now + self.policy.goset_respond_holdoff
        self.stats = NodeStats()
        # why the store last failed to write (disk full, I/O error), None while it works:
        # ingesting pauses (frames dropped as Drop.STORE) and is retried after STORE_RETRY
        self.store_trouble: str | None = None
        self._store_retry_at = float("-inf")
        for fid in store.feeds():  # held already: nothing to announce
            if ((goset_filter is None or goset_filter(fid))
                    and (fid in own or self.admission.allows(fid))):
                self.goset.add(fid, now, force=True, announce=False)
                if fid not in own and store.replica(fid).max_seq == 0:
                    self.admission.on_probation(fid, now)  # spam from an earlier run?
            self._arm(fid)
        self.goset.added.clear()
        self._refresh_state(now)

    # --- configuration ----------------------------------------------------------------
    def add_face(self, face: Face, now: float) -> None:
        if face.name in self._faces:
            raise ValueError(f"face {face.name!r} exists already")
        p = self.policy
        relays = (RelayQueue(p.push_redundancy, p.push_capacity)
                  if p.push and face.kind is FaceKind.BROADCAST else None)
        timer: RequestTimer | RepairTimer
        if relays is None:
            spread = p.rtt_initial
            timer = RequestTimer(p, now, lambda: self._rng.uniform(0.0, spread))
        else:  # requests only repair: with nothing to ask for yet, the first one waits
            timer = RepairTimer(p, now, self._rng, first_within=p.rtt_initial
                                if len(self.goset) or self._sets else p.push_rtt_max)
        credit = (AnswerCredit(p.credit, p.credit_min) if p.adaptive_credit and relays is None
                  else None)
        self._faces[face.name] = _FaceState(face, timer, RequestBuilder(self.policy), relays,
                                            credit, now)
        self.goset.new_neighbour(now)

    def remove_face(self, name: str) -> None:
        self._faces.pop(name, None)
        self.goset.forget_face(name)

    @property
    def faces(self) -> list[Face]:
        return [fs.face for fs in self._faces.values()]

    def queue_length(self, face: str) -> int:
        return len(self._faces[face].queue)

    def airtime_budget(self, face: str, now: float) -> tuple[float, float, float] | None:
        """(seconds used, seconds allowed, window) of ``face``'s duty cycle; None: no limit."""
        budget = self._faces[face].budget
        if budget is None:
            return None
        return budget.used(now), budget.limit / 1e6, budget.window

    def follow(self, fid: bytes, now: float) -> bool:
        """Replicate ``fid`` from now on (it joins our GOSET); False if it cannot."""
        if not self.goset.add(fid, now, force=True):
            return fid in self.goset
        self._sync_goset(now)
        return True

    def publish(self, key: FeedKey, content: bytes, now: float, *,
                announce: bool = True) -> Entry:
        """Append ``content`` to our own feed (durable before it returns).

        ``announce=False`` keeps the feed out of the GOSET (a feed that travels in a
        bound set only, or inside another feed)."""
        entry = self.store.publish(key, content)
        if announce and self.goset.add(key.fid, now, force=True):
            self._sync_goset(now)
        self._arm(key.fid)
        self._events.append(NewEntry(key.fid, entry.seq, entry.msg_id, 0, own=True))
        self._push(now, entry.packet, FrameKind.ENTRY, None, key.fid, entry.seq)
        for cnr, chunk in enumerate(entry.chunks):
            self._push(now, chunk, FrameKind.CHUNK, None, key.fid, entry.seq, cnr)
        bound = self._set_of([key.fid]) if self._sets else None
        for fs in self._faces.values():
            if fs.relays is None or not announce:  # (else pushed already)
                fs.timer.rearm(now)  # our next WANT carries the news
            if bound is not None:
                fs.set_next = bound
        return entry

    def drain_events(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    # --- bound sets and feeds outside the GOSET ---------------------------------------
    def set_keys(self, name: str, keys: Collection[bytes], now: float) -> None:
        """Replicate ``keys`` as the bound set ``name`` (replacing its keys; an empty
        collection drops the set). Feeds not held yet get an empty replica."""
        if not keys:
            self.drop_set(name)
            return
        new = BoundSet.of(name, keys)
        old = self._sets.get(name)
        if old is not None and old.keys == new.keys:
            return
        for fid in new.keys:
            self.add_feed(fid, now)
        self._install_set(new)
        for fs in self._faces.values():
            fs.timer.rearm(now)

    def _install_set(self, new: BoundSet) -> None:
        self._drop_set_tables(new.name)
        self._sets[new.name] = new
        self._set_dmx[new.want_dmx] = (new, True)
        self._set_dmx[new.chnk_dmx] = (new, False)

    def drop_set(self, name: str) -> None:
        """Stop replicating the bound set ``name`` (its feeds stay in the store)."""
        self._drop_set_tables(name)
        self._sets.pop(name, None)
        for fs in self._faces.values():
            fs.set_builders.pop(name, None)

    def _drop_set_tables(self, name: str) -> None:
        old = self._sets.get(name)
        if old is None:
            return
        for dmx in (old.want_dmx, old.chnk_dmx):
            if (hit := self._set_dmx.get(dmx)) is not None and hit[0] is old:
                del self._set_dmx[dmx]
        for fs in self._faces.values():  # requests under the old keys reach nobody now
            fs.queue.discard_superseding({old.want_tag, old.chnk_tag})

    @property
    def sets(self) -> dict[str, list[bytes]]:
        """Bound sets: name -> keys (sorted)."""
        return {name: list(bs.keys) for name, bs in self._sets.items()}

    def add_feed(self, fid: bytes, now: float) -> None:
        """Hold ``fid`` (an empty replica, armed for its next entry) outside the GOSET."""
        if fid not in self.store:
            self.store.add_feed(fid)
            self._events.append(FeedAdded(fid))
        self._arm(fid)

    def feed_cut(self, fid: bytes, now: float) -> None:
        """The store cut ``fid`` back (damage found by the scrub): expect its next entry
        again and ask for the rest soon."""
        self._arm(fid)
        for fs in self._faces.values():
            fs.timer.rearm(now)

    def forget(self, fid: bytes) -> None:
        """Delete ``fid`` from the store, the DMX tables and every bound set."""
        if fid in self.goset:
            raise ValueError(f"feed {fid.hex()[:16]} is in the GOSET, which only grows")
        dmx = self._dmx_of.pop(fid, None)
        if dmx is not None and self._entry_dmx.get(dmx) == fid:
            del self._entry_dmx[dmx]
        for name, bs in list(self._sets.items()):
            if fid not in bs.keys:
                continue
            rest = [k for k in bs.keys if k != fid]
            if rest:
                self._install_set(BoundSet.of(name, rest))
            else:
                self.drop_set(name)
        if fid in self.store:
            self.store.remove_feed(fid)

    def ingest(self, now: float, packet: bytes) -> list[Stored]:
        """One packet through the entry-DMX and chunk-hash tables, as if heard on a face
        (a packet tunnelled inside another feed's entry). Never raises."""
        if now < self._store_retry_at:
            return []
        try:
            report = self._ingest(bytes(packet))
        except (StoreError, OSError) as exc:
            report = self._store_failed(now, exc)
        return report.stored

    def _store_failed(self, now: float, exc: Exception) -> RxReport:
        """A store write failed: stop ingesting for STORE_RETRY (serving goes on)."""
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if self.store_trouble is None:
            log.warning("%s: store cannot write (%s); not storing what arrives for %g s, "
                        "still serving", self.name, reason, STORE_RETRY)
        self.store_trouble = reason
        self._store_retry_at = now + STORE_RETRY
        return RxReport(FrameKind.UNKNOWN, Drop.STORE)

    # --- tables ---------------------------------------------------------------------
    def _arm(self, fid: bytes) -> None:
        replica = self.store.get(fid)
        if replica is None:
            return
        old = self._dmx_of.get(fid)
        if old is not None and self._entry_dmx.get(old) == fid:
            del self._entry_dmx[old]
        dmx = replica.next_dmx()
        self._dmx_of[fid] = dmx
        self._entry_dmx[dmx] = fid

    def _refresh_state(self, now: float) -> None:
        state = self.goset.state
        if state == self._state:
            return
        self._state = state
        self._differs_since = now
        self._want_dmx = want_dmx(state)
        self._chnk_dmx = chnk_dmx(state)
        for fs in self._faces.values():  # requests under the old state reach nobody now
            fs.queue.discard_superseding({"want", "chnk"})

    def _sync_goset(self, now: float, face: str | None = None) -> None:
        """Create replicas for keys the GOSET just added; recompute WANT/CHNK DMX."""
        for fid in self.goset.added:
            if fid not in self.store:
                self.store.add_feed(fid)
                self._events.append(FeedAdded(fid))
            self._arm(fid)
            self._push(now, Novelty(fid).encode(), FrameKind.NOVELTY, face, fid)
        self.goset.added.clear()
        self._refresh_state(now)

    # --- receiving ------------------------------------------------------------------
    def receive(self, now: float, face: str, frame: bytes, *,
                snr: float | None = None) -> RxReport:
        """Handle one frame heard on ``face`` (``snr``: what the radio measured, dB).
        Never raises on bad input."""
        self.stats.rx += 1
        self._snr = snr
        try:
            report = self._receive(now, face, bytes(frame))
        except (StoreError, OSError) as exc:
            report = self._store_failed(now, exc)
        # ``_value_``: Enum's ``value`` is a Python-level property (millions of frames)
        self.stats.rx_kinds[report.kind._value_] += 1
        if report.drop is not None:
            self.stats.drops[report.drop._value_] += 1
            log.debug("%s: dropped %d B frame on %s: %s", self.name, len(frame), face,
                      report.drop._value_)
        return report

    def _receive(self, now: float, face: str, frame: bytes) -> RxReport:
        fs = self._faces.get(face)
        if fs is None:
            return RxReport(FrameKind.UNKNOWN, Drop.UNKNOWN_FACE)
        packet = frame
        if fs.face.crc:
            try:
                packet = strip_crc(frame)
            except FrameError:
                return RxReport(FrameKind.UNKNOWN, Drop.CRC)
        if len(packet) < _MIN_FRAME:
            return RxReport(FrameKind.UNKNOWN, Drop.TOO_SHORT)
        if len(packet) > fs.face.mtu:
            return RxReport(FrameKind.UNKNOWN, Drop.TOO_LONG)
        if self.policy.suppress_overheard and fs.face.kind is FaceKind.BROADCAST:
            fs.queue.discard(packet)  # a neighbour said it already
        if fs.echoes and fs.echoes.pop(packet, None) is not None:
            fs.echo_rate += _ECHO_ALPHA * (1.0 - fs.echo_rate)  # our relay was taken on
        if packet in fs.copies:
            fs.copies[packet] += 1
        if fs.relays is not None:
            fs.relays.heard(packet)
        dmx = packet[:DMX_LEN]
        if len(packet) > PACKET_LEN and not (dmx in (self._want_dmx, self._chnk_dmx)
                                             or dmx in self._set_dmx):
            return RxReport(FrameKind.UNKNOWN, Drop.TOO_LONG)  # only vectors grow past 120
        if dmx == GOSET_DMX:
            return self._on_goset(now, face, packet)
        if dmx == self._want_dmx:
            self._agree(now)
            return self._on_want(now, fs, packet)
        if dmx == self._chnk_dmx:
            self._agree(now)
            return self._on_chnk(now, fs, packet)
        if (bound := self._set_dmx.get(dmx)) is not None:
            bs, is_want = bound
            if is_want:
                return self._on_want(now, fs, packet, bs)
            return self._on_chnk(now, fs, packet, bs.keys)
        return self._on_data(now, fs, packet)

    def _on_goset(self, now: float, face: str, packet: bytes) -> RxReport:
        try:
            pkt = decode_goset(packet)
        except PacketError:
            return RxReport(FrameKind.UNKNOWN, Drop.BAD_GOSET)
        fs = self._faces[face]
        self.goset.on_packet(pkt, face, now,
                             one_peer=fs.face.kind is FaceKind.POINT_TO_POINT)
        added = bool(self.goset.added)
        self._sync_goset(now, face if isinstance(pkt, Novelty) else None)
        if isinstance(pkt, Claim):
            if pkt.cnt == len(self.goset) and pkt.xor == self._state:
                self._agree(now)  # (also when the claim just brought us its missing keys)
            else:
                self._doubt_at = now
            report = RxReport(FrameKind.CLAIM)
        elif isinstance(pkt, Novelty):
            report = RxReport(FrameKind.NOVELTY, fid=pkt.key)
        else:
            return RxReport(FrameKind.ZAP, Drop.ZAP)
        if added and self._orphans:
            # a new feed's first entry may have come before its key: store it now (and
            # pass it on), not when the next entry or chunk happens to arrive
            self._adopt_orphans(now, fs, report)
        return report

    def _on_want(self, now: float, fs: _FaceState, packet: bytes,
                 bound: BoundSet | None = None) -> RxReport:
        if self._answered_already(fs, packet):
            # a peer that does not take what it asked for (the answers still wait, or
            # its queue is full of answers): building more would only cost the time
            # every other face needs
            return RxReport(FrameKind.WANT, Drop.QUEUE_FULL)
        try:
            want = decode_want(packet)
        except PacketError:
            return RxReport(FrameKind.WANT, Drop.BAD_REQUEST)
        keys = self.goset.keys if bound is None else bound.keys
        store = self.store
        wanted: list[tuple[int, int]] = []  # the slots we can answer
        more = False  # a slot shows the peer holds more than we do
        settle = (self.policy.hint_settle and bound is None
                  and isinstance(fs.timer, RepairTimer))
        slots = want.slots(len(keys))
        for (fndx, seq), top in zip(slots, store.tops([keys[i] for i, _ in slots])):
            if top < 0:  # not held
                continue
            if seq <= top:
                wanted.append((fndx, seq))
            elif seq - 1 > top:
                more = True
                if settle:
                    fid = keys[fndx]
                    if fs.hint_seqs.get(fid, 0) < seq - 1:
                        fs.hint_seqs[fid] = seq - 1
        if more and self.policy.rearm_on_hint:
            self._pace_repairs(fs, now)
            fs.timer.rearm(now, checkable=settle)
            if bound is not None:
                fs.set_next = bound.name
        credit = fs.credit
        judged = credit is not None and credit.judging(now, self._answers_queued(fs))
        if judged:
            assert credit is not None
            credit.want_seen({keys[fndx]: seq for fndx, seq in slots})
        answers = answer_want(wanted, keys, store, self._credit(fs)) if wanted else []
        if judged and answers:
            assert credit is not None
            runs: dict[bytes, tuple[int, int]] = {}
            for a in answers:
                first, n = runs.get(a.fid, (a.seq, 0))
                runs[a.fid] = (first, n + 1)
            credit.sent_entries(runs)
        if fs.relays is not None:
            fs.heard_requests.add(packet)
        return RxReport(FrameKind.WANT, answers=self._queue_answers(now, fs, answers, packet))

    def _on_chnk(self, now: float, fs: _FaceState, packet: bytes,
                 keys: list[bytes] | None = None) -> RxReport:
        if self._answered_already(fs, packet):
            return RxReport(FrameKind.CHNK, Drop.QUEUE_FULL)
        try:
            requests = decode_chnk(packet)
        except PacketError:
            return RxReport(FrameKind.CHNK, Drop.BAD_REQUEST)
        keys = self.goset.keys if keys is None else keys
        credit = fs.credit
        judged = credit is not None and credit.judging(now, self._answers_queued(fs))
        if judged:
            assert credit is not None
            credit.chnk_seen({(keys[r.fndx], r.seq): r.cnr for r in requests
                              if r.fndx < len(keys)})
        answers = answer_chnk(requests, keys, self.store, self._credit(fs))
        if judged and answers:
            assert credit is not None
            runs: dict[tuple[bytes, int], tuple[int, int]] = {}
            for a in answers:
                first, n = runs.get((a.fid, a.seq), (a.cnr or 0, 0))
                runs[(a.fid, a.seq)] = (first, n + 1)
            credit.sent_chunks(runs)
        if fs.relays is not None:
            fs.heard_requests.add(packet)
        return RxReport(FrameKind.CHNK, answers=self._queue_answers(now, fs, answers, packet))

    @staticmethod
    def _answered_already(fs: _FaceState, request: bytes) -> bool:
        """On a point-to-point face: are the answers to ``request`` still waiting in the
        queue, or is the queue full of answers? O(1), whatever the peer sends."""
        if fs.relays is not None:
            return False
        first = fs.answered.get(request)
        return (first is not None and first in fs.queue) or fs.queue.refuses(Priority.ANSWER)

    def _credit(self, fs: _FaceState) -> int:
        return fs.credit.value if fs.credit is not None else self.policy.credit

    @staticmethod
    def _answers_queued(fs: _FaceState) -> bool:
        head = fs.queue.peek()  # answers go first: one queued is at the head
        return head is not None and head.priority is Priority.ANSWER

    def _queue_answers(self, now: float, fs: _FaceState, answers: list[Answer],
                       request: bytes | None = None) -> int:
        if request is not None and answers and fs.relays is None:
            fs.answered[request] = answers[0].packet
            if len(fs.answered) > _ANSWERED_KEPT:
                fs.answered.popitem(last=False)
        queued = 0
        relays = fs.relays
        if relays is not None and answers and self._weak_request(now, fs, answers[0].packet):
            return 0
        window = (self._pace(fs, now, self.policy.answer_window,
                             self.policy.answer_window_scarce)
                  if relays is not None and answers else self.policy.answer_window)
        for a in answers:
            kind = FrameKind.ENTRY if a.cnr is None else FrameKind.CHUNK
            if relays is not None:
                # on a push face an answer waits a little, past the asker's own request
                # burst, and one copy heard from another neighbour cancels it
                air = fs.face.airtime(len(a.packet))
                delay = self._rng.uniform(air, max(air, window * air))
                if (relays.schedule(Relay(a.packet, kind, now + delay,
                                          relays.redundancy - 1, a.fid, a.seq, a.cnr, True))
                        or a.packet in relays):  # (else on its way already: a push)
                    queued += 1
            elif fs.queue.put(Queued(a.packet, Priority.ANSWER, kind, None, a.fid, a.seq,
                                     a.cnr)):
                queued += 1
        return queued

    def _weak_request(self, now: float, fs: _FaceState, first: bytes) -> bool:
        """Does a request heard on push face ``fs``, whose first answer is ``first``, wait
        for another before we answer?

        A request heard less than ``answer_snr_margin`` dB above the demodulation floor
        came over a link that rarely carries the answers back; its asker most likely has
        stronger neighbours, whose answers reach it. Only when a request for the same
        packet comes again (within ``answer_weak_memory``: nothing reached the asker; its
        other slots may have moved on meanwhile) do we answer. Where airtime is plentiful
        (less than ``push_skip_load`` of the budget spent) a long shot costs little, and a
        sparse mesh may have no stronger link: answer."""
        margin = self.policy.answer_snr_margin
        if (not margin or self._snr is None or self._snr >= self.policy.push_snr_low + margin
                or not self._airtime_scarce(fs, now)):
            return False
        weak = fs.weak_requests
        asked = weak.pop(first, None)
        if asked is not None and now - asked <= self.policy.answer_weak_memory:
            return False
        weak[first] = now
        if len(weak) > _WEAK_KEPT:
            weak.popitem(last=False)
        self.stats.weak_requests += 1
        return True

    def _on_data(self, now: float, fs: _FaceState, packet: bytes) -> RxReport:
        """An entry (by DMX) and/or a side-chain chunk (by hash)."""
        if now < self._store_retry_at:
            return RxReport(FrameKind.UNKNOWN, Drop.STORE)
        report = self._ingest(packet)
        if report.stored and self.store_trouble is not None:
            log.info("%s: store writable again (%s is over); storing again", self.name,
                     self.store_trouble)
            self.store_trouble = None
        if report.stored and self._orphans:
            self._adopt_orphans(now, fs, report)
        if report.stored:
            fs.timer.arrival(now)
            if self._sets and fs.set_next is None:  # more may follow: ask that set again
                fs.set_next = self._set_of([s.fid for s in report.stored])
            if report.fid is not None and report.fid in self.goset:  # not a private feed
                self._push(now, packet, report.kind, fs.face.name, report.fid, report.seq,
                           report.cnr)
            if isinstance(fs.timer, RepairTimer) and report.kind is FrameKind.ENTRY:
                replica = self.store.get(report.fid) if report.fid is not None else None
                if replica is not None and report.seq in replica.pending:
                    self._pace_repairs(fs, now)
                    fs.timer.chain_check(now)  # its chunks should follow
        elif (self.policy.hint_unmatched and report.drop is Drop.NO_MATCH
              and len(packet) < PACKET_LEN and not self._sets):
            # a short frame under a DMX we do not know: a request under another GOSET
            # (a neighbour holds keys we lack, or lacks ours): claim soon
            self._doubt_at = now
            # a node holding no key (an empty set's WANT): our claim goes out even if
            # neighbours said the same this interval (it did not hear them)
            self.goset.respond_soon(now, claim=True, insist=packet[:DMX_LEN] == _HELLO_DMX)
            self._hello(fs, now)
        elif (self.policy.hint_unmatched and report.drop is Drop.NO_MATCH
              and len(packet) == PACKET_LEN and packet not in self._recent):
            orphans = self._orphans
            kept = orphans.get(packet)
            if kept is None:
                orphans[packet] = (now, 1)
            elif self.policy.orphan_copies:
                orphans[packet] = (kept[0], kept[1] + 1)
            if len(orphans) > _ORPHANS_KEPT:
                orphans.popitem(last=False)
            first = next(iter(orphans.values()))[0]
            if now - first > self.policy.goset_respond_delay:
                # frames that stay unplaceable through the repairs: entries of a feed we
                # do not know (its novelty missed us) — compare sets with a claim soon
                self.goset.respond_soon(now, claim=True)
                while orphans and next(iter(orphans.values()))[0] < now - _ORPHAN_LIFE:
                    orphans.popitem(last=False)
            if self._agreed(now) and isinstance(fs.timer, RepairTimer):
                # an entry or chunk we could not place and do not hold: a neighbour has
                # news (an entry after one we missed, a chunk of an entry we lack); more
                # such frames come while it lasts, so no retries
                self.stats.hints += 1
                self._pace_repairs(fs, now)
                checkable = self.policy.hint_settle and len(fs.hint_orphans) < _ORPHANS_MAX
                if checkable:
                    fs.hint_orphans.add(packet)
                fs.timer.rearm(now, retries=False, checkable=checkable)
        return report

    def _adopt_orphans(self, now: float, fs: _FaceState, report: RxReport) -> None:
        """Store the kept frames that what was just stored made expected (again and
        again: one may open the way for the next), and push them on."""
        progress = True
        while progress and self._orphans:
            progress = False
            for packet in list(self._orphans):
                if (packet[:DMX_LEN] not in self._entry_dmx
                        and not self.store.expects_chunk(hash20(packet))):
                    continue
                copies = self._orphans.pop(packet)[1]
                taken = self._ingest(packet)
                if not taken.stored:
                    continue
                progress = True
                self.stats.orphans_adopted += 1
                report.stored.extend(taken.stored)
                if taken.fid is not None and taken.fid in self.goset:
                    self._push(now, packet, taken.kind, fs.face.name, taken.fid, taken.seq,
                               taken.cnr, copies)

    def _agree(self, now: float) -> None:
        """A neighbour holds our GOSET: requests are understood. If that is news (we
        just caught up with the set, or came back), ask at once what we lack."""
        if (self.policy.push and not self._agreed(now)
                and now - self._differs_since > self.policy.request_delay * 4):
            for fs in self._faces.values():
                if isinstance(fs.timer, RepairTimer):
                    fs.timer.rearm(now, retries=False)
        self._agreed_state = self._state

    def _agreed(self, now: float) -> bool:
        """Do our neighbours hold the GOSET we hold now? Yes if one showed it (an equal
        claim, a request under our DMX); also when ours has not changed for a while and
        nothing showed a different one meanwhile (in a line, the middle node keeps its
        claims to itself when both ends agree with it)."""
        if self._agreed_state == self._state:
            return True
        settled = max(self._differs_since, self._doubt_at) + self.policy.goset_respond_delay
        return now >= settled

    def _hello(self, fs: _FaceState, now: float) -> None:
        """Holding no key to claim, on a push face: an empty WANT is a request under a
        set unlike theirs, which makes the neighbours claim theirs (a node that joins
        late, next to neighbours long quiet); at most once per goset_respond_holdoff."""
        if not len(self.goset) and fs.relays is not None and now >= self._hello_ok:
            self._hello_ok = now + self.policy.goset_respond_holdoff
            fs.queue.put(Queued(encode_want(self._want_dmx, 0, []), Priority.REQUEST,
                                FrameKind.WANT, "want"))

    def _unsettled(self, now: float) -> bool:
        """Has our GOSET changed since we started, within ``request_settle`` seconds,
        with no neighbour showing it holds the new one?"""
        settle = self.policy.request_settle
        return (settle > 0 and self._born < self._differs_since
                and now - self._differs_since < settle and not self._agreed(now))

    def _floor_interval(self, now: float) -> float:
        """Seconds between request rounds while the budget runs low: ``beacon_floor``,
        or ``beacon_floor_calm`` once our GOSET has stayed put long enough."""
        policy = self.policy
        if policy.beacon_floor_calm and now - self._differs_since >= policy.beacon_calm_after:
            return policy.beacon_floor_calm
        return policy.beacon_floor

    def _remember(self, packet: bytes) -> None:
        recent = self._recent
        recent[packet] = None
        if len(recent) > _RECENT_MAX:
            recent.popitem(last=False)

    def _push(self, now: float, packet: bytes, kind: FrameKind, heard_on: str | None,
              fid: bytes | None = None, seq: int | None = None, cnr: int | None = None,
              copies: int = 1) -> None:
        """Relay ``packet`` once on every push face, after a random delay of a few
        airtimes, unless neighbours say it often enough first (:mod:`.relay`);
        ``copies``: how often it was heard on ``heard_on`` already."""
        if kind is not FrameKind.NOVELTY and self.policy.hint_unmatched:
            self._remember(packet)
        if not self.policy.push:
            return
        p = self.policy
        for name, fs in self._faces.items():
            if fs.relays is None:
                continue
            window = p.push_window * fs.face.airtime(len(packet))
            if name == heard_on and self._snr is not None:
                strength = (self._snr - p.push_snr_low) / (p.push_snr_high - p.push_snr_low)
                delay = window * (0.75 * min(max(strength, 0.0), 1.0)
                                  + self._rng.uniform(0.0, 0.25))
            else:
                delay = self._rng.uniform(0.0, window)
            skip = False
            if heard_on is not None and (p.push_echo_weight or p.push_echo_skip):
                dense = min(1.0, max(0.0, fs.density - 1.0) / p.push_echo_density)
                # only where neighbours relay what we hear (a dense mesh): a lone bridge
                # between two parts of a sparse mesh must not hold back
                delay += window * p.push_echo_weight * dense * (1.0 - fs.echo_rate)
                # where nobody else relays what we hear, our relays that nobody relays on
                # reach nobody new (a leaf): while airtime is scarce most are left out; a
                # bridge's are taken on (scarce of the whole budget, even in the first
                # hour: a bridge to a leaf hears no echo either, and starved it)
                skip = (kind is not FrameKind.NOVELTY and p.push_echo_skip > 0
                        and self._airtime_scarce(fs, now, paced=False)
                        and self._rng.random()
                        < p.push_echo_skip * (1.0 - dense) * (1.0 - fs.echo_rate))
            if name == heard_on:
                fs.copies[packet] = copies
                if len(fs.copies) > _COPIES_KEPT:
                    fs.density += 0.05 * (fs.copies.popitem(last=False)[1] - fs.density)
            if skip:
                self.stats.relays_skipped += 1
                continue
            heard = copies if name == heard_on else 0
            if kind is FrameKind.NOVELTY:  # cheap, and every frame of its feed needs it
                heard -= p.push_novelty_extra
            fs.relays.schedule(Relay(packet, kind, now + delay, heard, fid, seq, cnr))

    def _ingest(self, packet: bytes) -> RxReport:
        report = RxReport(FrameKind.UNKNOWN)
        fid = self._entry_dmx.get(packet[:DMX_LEN])
        bad = False
        if fid is not None:
            report.kind, report.fid = FrameKind.ENTRY, fid
            if len(packet) != PACKET_LEN:
                bad = True
            else:
                try:
                    stored = self.store.ingest_entry(fid, packet)
                except WireError:
                    bad = True
                else:
                    self._arm(fid)
                    self.admission.proven(fid)
                    self.stats.entries_stored += 1
                    report.seq = stored.seq
                    report.stored.append(Stored(fid, stored.seq))
                    self._events.append(NewEntry(fid, stored.seq, stored.msg_id,
                                                 stored.n_chunks))
        if len(packet) == PACKET_LEN and self.store.expects_chunk(hash20(packet)):
            for sc in self.store.ingest_chunk(packet):
                self.stats.chunks_stored += 1
                report.stored.append(Stored(sc.fid, sc.seq, sc.cnr))
                if not report.fid:
                    report.kind, report.fid, report.seq, report.cnr = (
                        FrameKind.CHUNK, sc.fid, sc.seq, sc.cnr)
                if sc.chain_complete:
                    self._events.append(ChainComplete(sc.fid, sc.seq))
        if not report.stored:
            report.drop = Drop.BAD_ENTRY if bad else Drop.NO_MATCH
        return report

    # --- sending --------------------------------------------------------------------
    def _enqueue_goset(self, outs: list[GosetOut]) -> None:
        for out in outs:
            kind = FrameKind.CLAIM if out.packet[DMX_LEN] == 0x63 else FrameKind.NOVELTY
            for name, fs in self._faces.items():
                if not out.faces or name in out.faces:
                    fs.queue.put(Queued(out.packet, Priority.GOSET, kind,
                                        "claim-full" if out.full else None))

    def _expire_unproven(self, now: float) -> None:
        """GOSET keys that yielded no valid entry during their probation leave the set,
        and the store while their replica is empty (see :mod:`.admission`)."""
        for fid in self.admission.take_expired(now):
            replica = self.store.get(fid)
            if replica is not None and replica.max_seq > 0:
                continue
            self.goset.remove(fid, now)
            log.info("%s: GOSET key %s yielded no entry in %g s; dropped", self.name,
                     fid.hex()[:16], self.policy.goset_probation)
            if replica is not None and not any(fid in bs.keys for bs in self._sets.values()):
                self.forget(fid)
        self._refresh_state(now)

    def _run_timers(self, now: float) -> None:
        if (due := self.admission.deadline()) is not None and due <= now:
            self._expire_unproven(now)
        if goset_out := self.goset.on_timer(now):
            self._enqueue_goset(goset_out)
        keys = self.goset.keys
        for fs in self._faces.values():
            if fs.echoes:
                self._check_echoes(now, fs)
            if not fs.timer.due(now):
                continue
            if ((fs.hint_seqs or fs.hint_orphans) and isinstance(fs.timer, RepairTimer)
                    and fs.timer.wants(now) and self._airtime_scarce(fs, now)
                    and self._hint_settled(fs)):
                fs.timer.settle(now, fs.density)
                self.stats.hints_settled += 1
                if not fs.timer.due(now):
                    continue
            if fs.budget is not None and self.policy.defer_requests:
                # a request built now would only wait in the queue for the airtime budget
                # and be replaced by a newer one: build it when it can go out
                free_at = fs.budget.earliest(now, fs.face.airtime(_MIN_FRAME + 1))
                if free_at > now:
                    fs.timer.postpone(free_at if free_at != float("inf")
                                      else now + self.policy.rtt_max)
                    continue
            if fs.relays is not None and keys and not self._sets and self._unsettled(now):
                # nobody holds our set yet and it is still changing: a request now would
                # not be understood, and the next key would change its DMX again (an
                # empty set asks at once: its WANT makes the neighbours claim theirs)
                fs.timer.postpone(now + self.policy.request_delay)
                continue
            floor = False
            if self._budget_low(fs, now) and not self._sets:
                # the budget runs low: what is left goes to relaying data, not to asking
                # (bound sets get nothing pushed by others: they keep asking), but for a
                # WANT every ``beacon_floor`` that shows the neighbours what we lack
                if (not self.policy.beacon_floor
                        or now - fs.floor_at < self._floor_interval(now)):
                    fs.timer.postpone(now + self.policy.request_delay * CHAIN_WAIT)
                    continue
                floor = True
                fs.floor_at = now
                self.stats.floor_beacons += 1
            asks = not isinstance(fs.timer, RepairTimer) or fs.timer.wants(now)
            want = (fs.builder.want(self._want_dmx, keys, self.store, self._behind(fs))
                    if asks else None)
            if asks and not keys and not self._sets and now >= self._hello_first:
                self._hello(fs, now)
            lacking = self.store.has_pending_chains() and self._agreed(now)
            # a beacon says what a neighbour just said in the same words: it stays home;
            # a request after a hint goes out anyway (whoever said the same may not reach
            # the neighbour that holds the answer)
            hinted = isinstance(fs.timer, RepairTimer) and fs.timer.hinted
            if isinstance(fs.timer, RepairTimer):
                self._pace_repairs(fs, now)
                fs.timer.sent(now, fs.builder.cycle_end or not keys or not asks, lacking,
                              fs.density)
                if asks:  # the WANT goes out: what the frames hinted at is asked for
                    fs.hint_orphans.clear()
            else:
                fs.timer.sent(now, fs.builder.cycle_end or not keys, lacking)
            self._queue_requests(fs, fs.builder, want, self._chnk_dmx, keys, "", hinted,
                                 Priority.URGENT if floor else Priority.REQUEST)
            for name, bs in self._sets_this_round(fs):
                builder = fs.set_builders.get(name)
                if builder is None:
                    builder = fs.set_builders[name] = RequestBuilder(self.policy)
                want = builder.want(bs.want_dmx, bs.keys, self.store)
                self._queue_requests(fs, builder, want, bs.chnk_dmx, bs.keys, ":" + name)
            fs.heard_requests.clear()

    def _check_echoes(self, now: float, fs: _FaceState) -> None:
        """Entries we relayed that no neighbour relayed on: advertise our holdings."""
        silent = [packet for packet, t in fs.echoes.items() if t <= now]
        for packet in silent:
            del fs.echoes[packet]
            fs.echo_rate -= _ECHO_ALPHA * fs.echo_rate
        if (silent and isinstance(fs.timer, RepairTimer) and self._agreed(now)
                and (self.policy.no_echo_scarce
                     or not self._airtime_scarce(fs, now, paced=False))):
            self.stats.no_echo += 1
            fs.timer.advertise(now)

    def _hint_settled(self, fs: _FaceState) -> bool:
        """Do we hold by now everything the neighbours' WANTs showed they hold beyond us,
        and every frame we could not place that hinted too, and is that all the hints
        said? Then the request they brought would only be answered with what we have (the
        push came meanwhile)."""
        timer = fs.timer
        assert isinstance(timer, RepairTimer)
        if not timer.hinted or timer.open_hint or timer.following:
            return False
        orphans = fs.hint_orphans
        if orphans:
            # a frame stored once what it follows came (adopted) is remembered as held
            orphans.difference_update([pk for pk in orphans if pk in self._recent])
            if orphans:
                return False
        seqs = fs.hint_seqs
        for (fid, seq), top in zip(list(seqs.items()), self.store.tops(list(seqs))):
            if top < 0 or top >= seq:  # not held any more, or caught up
                del seqs[fid]
        return not seqs

    def _behind(self, fs: _FaceState) -> list[int]:
        """The set indices of the feeds a neighbour's WANT showed us behind on, that we
        still lack (want_focus)."""
        seqs = fs.hint_seqs
        if not seqs or not self.policy.want_focus:
            return []
        out: list[int] = []
        index = self.goset.index
        for (fid, seq), top in zip(list(seqs.items()), self.store.tops(list(seqs))):
            if 0 <= top < seq and (i := index(fid)) is not None:
                out.append(i)
        return out

    def _pace_repairs(self, fs: _FaceState, now: float) -> None:
        """Requests after a hint wait ``request_delay``, or ``request_delay_scarce`` while
        airtime is scarce (the push may still bring what the hint showed, and an early
        request's answers only repeat it)."""
        if isinstance(fs.timer, RepairTimer):
            p = self.policy
            fs.timer.delay = self._pace(fs, now, p.request_delay, p.request_delay_scarce)

    def _pace(self, fs: _FaceState, now: float, plain: float, scarce: float) -> float:
        """``scarce`` (when set) while face ``fs`` has spent more than ``push_skip_load``
        of its airtime budget, else ``plain``: the policy's waits that grow when airtime
        is scarce (a hint's request, the answers)."""
        return scarce if scarce and self._airtime_scarce(fs, now) else plain

    def _airtime_scarce(self, fs: _FaceState, now: float, paced: bool = True) -> bool:
        """Has a push face spent more than ``push_skip_load`` of its airtime budget?
        ``paced``: in the face's first duty window, of the budget pro rata to the time
        elapsed, but at least ``push_skip_start`` of it (a face that spends at that pace
        from the start has spent its whole budget before the window ends)."""
        if fs.budget is None:
            return False
        p, face = self.policy, fs.face
        share = 1.0
        if paced and p.push_skip_start < 1.0 and now - fs.added < face.duty_window:
            share = max(p.push_skip_start, (now - fs.added) / face.duty_window)
        return fs.budget.used(now) > p.push_skip_load * share * face.duty_cycle * face.duty_window

    def _radio_scarce(self, now: float) -> bool:
        """Is any push face short of airtime (:meth:`_airtime_scarce`)?"""
        return any(fs.relays is not None and self._airtime_scarce(fs, now)
                   for fs in self._faces.values())

    def _budget_low(self, fs: _FaceState, now: float) -> bool:
        """Is less than ``push_reserve`` of a push face's airtime budget left?"""
        reserve = self.policy.push_reserve
        return (reserve > 0 and fs.budget is not None and fs.relays is not None
                and fs.budget.used(now) > (1 - reserve) * fs.face.duty_cycle
                * fs.face.duty_window)

    def _sets_this_round(self, fs: _FaceState) -> list[tuple[str, BoundSet]]:
        """The bound sets to ask in this request round on face ``fs``.

        On an airtime-budgeted face one set per round, in turn: a node with many
        contracts would otherwise spend its duty cycle on WANTs. On a free face as many
        as the send queue holds with room to spare (a WANT and a CHNK each, and the
        GOSET's own): asking more would push the later ones out of a small queue every
        round, so that they were never asked at all. A set whose requests bring entries
        or chunks, whose feed we just appended to, or whose peer's WANT shows it holds
        more than we do goes before the others' turn."""
        items = list(self._sets.items())
        if fs.budget is None:
            per_round = max(1, fs.queue.capacity // 2 - 1)
        else:
            per_round = 1
        wanted, fs.set_next = fs.set_next, None
        if len(items) <= per_round:
            return items
        if wanted is not None and wanted in self._sets:
            return [(wanted, self._sets[wanted])]
        chosen = [items[(fs.set_turn + 1 + k) % len(items)] for k in range(per_round)]
        fs.set_turn = (fs.set_turn + per_round) % len(items)
        return chosen

    def _set_of(self, fids: Iterable[bytes]) -> str | None:
        """The first bound set holding one of ``fids``."""
        for fid in fids:
            for name, bs in self._sets.items():
                if fid in bs.keys:
                    return name
        return None

    def _queue_requests(self, fs: _FaceState, builder: RequestBuilder, want: bytes | None,
                        chnk_dmx_: bytes, keys: list[bytes], tag: str,
                        always: bool = False, priority: Priority = Priority.REQUEST) -> None:
        heard: set[bytes] = set() if always else fs.heard_requests
        if want is not None and want not in heard:
            fs.queue.put(Queued(want, priority, FrameKind.WANT, "want" + tag))
        chnk = builder.chnk(chnk_dmx_, keys, self.store)
        if chnk is not None and chnk not in heard:
            fs.queue.put(Queued(chnk, priority, FrameKind.CHNK, "chnk" + tag))

    def frames_to_send(self, now: float) -> list[Outgoing]:
        """Run due timers and return every frame that may go out at ``now``."""
        self._run_timers(now)
        jitter = self.policy.tx_jitter
        out: list[Outgoing] = []
        for name, fs in self._faces.items():
            if fs.relays is not None:
                self._release_relays(now, fs)
            while (head := fs.queue.peek()) is not None:
                ready = fs.ready_at(head)
                if ready > now:
                    if ready == float("inf") or len(head.packet) > fs.face.mtu:
                        fs.queue.pop()  # can never go out on this face
                        fs.queue.dropped += 1
                        continue
                    break
                if jitter and fs.face.lora is not None and not fs.jittered:
                    fs.jittered = True
                    delay = self._rng.uniform(0.0, jitter * fs.face.airtime(len(head.packet)))
                    fs.next_tx = max(fs.next_tx, now + delay)
                    break
                fs.jittered = False
                q = fs.queue.pop()
                if fs.bucket is not None:
                    fs.bucket.spend(now)
                if fs.credit is not None and q.priority is Priority.ANSWER:
                    fs.credit.last_answer = now
                airtime = fs.face.airtime(len(q.packet))
                if fs.budget is not None:
                    fs.budget.spend(now, airtime)
                fs.next_tx = now + max(fs.face.min_gap, airtime)
                if self.policy.hint_unmatched and q.kind in (FrameKind.ENTRY, FrameKind.CHUNK):
                    self._remember(q.packet)  # its echoes are no news
                frame = add_crc(q.packet) if fs.face.crc else q.packet
                out.append(Outgoing(name, frame, q.kind, q.fid, q.seq, q.cnr, airtime))
                self.stats.tx += 1
                self.stats.tx_bytes += len(frame)
                self.stats.airtime += airtime
                self.stats.tx_kinds[q.kind._value_] += 1
        dropped = 0  # (a loop: sum() over a generator costs more, once per wake-up)
        for fs in self._faces.values():
            dropped += fs.queue.dropped
        self.stats.queue_dropped = dropped
        return out

    def _relay_ready(self, fs: _FaceState, relay: Relay, now: float) -> float:
        """When ``relay`` may move into the send queue: once due, with room in the queue
        and airtime in the budget (till then it waits where copies still cancel it);
        inf: not while the queue is full, or never (too long for the budget)."""
        if len(fs.queue.items) >= fs.queue.capacity:
            return _INF
        t = max(now, relay.due)
        if fs.budget is None:
            return t
        return fs.budget.earliest(t, fs.face.airtime(len(relay.packet)))

    def _release_relays(self, now: float, fs: _FaceState) -> None:
        """Move due relays into the send queue while it has room and the budget allows;
        drop those that waited so long that the neighbours have them by now (but
        novelties, with ``push_keep_novelties``), and those the budget can never carry."""
        relays, queue = fs.relays, fs.queue
        assert relays is not None
        stale = now - self.policy.push_stale
        keep_novelties = self.policy.push_keep_novelties
        while (r := relays.peek()) is not None and r.due <= now:
            ready = self._relay_ready(fs, r, now)
            if ready > now and not (ready == float("inf") and len(queue) < queue.capacity):
                break
            relays.pop()
            if ((r.due < stale and not (keep_novelties and r.kind is FrameKind.NOVELTY))
                    or ready > now):
                self.stats.relays_stale += 1
                continue
            queue.put(Queued(r.packet, Priority.ANSWER, r.kind, None, r.fid, r.seq, r.cnr))
            if not r.answer and r.kind is FrameKind.ENTRY:
                # a neighbour that takes it relays it in turn: no echo, and our WANT
                # soon shows what we hold, for whoever missed it (a sparse, lossy mesh)
                fs.echoes[r.packet] = now + 4 * self.policy.push_window * fs.face.airtime(
                    PACKET_LEN) + self.policy.request_delay
            if r.answer:
                self.stats.answered += 1
            else:
                self.stats.pushed += 1
        cancelled = 0  # (a loop: sum() over a generator costs more, once per wake-up)
        for f in self._faces.values():
            if f.relays is not None:
                cancelled += f.relays.cancelled
        self.stats.relays_cancelled = cancelled

    def next_deadline(self) -> float | None:
        """The earliest time :meth:`frames_to_send` has something to do; None: idle."""
        best = _INF  # the earliest finite time (asked for after every frame: no lists)
        goset_t = self.goset.deadline()
        if goset_t is not None and goset_t < best:
            best = goset_t
        if (expiry := self.admission.deadline()) is not None and expiry < best:
            best = expiry
        has_keys = len(self.goset.keys) > 0 or bool(self._sets)
        for fs in self._faces.values():
            if has_keys:
                if (t := fs.timer.next_at) < best:
                    best = t
            elif (fs.relays is not None
                  and (t := max(fs.timer.next_at, self._hello_ok, self._hello_first)) < best):
                best = t  # an empty set's hello (_hello; no bound set either: has_keys)
            items = fs.queue.items  # (its head without peek(): one call less per frame)
            if items and (t := fs.ready_at(items[0])) < best:
                best = t
            if fs.echoes and (t := min(fs.echoes.values())) < best:
                best = t
            if (fs.relays is not None and (relay := fs.relays.peek()) is not None
                    and (t := self._relay_ready(fs, relay, relay.due)) < best):
                best = t
        return None if best == _INF else best
