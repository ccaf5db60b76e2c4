"""What every part of the engine works through: the Node, the keys, the state, the clock.

The :class:`Ctx` turns the engine's intentions into Node calls (append a message, read an
entry, hold a feed, delete a feed) and keeps the small derived facts (which bound sets
are installed) that need not be persisted. ``now`` is set by the engine at the start of
every call; nothing here reads a clock.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator

from ..replication.node import Node
from ..store.base import FeedStore, StoreError
from ..wire.entry import Entry, FeedKey, content_of, entry_name, genesis_prev, msg_id_of
from ..wire.errors import WireError
from .messages import Message, MessageError, decode_message
from .model import ContractParams, EngineState, IspError, Role
from .storage import KeyStore

__all__ = ["Ctx", "fid_s"]

log = logging.getLogger(__name__)


def fid_s(fid: bytes | None) -> str:
    """A feed id or ref, shortened for logs."""
    return "-" if fid is None else fid.hex()[:12]


class Ctx:
    def __init__(self, node: Node, root: FeedKey, role: Role, keys: KeyStore,
                 state: EngineState, params: ContractParams,
                 seed_source: Callable[[], bytes] | None) -> None:
        self.node = node
        self.root = root
        self.role = role
        self.keys = keys
        self.state = state
        self.params = params
        self.now = 0.0
        self.dirty = False
        self._seed = seed_source if seed_source is not None else (lambda: os.urandom(32))
        self._sets: dict[str, frozenset[bytes]] = {}

    @property
    def store(self) -> FeedStore:
        return self.node.store

    # --- keys and writing ----------------------------------------------------------
    def new_key(self) -> FeedKey:
        """A fresh keypair for a new feed of ours, durable in the key store at once."""
        seed = self._seed()
        if len(seed) != 32:
            raise ValueError("the seed source must give 32 bytes")
        key = FeedKey.from_seed(seed)
        self.keys.put(key)
        self.dirty = True
        return key

    def key(self, fid: bytes) -> FeedKey:
        key = self.keys.get(fid)
        if key is None:
            raise IspError(f"the key of our feed {fid.hex()} is missing from the tinyISP key "
                           "store; restore keys.json from a backup")
        return key

    def publish(self, fid: bytes, content: bytes) -> Entry:
        """Append ``content`` to our feed ``fid`` (kept out of the global GOSET)."""
        self.dirty = True
        return self.node.publish(self.key(fid), content, self.now, announce=False)

    def send(self, fid: bytes, message: Message) -> Entry:
        log.debug("%s: %s -> %s", self.node.name, message.kind, fid_s(fid))
        return self.publish(fid, message.encode())

    def send_root(self, message: Message) -> Entry:
        """Append ``message`` to our root feed (which stays in the global GOSET)."""
        self.dirty = True
        log.debug("%s: %s -> root", self.node.name, message.kind)
        return self.node.publish(self.root, message.encode(), self.now)

    # --- reading -------------------------------------------------------------------
    def length(self, fid: bytes) -> int:
        replica = self.store.get(fid)
        return 0 if replica is None else replica.max_seq

    def complete(self, fid: bytes, seq: int) -> bool:
        replica = self.store.get(fid)
        return replica is not None and replica.is_complete(seq)

    def content(self, fid: bytes, seq: int) -> bytes | None:
        try:
            return self.store.read_content(fid, seq)
        except (StoreError, WireError) as exc:
            log.warning("%s: cannot read entry %d of %s: %s", self.node.name, seq, fid_s(fid),
                        exc)
            return None

    def wire(self, fid: bytes, seq: int) -> bytes | None:
        """The wire of a complete entry: its packet followed by its chunks in order."""
        if not self.complete(fid, seq):
            return None
        packet = self.store.read_packet(fid, seq)
        if packet is None:
            return None
        parts = [packet]
        while (chunk := self.store.read_chunk(fid, seq, len(parts) - 1)) is not None:
            parts.append(chunk)
        try:
            content_of(packet, parts[1:])  # all chunks there?
        except WireError:
            return None
        return b"".join(parts)

    def mid(self, fid: bytes, seq: int, prev: bytes | None) -> bytes | None:
        """Message id of entry ``seq`` of ``fid``, given the id of entry ``seq - 1``."""
        packet = self.store.read_packet(fid, seq)
        if packet is None:
            return None
        back = genesis_prev(fid) if seq == 1 or prev is None else prev
        return msg_id_of(entry_name(fid, seq, back), packet)

    def messages(self, fid: bytes) -> Iterator[tuple[int, bytes, Message | None]]:
        """(seq, message id, message or None) of every complete entry of ``fid``, in
        order: how a handler finds out whether it wrote its answer already (a restart
        between appending and saving the state replays the handler)."""
        prev: bytes | None = None
        for seq in range(1, self.length(fid) + 1):
            mid = self.mid(fid, seq, prev)
            if mid is None:
                return
            prev = mid
            content = self.content(fid, seq) if self.complete(fid, seq) else None
            try:
                msg = decode_message(content) if content is not None else None
            except MessageError:
                msg = None
            yield seq, mid, msg

    # --- holding and deleting feeds ----------------------------------------------------
    def discard(self, fid: bytes | None) -> None:
        """Delete ``fid`` (and our key of it) once the state that no longer needs it is
        saved."""
        if fid is not None and fid not in self.state.trash:
            self.state.trash.append(fid)
            self.dirty = True

    def empty_trash(self) -> None:
        for fid in self.state.trash:
            try:
                self.node.forget(fid)
            except ValueError:  # it is in the global GOSET as well: it stays
                log.warning("%s: feed %s is in the global GOSET; not deleting it",
                            self.node.name, fid_s(fid))
            self.keys.delete(fid)
        self.state.trash.clear()

    # --- bound sets --------------------------------------------------------------------
    def sync_sets(self, wanted: dict[str, frozenset[bytes]]) -> None:
        """Install ``wanted`` (name -> keys) as the Node's tinyISP bound sets."""
        for name in [n for n in self._sets if n not in wanted]:
            self.node.drop_set(name)
            del self._sets[name]
        for name, keys in wanted.items():
            if self._sets.get(name) != keys:
                self.node.set_keys(name, keys, self.now)
                self._sets[name] = keys
