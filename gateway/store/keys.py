"""The node's own feed key: generated once, kept in a file only its owner can read."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
from pathlib import Path

from ..wire.entry import FeedKey
from ..wire.ident import format_id
from .base import StoreError
from .disk import write_atomic

log = logging.getLogger(__name__)

KEY_FILE = "secret.json"
OWN_ID_FILE = "own_id"  # public: the id of the feed secret.json signs, to notice its loss


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


def _remember_own_id(data_dir: Path, key: FeedKey) -> None:
    marker = data_dir / OWN_ID_FILE
    text = format_id(key.fid) + "\n"
    with contextlib.suppress(OSError):  # no marker yet (or unreadable): write it
        if marker.read_text() == text:
            return
    try:
        write_atomic(marker, text.encode(), durable=True)
    except OSError as exc:  # a read-only data directory: the key itself is fine
        log.warning("cannot write %s (%s); a lost key file would go unnoticed", marker,
                    exc.strerror)


def load_or_create_key(data_dir: str | os.PathLike[str]) -> tuple[FeedKey, bool]:
    """The key in ``data_dir``, created on first use; also says whether it is new.

    A key file that is gone (or a dangling link) while ``own_id`` shows that this data
    directory had an identity is an error, never a reason to make a new identity: the
    old own feed would lose its author and a new one would start beside it."""
    root = Path(data_dir)
    path = key_path(root)
    if path.is_symlink() and not path.exists():
        raise KeyFileError(f"key file {path} is a link to {os.readlink(path)}, which does not "
                           "exist; restore that file (or remove the link)")
    if path.exists():
        key = load_key(path)
        _remember_own_id(root, key)
        return key, False
    marker = root / OWN_ID_FILE
    if marker.exists():
        try:
            own = marker.read_text().strip()
        except OSError:
            own = "?"
        raise KeyFileError(
            f"key file {path} is missing but this data directory belongs to {own}; restore "
            f"{KEY_FILE} from your backup (to really start a new identity, remove {marker})")
    key = generate_key()
    save_key(path, key)
    _remember_own_id(root, key)
    return key, True
