"""BIPF codec: reference vectors, wire-compat examples, malformed input, round trips."""

from __future__ import annotations

import contextlib
import json
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.wire import bipf
from gateway.wire.errors import BipfError
from tests import vectors as reference_vectors

VECTORS = reference_vectors.PATH
FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _from_json(value: Any) -> Any:
    """Turn a vector's JSON value into the Python value it stands for."""
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    if isinstance(value, dict):
        ((kind, inner),) = value.items()
        if kind == "bytes":
            return bytes.fromhex(inner)
        if kind == "double":
            return float(inner)
        if kind == "dict":
            return {_from_json(k): _from_json(v) for k, v in inner}
        raise AssertionError(f"unknown vector wrapper {kind!r}")
    return value


def typed(value: Any) -> Any:
    """A comparison key that keeps type, float bits and dict order (so 1 != True != 1.0)."""
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    return (type(value).__name__, value)


def _load_vectors() -> list[tuple[str, Any]]:
    data = json.loads(VECTORS.read_text())
    return [(entry["hex"], _from_json(entry["value"])) for entry in data["bipf"]]


REFERENCE = _load_vectors()

# wire-compat.md section 1 ("verified vectors")
WIRE_COMPAT = [
    ("06", None),
    ("0e00", False),
    ("0e01", True),
    ("0a00", 0),
    ("0a7b", 123),
    ("0a85", -123),
    ("0a7f", 127),
    ("128000", 128),
    ("12c800", 200),
    ("0aff", -1),
    ("0a80", -128),
    ("127fff", -129),
    ("12ff00", 255),
    ("120001", 256),
    ("22ffffff7f", 2147483647),
    ("43000000000000f83f", 1.5),
    ("00", ""),
    ("18616263", "abc"),
    ("110102", b"\x01\x02"),
    ("11abcd", b"\xab\xcd"),
    ("04", []),
    ("240a010a02", [1, 2]),
    ("240a7b0e01", [123, True]),
    ("05", {}),
    ("2508610a01", {"a": 1}),
    ("250a7b0e00", {123: False}),
    ("3d11abcd1c0a7b06", {b"\xab\xcd": [123, None]}),
    ("3c0a000a0112c800", [0, 1, 200]),
    ("38c2a5e282ac2421", "¥€$!"),
]


@pytest.mark.parametrize(("hex_", "value"), REFERENCE, ids=[h[:24] for h, _ in REFERENCE])
def test_reference_vectors(hex_: str, value: Any) -> None:
    raw = bytes.fromhex(hex_)
    assert typed(bipf.decode(raw)) == typed(value)
    assert typed(bipf.decode_exact(raw)) == typed(value)
    assert bipf.encode(value).hex() == hex_


def test_reference_vectors_present() -> None:
    if VECTORS.exists():
        assert len(REFERENCE) >= 20


@pytest.mark.parametrize(("hex_", "value"), WIRE_COMPAT, ids=[h for h, _ in WIRE_COMPAT])
def test_wire_compat_vectors(hex_: str, value: Any) -> None:
    assert bipf.encode(value).hex() == hex_
    assert typed(bipf.decode(bytes.fromhex(hex_))) == typed(value)


def test_dict_order_preserved() -> None:
    value = {"z": 1, "a": 2, b"m": 3, 7: None}
    decoded = bipf.decode(bipf.encode(value))
    assert list(decoded) == ["z", "a", b"m", 7]


def test_non_ascii_string_uses_utf8_byte_count() -> None:
    assert bipf.encode("é").hex() == "10c3a9"
    assert bipf.decode(bytes.fromhex("506dc3b674657268656164")) == "möterhead"


def test_js_dialect_four_byte_int() -> None:
    assert bipf.decode(bytes.fromhex("2264000000")) == 100
    assert bipf.decode(bytes.fromhex("2264000000"), unsigned_ints=True) == 100


@pytest.mark.parametrize(
    ("hex_", "signed", "unsigned"),
    [
        ("0ac8", -56, 200),
        ("0a80", -128, 128),
        ("120080", -32768, 32768),
        ("1affffff", -1, 2**24 - 1),
        ("12c800", 200, 200),
        ("0a05", 5, 5),
    ],
)
def test_unsigned_dialect(hex_: str, signed: int, unsigned: int) -> None:
    raw = bytes.fromhex(hex_)
    assert bipf.decode(raw) == signed
    assert bipf.decode(raw, unsigned_ints=True) == unsigned


def test_unsigned_applies_inside_containers() -> None:
    raw = bytes.fromhex("340a0a0ac80a80")  # ESP32-style [10, 200, 128]
    assert bipf.decode(raw, unsigned_ints=True) == [10, 200, 128]
    assert bipf.decode(raw) == [10, -56, -128]


def test_trailing_bytes_ignored_by_decode_rejected_by_decode_exact() -> None:
    raw = bipf.encode([1, 2, 3]) + bytes(20)
    assert bipf.decode(raw) == [1, 2, 3]
    with pytest.raises(BipfError):
        bipf.decode_exact(raw)


def test_decode_at_walks_a_sequence() -> None:
    raw = bipf.encode("a") + bipf.encode([1]) + bipf.encode(None)
    out, pos = [], 0
    while pos < len(raw):
        value, pos = bipf.decode_at(raw, pos)
        out.append(value)
    assert out == ["a", [1], None]
    with pytest.raises(BipfError):
        bipf.decode_at(raw, len(raw) + 1)


def test_accepts_bytearray_and_memoryview() -> None:
    raw = bipf.encode({"k": [b"\x00", 1.25]})
    assert bipf.decode(bytearray(raw)) == bipf.decode(memoryview(raw)) == {"k": [b"\x00", 1.25]}
    assert bipf.encode(bytearray(b"ab")) == bipf.encode(memoryview(b"ab")) == bipf.encode(b"ab")


def test_tuple_encodes_as_list_and_long_tags() -> None:
    assert bipf.encode((1, 2)) == bipf.encode([1, 2])
    big = b"\x55" * 300
    raw = bipf.encode(big)
    assert raw[:2].hex() == "e112"  # varint(300 << 3 | 1)
    assert bipf.decode(raw) == big


@pytest.mark.parametrize(
    "value",
    [2**63, -(2**63) - 1, 2**70, object(), {1, 2}, {(1, 2): 3}, {"k": {1: object()}}],
    ids=["2^63", "-2^63-1", "2^70", "object", "set", "tuple-key", "nested-object"],
)
def test_encode_rejects(value: Any) -> None:
    with pytest.raises(BipfError):
        bipf.encode(value)


def test_encode_int_limits() -> None:
    assert bipf.decode(bipf.encode(2**63 - 1)) == 2**63 - 1
    assert bipf.decode(bipf.encode(-(2**63))) == -(2**63)


def test_encode_rejects_container_keys_and_surrogates() -> None:
    with pytest.raises(BipfError):
        bipf.encode({frozenset(): 1})
    with pytest.raises(BipfError):
        bipf.encode("\ud800")


def test_encode_rejects_cycles_and_depth() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(BipfError):
        bipf.encode(loop)
    nested: Any = []
    for _ in range(bipf.DEFAULT_MAX_DEPTH):
        nested = [nested]
    with pytest.raises(BipfError):
        bipf.encode(nested)
    assert bipf.encode(nested, max_depth=bipf.DEFAULT_MAX_DEPTH + 1)


MALFORMED = {
    "empty": "",
    "truncated-body": "186162",
    "length-beyond-buffer": "2a00",
    "truncated-varint": "80",
    "overlong-varint": "8080808080808080808080",
    "int-length-0": "02",
    "int-length-9": "4a000000000000000000",
    "double-length-4": "2300000000",
    "boolnull-length-2": "160000",
    "bool-byte-2": "0e02",
    "type-7": "07",
    "type-7-with-body": "0f00",
    "bad-utf8": "08ff",
    "surrogate-utf8": "18eda080",
    "child-overruns-list": "0c086100",  # 1-byte list whose child needs 2 bytes
    "child-overruns-list-2": "1418616263",  # 2-byte list holding "abc"
    "child-overruns-dict": "25086112c800",  # 4-byte dict body holding 5 bytes
    "dict-odd": "350a010a020a03",  # three items
    "dict-one-item": "150a01",
    "dict-list-key": "250406",
    "dict-dict-key": "250506",
    "list-truncated": "240a01",
}


@pytest.mark.parametrize("hex_", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed(hex_: str) -> None:
    with pytest.raises(BipfError):
        bipf.decode(bytes.fromhex(hex_))


def _nested_lists(depth: int) -> bytes:
    raw = b"\x04"  # innermost empty list counts as depth 1
    for _ in range(depth - 1):
        raw = bipf.encode_tag(len(raw), bipf.LIST) + raw
    return raw


def test_depth_limit() -> None:
    ok = _nested_lists(bipf.DEFAULT_MAX_DEPTH)
    assert bipf.decode(ok) is not None
    with pytest.raises(BipfError):
        bipf.decode(_nested_lists(bipf.DEFAULT_MAX_DEPTH + 1))
    assert bipf.decode(b"\x06", max_depth=0) is None
    with pytest.raises(BipfError):
        bipf.decode(b"\x04", max_depth=0)


def test_very_deep_nesting_is_bipf_error_not_recursion_error() -> None:
    raw = _nested_lists(5000)
    with pytest.raises(BipfError):
        bipf.decode(raw)
    with pytest.raises(BipfError):  # a chain of list tags whose lengths do not add up
        bipf.decode(b"\x0c" * 3000 + b"\x04", max_depth=10**6)


def test_deep_nesting_decodes_when_allowed() -> None:
    raw = _nested_lists(3000)
    value = bipf.decode(raw, max_depth=3000)
    for _ in range(2999):
        value = value[0]
    assert value == []


def test_size_limit() -> None:
    raw = bipf.encode("x" * 100)
    assert bipf.decode(raw, max_size=len(raw)) == "x" * 100
    with pytest.raises(BipfError):
        bipf.decode(raw, max_size=len(raw) - 1)
    with pytest.raises(BipfError):
        bipf.decode(bipf.encode([b"y" * 100]), max_size=50)


# ------------------------------------------------------------------ property tests

ATOMS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.binary(max_size=20)
)
KEYS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**31), 2**31)
    | st.text(max_size=8)
    | st.binary(max_size=8)
)
VALUES = st.recursive(
    ATOMS,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(KEYS, children, max_size=5),
    max_leaves=20,
)


@FAST
@given(VALUES)
def test_round_trip(value: Any) -> None:
    raw = bipf.encode(value)
    assert typed(bipf.decode_exact(raw)) == typed(value)
    assert bipf.encode(bipf.decode(raw)) == raw


@FAST
@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_unsigned_reading_of_signed_encoding(n: int) -> None:
    assert bipf.decode(bipf.encode(n), unsigned_ints=True) == n


@FAST
@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_unsigned_minimal_encoding_decodes_unsigned(n: int) -> None:
    nbytes = max(1, (n.bit_length() + 7) // 8)
    raw = bipf.encode_tag(nbytes, bipf.INT) + n.to_bytes(nbytes, "little")
    assert bipf.decode(raw, unsigned_ints=True) == n


@FAST
@given(st.binary(max_size=64))
def test_random_bytes_raise_only_bipf_error(raw: bytes) -> None:
    for unsigned in (False, True):
        with contextlib.suppress(BipfError):  # anything else fails the test
            bipf.decode(raw, unsigned_ints=unsigned)


@FAST
@given(VALUES, st.data())
def test_mutated_encodings_raise_only_bipf_error(value: Any, data: st.DataObject) -> None:
    raw = bytearray(bipf.encode(value))
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    with contextlib.suppress(BipfError):  # anything else fails the test
        bipf.decode(bytes(raw[:cut]), max_depth=4)
