"""Feed logs on disk (and in memory for the simulator), and keys."""

from .. import accel as _accel

__path__ = _accel.extend(__path__, __name__)  # compiled modules first, when current

from .base import FeedInfo, FeedStore, LostTailError, StoreError, UnknownFeedError
from .disk import DiskStore, StoreLockedError
from .memory import MemoryStore
from .replica import Frontier, PendingChain, Replica, StoredChunk, StoredEntry

__all__ = [
    "DiskStore", "FeedInfo", "FeedStore", "Frontier", "LostTailError", "MemoryStore", "PendingChain",
    "Replica", "StoreError", "StoreLockedError", "StoredChunk", "StoredEntry",
    "UnknownFeedError",
]
