"""Feed identities as people see them: ``@<base64>.ed25519`` or 64 hex digits."""

from __future__ import annotations

import base64
import binascii

from .entry import FID_LEN
from .errors import IdentityError

SUFFIX = ".ed25519"
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def format_id(fid: bytes) -> str:
    """The SSB display form of a feed id: ``@`` + standard base64 + ``.ed25519``."""
    if len(fid) != FID_LEN:
        raise IdentityError(f"a feed id is {FID_LEN} bytes, got {len(fid)}")
    return "@" + base64.b64encode(fid).decode("ascii") + SUFFIX


def parse_id(text: str) -> bytes:
    """Parse a feed id given as ``@<base64>.ed25519`` (the ``@`` optional) or 64 hex digits."""
    text = text.strip()
    if len(text) == 2 * FID_LEN and all(c in _HEX_DIGITS for c in text):
        return bytes.fromhex(text)
    body = text.removeprefix("@")
    if body.endswith(SUFFIX):
        try:
            fid = base64.b64decode(body[: -len(SUFFIX)], validate=True)
        except (binascii.Error, ValueError):
            fid = b""
        if len(fid) == FID_LEN:
            return fid
    raise IdentityError(
        f"not a feed id: {text!r} (expected @<base64>.ed25519 or 64 hex digits)")
