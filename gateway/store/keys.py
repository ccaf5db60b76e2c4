"""The node's own feed key: generated once, kept in a file only its owner can read."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from ..wire.entry import FeedKey
from ..wire.ident import format_id
from .base import StoreError
from .disk import write_atomic

KEY_FILE = "secret.json"


class KeyFileError(StoreError):
    """A key file that is missing, malformed or readable by others."""


def key_path(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / KEY_FILE


def generate_key() -> FeedKey:
    return FeedKey.from_seed(os.urandom(32))


def save_key(path: Path, key: FeedKey) -> None:
    """Write ``key`` to ``path`` (mode 0600, atomically); refuses to overwrite a key."""
    if path.exists():
        raise KeyFileError(f"{path} already exists; refusing to overwrite a key")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    body = {"curve": "ed25519", "id": format_id(key.fid), "seed": key.seed.hex()}
    write_atomic(path, (json.dumps(body, indent=2) + "\n").encode(), durable=True, mode=0o600)


def load_key(path: Path) -> FeedKey:
    """Read a key file, refusing one that group or others can read or write."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise KeyFileError(f"no key file at {path}; run `tinyssb id` to create one") from None
    except PermissionError:
        raise KeyFileError(f"cannot read key file {path}: permission denied") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyFileError(
            f"key file {path} is accessible by others (mode {stat.S_IMODE(st.st_mode):o}); "
            f"run: chmod 600 {path}")
    try:
        body = json.loads(path.read_text())
        key = FeedKey.from_seed(bytes.fromhex(body["seed"]))
    except PermissionError:
        raise KeyFileError(f"cannot read key file {path}: permission denied") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise KeyFileError(f"key file {path} is malformed ({exc})") from None
    if "id" in body and body["id"] != format_id(key.fid):
        raise KeyFileError(f"key file {path}: its id does not match its seed")
    return key


def load_or_create_key(data_dir: str | os.PathLike[str]) -> tuple[FeedKey, bool]:
    """The key in ``data_dir``, created on first use; also says whether it is new."""
    path = key_path(data_dir)
    if path.exists():
        return load_key(path), False
    key = generate_key()
    save_key(path, key)
    return key, True
