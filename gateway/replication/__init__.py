"""Sans-I/O replication: GOSET, WANT/CHNK, faces, policies and the Node that joins them."""

from .. import accel as _accel

__path__ = _accel.extend(__path__, __name__)  # compiled modules first, when current

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
from .faces import Face, FaceKind
from .node import Node, NodeStats
from .policy import DEFAULT, PRESETS, REFERENCE, OffsetStep, Policy, preset

__all__ = [
    "DEFAULT",
    "PRESETS",
    "REFERENCE",
    "ChainComplete",
    "Drop",
    "Event",
    "Face",
    "FaceKind",
    "FeedAdded",
    "FrameKind",
    "NewEntry",
    "Node",
    "NodeStats",
    "OffsetStep",
    "Outgoing",
    "Policy",
    "RxReport",
    "Stored",
    "preset",
]
