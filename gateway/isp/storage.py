"""Where the tinyISP engine keeps its state document and the keys of its feeds.

Two small protocols with an in-memory and an on-disk implementation each:

* :class:`StateStore` holds one document (bytes), replaced as a whole;
* :class:`KeyStore` holds the Ed25519 keys of the feeds the engine writes (control, data
  and c2c feeds: each is a fresh keypair).

The directory implementations write atomically (temporary file, fsync, rename), so a
crash leaves either the old or the new version; the key file is readable by its owner
only (mode 0600, directory 0700).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Protocol

from ..store.disk import write_atomic
from ..wire.entry import FeedKey

__all__ = [
    "DirKeyStore",
    "DirStateStore",
    "KeyStore",
    "KeyStoreError",
    "MemoryKeyStore",
    "MemoryStateStore",
    "StateStore",
]

STATE_FILE = "state.json"
KEYS_FILE = "keys.json"


class KeyStoreError(Exception):
    """A key file that cannot be read, is malformed or is readable by others."""


class StateStore(Protocol):
    def load(self) -> bytes | None:
        """The saved document, None if nothing was saved yet."""

    def save(self, data: bytes) -> None:
        """Replace the document (atomically)."""


class KeyStore(Protocol):
    def get(self, fid: bytes) -> FeedKey | None: ...

    def put(self, key: FeedKey) -> None:
        """Keep ``key``; durable before it returns."""

    def delete(self, fid: bytes) -> None: ...

    def fids(self) -> list[bytes]: ...


class MemoryStateStore:
    """The document in memory (a copy: what the engine holds is never aliased)."""

    def __init__(self) -> None:
        self._data: bytes | None = None
        self.saves = 0

    def load(self) -> bytes | None:
        return self._data

    def save(self, data: bytes) -> None:
        self._data = bytes(data)
        self.saves += 1


class MemoryKeyStore:
    def __init__(self) -> None:
        self._keys: dict[bytes, FeedKey] = {}

    def get(self, fid: bytes) -> FeedKey | None:
        return self._keys.get(fid)

    def put(self, key: FeedKey) -> None:
        self._keys[key.fid] = key

    def delete(self, fid: bytes) -> None:
        self._keys.pop(fid, None)

    def fids(self) -> list[bytes]:
        return sorted(self._keys)


class DirStateStore:
    """``<path>/state.json``, replaced atomically."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.file = self.path / STATE_FILE

    def load(self) -> bytes | None:
        try:
            return self.file.read_bytes()
        except FileNotFoundError:
            return None

    def save(self, data: bytes) -> None:
        write_atomic(self.file, data, durable=True, mode=0o600)


class DirKeyStore:
    """``<path>/keys.json`` (mode 0600): feed id -> Ed25519 seed, rewritten atomically."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.file = self.path / KEYS_FILE
        self._keys = self._read()

    def _read(self) -> dict[bytes, FeedKey]:
        try:
            st = self.file.stat()
        except FileNotFoundError:
            return {}
        if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise KeyStoreError(f"key file {self.file} is accessible by others (mode "
                                f"{stat.S_IMODE(st.st_mode):o}); run: chmod 600 {self.file}")
        try:
            body = json.loads(self.file.read_text())
            keys = {}
            for fid_hex, seed_hex in body["keys"].items():
                key = FeedKey.from_seed(bytes.fromhex(seed_hex))
                if key.fid.hex() != fid_hex:
                    raise ValueError(f"seed of {fid_hex[:16]} gives another key")
                keys[key.fid] = key
        except OSError as exc:
            raise KeyStoreError(f"cannot read key file {self.file}: {exc}") from exc
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise KeyStoreError(f"key file {self.file} is malformed ({exc})") from exc
        return keys

    def _write(self) -> None:
        body = {"keys": {fid.hex(): key.seed.hex() for fid, key in sorted(self._keys.items())}}
        write_atomic(self.file, json.dumps(body, indent=1).encode(), durable=True, mode=0o600)

    def get(self, fid: bytes) -> FeedKey | None:
        return self._keys.get(fid)

    def put(self, key: FeedKey) -> None:
        if self._keys.get(key.fid) == key:
            return
        self._keys[key.fid] = key
        self._write()

    def delete(self, fid: bytes) -> None:
        if self._keys.pop(fid, None) is not None:
            self._write()

    def fids(self) -> list[bytes]:
        return sorted(self._keys)
