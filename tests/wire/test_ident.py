"""Feed identities: ``@<base64>.ed25519`` and 64 hex digits."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.wire.errors import IdentityError, WireError
from gateway.wire.ident import format_id, parse_id

FID = bytes.fromhex("03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8")
FID_B64 = base64.b64encode(FID).decode()

key32 = st.binary(min_size=32, max_size=32)


def test_format_example():
    text = format_id(FID)
    assert text == "@" + FID_B64 + ".ed25519"
    assert text == "@A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg=.ed25519"
    assert len(text) == 1 + 44 + 8


@settings(max_examples=300, deadline=None)
@given(fid=key32)
def test_round_trip(fid):
    text = format_id(fid)
    assert text.startswith("@") and text.endswith(".ed25519")
    assert parse_id(text) == fid
    assert parse_id(text[1:]) == fid  # the @ is optional
    assert parse_id(fid.hex()) == fid
    assert parse_id(fid.hex().upper()) == fid
    assert parse_id("  " + text + "\n") == fid


def test_hex_forms():
    assert parse_id(FID.hex()) == FID
    assert parse_id(FID.hex().upper()) == FID
    mixed = "".join(c.upper() if i % 2 else c for i, c in enumerate(FID.hex()))
    assert parse_id(mixed) == FID


@pytest.mark.parametrize("n", [0, 16, 31, 33])
def test_format_rejects_wrong_length(n):
    with pytest.raises(IdentityError):
        format_id(bytes(n))


MALFORMED = [
    "",
    "@",
    ".ed25519",
    "@.ed25519",
    FID.hex()[:63],                                   # 63 hex digits
    FID.hex() + "0",                                  # 65 hex digits
    FID.hex()[:62],                                   # 31 bytes of hex
    FID.hex()[:-1] + "g",                             # 64 chars, not hex
    "@" + FID.hex() + ".ed25519",                     # hex inside the sigil form
    "@" + FID_B64,                                    # missing suffix
    FID_B64,                                          # bare base64
    "@" + FID_B64 + ".ed25518",                       # wrong suffix
    "@" + FID_B64 + ".ED25519",                       # suffix is case sensitive
    "@" + FID_B64 + ".sha256",
    "@" + FID_B64[:-1] + ".ed25519",                  # missing padding
    "@" + FID_B64[:-2] + "!=" + ".ed25519",           # bad base64 character
    "@" + FID_B64.replace("/", "_") + ".ed25519",     # URL-safe alphabet is not SSB's
    "@" + base64.b64encode(bytes(31)).decode() + ".ed25519",  # 31 bytes
    "@" + base64.b64encode(bytes(33)).decode() + ".ed25519",  # 33 bytes
    "@@" + FID_B64 + ".ed25519",
    "%" + FID_B64 + ".sha256",                        # a message ref, not a feed
]


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_rejected_with_helpful_message(text):
    with pytest.raises(IdentityError) as info:
        parse_id(text)
    assert isinstance(info.value, WireError)
    message = str(info.value)
    assert "@<base64>.ed25519" in message
    assert "64 hex" in message


def test_hex_with_inner_whitespace_rejected():
    """64 characters that ``bytes.fromhex`` accepts but that are not 64 hex digits.

    ``bytes.fromhex`` skips ASCII whitespace, so 62 hex digits with two spaces in the middle
    decode to 31 bytes. A feed id parser must never return anything but 32 bytes.
    """
    for text in ("00" * 15 + "  " + "00" * 16,
                 FID.hex()[:30] + " \t" + FID.hex()[32:],
                 FID.hex()[:28] + "    " + FID.hex()[28:60]):
        assert len(text.strip()) == 64
        try:
            fid = parse_id(text)
        except IdentityError:
            continue
        pytest.fail(f"parse_id({text!r}) returned {len(fid)} bytes instead of raising")


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(
    st.text(max_size=70),
    st.text(alphabet="0123456789abcdefABCDEF \t", min_size=60, max_size=68),
    st.binary(max_size=40).map(lambda b: "@" + base64.b64encode(b).decode() + ".ed25519"),
))
def test_parse_returns_32_bytes_or_raises_identity_error(text):
    try:
        fid = parse_id(text)
    except IdentityError:
        return
    assert isinstance(fid, bytes)
    assert len(fid) == 32
