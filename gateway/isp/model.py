"""The tinyISP engine's state: roles, phases, contract parameters and what is persisted.

Everything the engine must remember across a restart lives in one :class:`EngineState`,
saved as one JSON document (feed ids, refs and held wires as hex). Payloads are never
copied into it: c2c entries waiting to be tunnelled are referred to by (feed, seq) and
read back from the feed store when they are written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = [
    "STATE_VERSION",
    "ClientSub",
    "Contract",
    "ContractParams",
    "Cursor",
    "EngineState",
    "Incoming",
    "IspError",
    "IspSub",
    "Phase",
    "Reader",
    "Role",
    "StateError",
    "Writer",
]

STATE_VERSION = 1
OUTCOMES_KEPT = 64


class IspError(Exception):
    """A request the engine cannot carry out; the message names the fix."""


class StateError(IspError):
    """A saved state document that cannot be read."""


class Role(Enum):
    ISP = "isp"
    CLIENT = "client"


class Phase(Enum):
    """Contract states of the references (client: Kotlin, ISP: Python)."""

    ONBOARD_REQUESTED = "onboard_requested"  # client: request written, no answer yet
    ONBOARD_ACK = "onboard_ack"  # client: accepted, our ack written, the ISP's awaited
    ONBOARDING = "onboarding"  # ISP: accepted, the client's ack awaited
    ESTABLISHED = "established"
    FAREWELL = "farewell"  # end of data queued; the peer's end awaited
    FAREWELL_FIN = "farewell_fin"  # the peer's data read to its end, farewell_fin written


@dataclass(slots=True, frozen=True)
class ContractParams:
    """Terms both sides of a contract must agree on (no message carries them).

    ``feed_size``: entries of a data feed, ``prev`` and ``next`` included (the hop
    happens after entry ``feed_size - 1``); ``max_feeds``: data feeds a writer may have
    unfinished (written, not yet released by the reader's ``feedhopping_fin``) before it
    pauses; ``farewell_delay``: seconds between the exchange of ``farewell_fin`` and the
    deletion of the contract's feeds, so that our fin can still be fetched;
    ``hold_max``: tunnelled wires held per contract while their DMX is not armed;
    ``farewell_timeout``: seconds of silence from the peer (no entry read from its
    control or data feed) after which a farewell that is not complete ends locally (the
    reference ISP's own ``farewell_fin`` may never come: it deletes its control feed).
    """

    feed_size: int = 50
    max_feeds: int = 3
    farewell_delay: float = 10.0
    hold_max: int = 64
    farewell_timeout: float = 300.0

    def __post_init__(self) -> None:
        if self.feed_size < 3:
            raise ValueError("feed_size must leave room for prev, data and next (>= 3)")
        if self.max_feeds < 2:
            raise ValueError("max_feeds must be at least 2 (the old and the new feed)")
        if self.farewell_delay < 0 or self.hold_max < 0:
            raise ValueError("farewell_delay and hold_max must not be negative")
        if self.farewell_timeout <= 0:
            raise ValueError("farewell_timeout must be positive")


# --- small codec helpers -------------------------------------------------------------

def _h(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


def _b(s: Any) -> bytes:
    if not isinstance(s, str):
        raise StateError(f"expected a hex string, got {type(s).__name__}")
    return bytes.fromhex(s)


def _ob(s: Any) -> bytes | None:
    return None if s is None else _b(s)


@dataclass(slots=True)
class Cursor:
    """How far a feed has been read: ``seq`` entries, the last one's message id ``mid``."""

    seq: int = 0
    mid: bytes | None = None

    def dump(self) -> list[Any]:
        return [self.seq, _h(self.mid)]

    @classmethod
    def load(cls, d: Any) -> Cursor:
        return cls(int(d[0]), _ob(d[1]))


@dataclass(slots=True)
class Writer:
    """Our side of the data path: the data feeds the peer has not released yet (oldest
    first; entries go to the last one) and what waits to be written.

    A queue item is a c2c entry ``(feed, seq)`` whose wire becomes one data entry, or
    None: the end-of-data marker ``feedhopping_next(None)``.
    """

    feeds: list[bytes]
    queue: list[tuple[bytes, int] | None] = field(default_factory=list)
    closed: bool = False  # the end marker is queued: nothing more is accepted
    ended: bool = False  # the end marker is written

    def dump(self) -> dict[str, Any]:
        return {"feeds": [f.hex() for f in self.feeds],
                "queue": [None if i is None else [i[0].hex(), i[1]] for i in self.queue],
                "closed": self.closed, "ended": self.ended}

    @classmethod
    def load(cls, d: dict[str, Any]) -> Writer:
        queue: list[tuple[bytes, int] | None] = [
            None if i is None else (_b(i[0]), int(i[1])) for i in d["queue"]]
        return cls([_b(f) for f in d["feeds"]], queue, bool(d["closed"]), bool(d["ended"]))


@dataclass(slots=True)
class Reader:
    """Our reading of the peer's data feeds: the current one, how far, which feed its
    ``prev`` must name, and tunnelled wires held until their DMX is armed (DMX -> wire)."""

    feed: bytes | None = None
    read: int = 0
    prev: bytes | None = None
    ended: bool = False
    held: dict[bytes, bytes] = field(default_factory=dict)

    def dump(self) -> dict[str, Any]:
        return {"feed": _h(self.feed), "read": self.read, "prev": _h(self.prev),
                "ended": self.ended, "held": {k.hex(): v.hex() for k, v in self.held.items()}}

    @classmethod
    def load(cls, d: dict[str, Any]) -> Reader:
        return cls(_ob(d["feed"]), int(d["read"]), _ob(d["prev"]), bool(d["ended"]),
                   {_b(k): _b(v) for k, v in d["held"].items()})


@dataclass(slots=True)
class ClientSub:
    """A client's subscription with ``peer`` (root), known by the ref of its sub_req.

    ``peer_c2c`` is None while our own request awaits its answer. ``sent``: entries of
    our c2c feed handed to the data writer; ``delivered``: entries of the peer's c2c
    feed delivered to the inbox.
    """

    ref: bytes
    peer: bytes
    own_c2c: bytes
    peer_c2c: bytes | None = None
    sent: int = 0
    delivered: int = 0

    @property
    def active(self) -> bool:
        return self.peer_c2c is not None

    def dump(self) -> list[Any]:
        return [self.ref.hex(), self.peer.hex(), self.own_c2c.hex(), _h(self.peer_c2c),
                self.sent, self.delivered]

    @classmethod
    def load(cls, d: Any) -> ClientSub:
        return cls(_b(d[0]), _b(d[1]), _b(d[2]), _ob(d[3]), int(d[4]), int(d[5]))


@dataclass(slots=True)
class Incoming:
    """A subscription request that reached us through the ISP, awaiting accept/reject."""

    ref: bytes
    requester: bytes
    c2c: bytes

    def dump(self) -> list[Any]:
        return [self.ref.hex(), self.requester.hex(), self.c2c.hex()]

    @classmethod
    def load(cls, d: Any) -> Incoming:
        return cls(_b(d[0]), _b(d[1]), _b(d[2]))


@dataclass(slots=True)
class Contract:
    """One client-ISP contract, seen from either side. ``cid`` is the ref of the
    client's onboard_request. ``end_held``: our ``farewell_init`` is written and our
    end-of-data marker waits until the peer shows it read it (its ack, fin, own init or
    end of data): a peer that read our end of data first would take it for the whole
    farewell (the reference ISP does). ``quiet_since``: during a farewell, when the peer
    last moved (not saved: a restart gives the peer a fresh ``farewell_timeout``)."""

    cid: bytes
    client_root: bytes
    isp_root: bytes
    phase: Phase
    own_ctrl: bytes
    peer_ctrl: bytes | None = None
    ctrl: Cursor = field(default_factory=Cursor)
    writer: Writer | None = None
    reader: Reader = field(default_factory=Reader)
    fin_sent: bool = False
    fin_received: bool = False
    terminate_at: float | None = None
    subs: dict[bytes, ClientSub] = field(default_factory=dict)  # client: ref -> sub
    incoming: dict[bytes, Incoming] = field(default_factory=dict)  # client: ref -> request
    end_held: bool = False
    quiet_since: float | None = None

    def peer_root(self, own_root: bytes) -> bytes:
        return self.isp_root if own_root == self.client_root else self.client_root

    def dump(self) -> dict[str, Any]:
        return {
            "cid": self.cid.hex(), "client_root": self.client_root.hex(),
            "isp_root": self.isp_root.hex(), "phase": self.phase.value,
            "own_ctrl": self.own_ctrl.hex(), "peer_ctrl": _h(self.peer_ctrl),
            "ctrl": self.ctrl.dump(),
            "writer": None if self.writer is None else self.writer.dump(),
            "reader": self.reader.dump(), "fin_sent": self.fin_sent,
            "fin_received": self.fin_received, "terminate_at": self.terminate_at,
            "subs": [s.dump() for s in self.subs.values()],
            "incoming": [i.dump() for i in self.incoming.values()],
            "end_held": self.end_held,
        }

    @classmethod
    def load(cls, d: dict[str, Any]) -> Contract:
        subs = [ClientSub.load(s) for s in d["subs"]]
        incoming = [Incoming.load(i) for i in d["incoming"]]
        t = d["terminate_at"]
        return cls(
            _b(d["cid"]), _b(d["client_root"]), _b(d["isp_root"]), Phase(d["phase"]),
            _b(d["own_ctrl"]), _ob(d["peer_ctrl"]), Cursor.load(d["ctrl"]),
            None if d["writer"] is None else Writer.load(d["writer"]), Reader.load(d["reader"]),
            bool(d["fin_sent"]), bool(d["fin_received"]), None if t is None else float(t),
            {s.ref: s for s in subs}, {i.ref: i for i in incoming},
            bool(d.get("end_held", False)))


@dataclass(slots=True)
class IspSub:
    """A subscription the ISP mediates: ``a`` asked (``ref`` is its sub_req), ``b`` was
    asked. ``b_c2c`` is None while b has not answered. ``fwd_a``/``fwd_b``: entries of
    a's/b's c2c feed queued for the other side's data feed."""

    ref: bytes
    a_root: bytes
    a_c2c: bytes
    b_root: bytes
    b_c2c: bytes | None = None
    fwd_a: int = 0
    fwd_b: int = 0

    @property
    def active(self) -> bool:
        return self.b_c2c is not None

    def dump(self) -> list[Any]:
        return [self.ref.hex(), self.a_root.hex(), self.a_c2c.hex(), self.b_root.hex(),
                _h(self.b_c2c), self.fwd_a, self.fwd_b]

    @classmethod
    def load(cls, d: Any) -> IspSub:
        return cls(_b(d[0]), _b(d[1]), _b(d[2]), _b(d[3]), _ob(d[4]), int(d[5]), int(d[6]))


@dataclass(slots=True)
class EngineState:
    """Everything the engine persists.

    ``roots``: root feeds read for protocol messages (the ISP: every followed client;
    a client: its ISP) with how far they were read. ``retired``: c2c feeds of ended
    subscriptions, deleted once no writer queue refers to them. ``trash``: feeds to
    delete; a feed is listed here, the state saved, and only then deleted, so a crash in
    between deletes it at the next start. ``outcomes``: how recent requests ended
    (contract id or subscription ref -> "accepted", "rejected", "not_found", ...).
    """

    role: Role
    root: bytes
    allow: list[bytes] = field(default_factory=list)
    roots: dict[bytes, Cursor] = field(default_factory=dict)
    contracts: dict[bytes, Contract] = field(default_factory=dict)
    isp_subs: dict[bytes, IspSub] = field(default_factory=dict)
    retired: list[bytes] = field(default_factory=list)
    trash: list[bytes] = field(default_factory=list)
    outcomes: dict[bytes, str] = field(default_factory=dict)

    def set_outcome(self, ref: bytes, outcome: str) -> None:
        self.outcomes.pop(ref, None)
        self.outcomes[ref] = outcome
        while len(self.outcomes) > OUTCOMES_KEPT:
            del self.outcomes[next(iter(self.outcomes))]

    def dump(self) -> bytes:
        body = {
            "version": STATE_VERSION, "role": self.role.value, "root": self.root.hex(),
            "allow": [a.hex() for a in self.allow],
            "roots": {k.hex(): c.dump() for k, c in self.roots.items()},
            "contracts": [c.dump() for c in self.contracts.values()],
            "isp_subs": [s.dump() for s in self.isp_subs.values()],
            "retired": [f.hex() for f in self.retired],
            "trash": [f.hex() for f in self.trash],
            "outcomes": {k.hex(): v for k, v in self.outcomes.items()},
        }
        return json.dumps(body, separators=(",", ":")).encode()

    @classmethod
    def load(cls, data: bytes) -> EngineState:
        try:
            d = json.loads(data)
            if d.get("version") != STATE_VERSION:
                raise StateError(f"tinyISP state version {d.get('version')!r} is not "
                                 f"{STATE_VERSION}")
            contracts = [Contract.load(c) for c in d["contracts"]]
            subs = [IspSub.load(s) for s in d["isp_subs"]]
            return cls(
                Role(d["role"]), _b(d["root"]), [_b(a) for a in d["allow"]],
                {_b(k): Cursor.load(c) for k, c in d["roots"].items()},
                {c.cid: c for c in contracts}, {s.ref: s for s in subs},
                [_b(f) for f in d["retired"]], [_b(f) for f in d["trash"]],
                {_b(k): str(v) for k, v in d["outcomes"].items()})
        except StateError:
            raise
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise StateError(f"tinyISP state is unreadable ({exc}); restore it from a "
                             "backup or move it away to start without contracts") from exc

    def feeds(self) -> set[bytes]:
        """Every contract feed the state refers to (control, data, c2c, to be deleted)."""
        out: set[bytes] = set(self.retired) | set(self.trash)
        for c in self.contracts.values():
            out.add(c.own_ctrl)
            if c.peer_ctrl is not None:
                out.add(c.peer_ctrl)
            if c.writer is not None:
                out.update(c.writer.feeds)
            if c.reader.feed is not None:
                out.add(c.reader.feed)
            for s in c.subs.values():
                out.add(s.own_c2c)
                if s.peer_c2c is not None:
                    out.add(s.peer_c2c)
        for sub in self.isp_subs.values():
            out.add(sub.a_c2c)
            if sub.b_c2c is not None:
                out.add(sub.b_c2c)
        return out
