"""The codec errors of `gateway.wire`.

Every decoder in this package raises only subclasses of :class:`WireError` (itself a
``ValueError``) on malformed input, so callers that handle radio garbage catch one type.
"""


class WireError(ValueError):
    """Malformed or unverifiable bytes."""


class BipfError(WireError):
    """A BIPF value that cannot be decoded (or a value that cannot be encoded)."""


class VarintError(WireError):
    """A truncated or overlong unsigned LEB128 varint."""


class PacketError(WireError):
    """A tinySSB packet (entry, chunk, GOSET, WANT, CHNK) of the wrong shape."""


class SignatureError(PacketError):
    """An entry whose Ed25519 signature does not verify under its feed key."""


class FrameError(WireError):
    """A link frame with a bad CRC32 trailer or broken KISS escaping."""


class IdentityError(WireError):
    """A feed id that is neither ``@<base64>.ed25519`` nor 64 hex digits."""
