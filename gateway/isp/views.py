"""What the engine shows its users: contracts, requests, subscriptions, messages."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AskedSubscription", "C2cMessage", "ContractInfo", "SubRequest", "Subscription"]


@dataclass(slots=True, frozen=True)
class C2cMessage:
    """A message from ``peer`` (its root id): entry ``seq`` of its c2c feed to us.

    ``t`` is when it was delivered, None for messages delivered before the engine was
    last started.
    """

    peer: bytes
    seq: int
    content: bytes
    t: float | None


@dataclass(slots=True, frozen=True)
class ContractInfo:
    """One contract. ``id`` is the ref of the client's onboard_request; ``data_in`` the
    peer's data feed being read, ``data_out`` our unfinished data feeds (the last one is
    written); ``subscriptions`` the peer roots of active subscriptions (for the ISP: the
    other client of each); ``pending`` the refs of subscription requests awaiting an
    answer; ``paused``: the writer waits for a feedhopping_fin (flow control);
    ``ctrl_out``/``ctrl_in``: our control feed and the peer's."""

    id: bytes
    peer: bytes
    state: str
    ctrl_out: bytes
    ctrl_in: bytes | None
    data_in: bytes | None
    data_out: tuple[bytes, ...]
    subscriptions: tuple[bytes, ...]
    pending: tuple[bytes, ...]
    paused: bool
    queued: int
    held: int


@dataclass(slots=True, frozen=True)
class SubRequest:
    """A subscription request from ``requester`` (root), awaiting accept or reject."""

    ref: bytes
    requester: bytes


@dataclass(slots=True, frozen=True)
class AskedSubscription:
    """A subscription we asked ``peer`` (root) for that is no subscription (yet):
    ``outcome`` "pending" (no answer yet), "rejected" or "not_found" (the peer had no
    contract with the ISP when it read our request)."""

    ref: bytes
    peer: bytes
    outcome: str


@dataclass(slots=True, frozen=True)
class Subscription:
    """An accepted subscription with ``peer``: our c2c feed and theirs, how many of our
    entries were handed to the ISP and how many of theirs were delivered."""

    peer: bytes
    ref: bytes
    own_c2c: bytes
    peer_c2c: bytes
    sent: int
    delivered: int
