"""What a Node reports: events for upper layers and the decode of every frame.

Events (drained with :meth:`Node.drain_events`) tell applications and tinyISP what
changed: a feed was added, an entry was stored, a side chain became complete. The
decode of each frame received (:class:`RxReport`) and sent (:class:`Outgoing`) is what
the runtime writes into captures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

__all__ = [
    "ChainComplete",
    "Drop",
    "Event",
    "FeedAdded",
    "FrameKind",
    "NewEntry",
    "Outgoing",
    "RxReport",
    "Stored",
]


class FrameKind(Enum):
    CLAIM = "claim"
    NOVELTY = "novelty"
    ZAP = "zap"
    WANT = "want"
    CHNK = "chnk"
    ENTRY = "entry"
    CHUNK = "chunk"
    UNKNOWN = "unknown"


class Drop(Enum):
    """Why a received frame was dropped."""

    UNKNOWN_FACE = "unknown_face"
    CRC = "crc"
    TOO_SHORT = "too_short"
    TOO_LONG = "too_long"
    BAD_GOSET = "bad_goset"
    ZAP = "zap"  # an ESP32 wipe command: never obeyed
    BAD_REQUEST = "bad_request"
    BAD_ENTRY = "bad_entry"  # matched a DMX but failed verification
    NO_MATCH = "no_match"  # no DMX or chunk hash of ours: held already, another mesh's, garbage
    QUEUE_FULL = "queue_full"  # a request whose answers still wait, or no room for answers
    STORE = "store"  # the store could not write (disk full, I/O error): fetched again later


@dataclass(slots=True, frozen=True)
class FeedAdded:
    fid: bytes


@dataclass(slots=True, frozen=True)
class NewEntry:
    fid: bytes
    seq: int
    msg_id: bytes
    n_chunks: int  # side-chain chunks still to come; 0: content complete
    own: bool = False


@dataclass(slots=True, frozen=True)
class ChainComplete:
    fid: bytes
    seq: int


Event = FeedAdded | NewEntry | ChainComplete


@dataclass(slots=True, frozen=True)
class Stored:
    """One entry (``cnr`` None) or chunk stored from a received frame."""

    fid: bytes
    seq: int
    cnr: int | None = None


@dataclass(slots=True)
class RxReport:
    """The Node's reading of one received frame."""

    kind: FrameKind
    drop: Drop | None = None
    fid: bytes | None = None
    seq: int | None = None
    cnr: int | None = None
    stored: list[Stored] = field(default_factory=list)
    answers: int = 0  # packets queued in reply

    # written out: the generated one runs as plain Python even in the compiled build,
    # and this class is made per frame
    def __init__(self, kind: FrameKind, drop: Drop | None = None, fid: bytes | None = None,
                 seq: int | None = None, cnr: int | None = None,
                 stored: list[Stored] | None = None, answers: int = 0) -> None:
        self.kind = kind
        self.drop = drop
        self.fid = fid
        self.seq = seq
        self.cnr = cnr
        self.stored = [] if stored is None else stored
        self.answers = answers


@dataclass(slots=True, frozen=True)
class Outgoing:
    """A frame to put on a face now (CRC trailer included where the face wants one)."""

    face: str
    frame: bytes
    kind: FrameKind
    fid: bytes | None = None
    seq: int | None = None
    cnr: int | None = None
    airtime: float = 0.0
