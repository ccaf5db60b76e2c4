"""Wire compatibility of the tinyISP messages with the reference catalogue (tinyisp.md §1).

The expected bytes are built here by a BIPF writer of a dozen lines following the type
table of the format (string 0, bytes 1, list 4, bool/null 6), not by gateway.wire.bipf;
two messages are also spelled out byte by byte.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.isp.messages import (
    Announcement,
    FarewellAck,
    FarewellFin,
    FarewellInit,
    FeedhoppingFin,
    FeedhoppingNext,
    FeedhoppingPrev,
    MessageError,
    OnboardAck,
    OnboardRequest,
    OnboardResponse,
    SubReq,
    SubReqIsp,
    SubResp,
    SubRespIsp,
    ctrl_set_name,
    data_set_name,
    decode_message,
    is_isp_list,
)

# --- an independent BIPF writer ------------------------------------------------------


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def atom(body: bytes, typ: int) -> bytes:
    return varint(len(body) << 3 | typ) + body


def s(text: str) -> bytes:
    return atom(text.encode(), 0)


def b(data: bytes) -> bytes:
    return atom(data, 1)


NULL, TRUE, FALSE = b"\x06", b"\x0e\x01", b"\x0e\x00"


def lst(*items: bytes) -> bytes:
    return atom(b"".join(items), 4)


def isp(kind: str, *args: bytes) -> bytes:
    return lst(s("ISP"), s(kind), *args)


F1, F2, F3 = bytes(range(32)), bytes(range(32, 64)), bytes(range(64, 96))
REF = bytes(range(100, 120))

CATALOGUE = [
    (Announcement(), isp("announcement")),
    (OnboardRequest(F1, F2), isp("onboard_request", b(F1), b(F2))),
    (OnboardResponse(REF, True, F3), isp("onboard_response", b(REF), TRUE, b(F3))),
    (OnboardResponse(REF, False, None), isp("onboard_response", b(REF), FALSE, NULL)),
    (OnboardAck(F1), isp("onboard_ack", b(F1))),
    (FeedhoppingPrev(F2), isp("feedhopping_prev", b(F2))),
    (FeedhoppingPrev(None), isp("feedhopping_prev", NULL)),
    (FeedhoppingNext(F3), isp("feedhopping_next", b(F3))),
    (FeedhoppingNext(None), isp("feedhopping_next", NULL)),
    (FeedhoppingFin(F1), isp("feedhopping_fin", b(F1))),
    (SubReq(F1, F2), isp("sub_req", b(F1), b(F2))),
    (SubReqIsp(REF, F1, F2), isp("sub_req_isp", b(REF), b(F1), b(F2))),
    (SubResp(REF, True, F3), isp("sub_resp", b(REF), TRUE, b(F3))),
    (SubResp(REF, False, None), isp("sub_resp", b(REF), FALSE, NULL)),
    (SubRespIsp(REF, True, F3), isp("sub_resp_isp", b(REF), TRUE, b(F3))),
    (SubRespIsp(REF, False, reason="not_found"),
     isp("sub_resp_isp", b(REF), FALSE, s("not_found"))),
    (SubRespIsp(REF, False, reason="rejected"),
     isp("sub_resp_isp", b(REF), FALSE, s("rejected"))),
    (FarewellInit(), isp("farewell_init")),
    (FarewellAck(), isp("farewell_ack")),
    (FarewellFin(), isp("farewell_fin")),
]


@pytest.mark.parametrize("message,expected", CATALOGUE,
                         ids=[f"{m.kind}-{i}" for i, (m, _) in enumerate(CATALOGUE)])
def test_encoding_matches_the_reference_catalogue(message: object, expected: bytes) -> None:
    assert message.encode() == expected  # type: ignore[attr-defined]
    assert decode_message(expected) == message


def test_two_messages_byte_by_byte() -> None:
    # ["ISP", "farewell_init"]: list of 18 body bytes -> tag 18<<3|4 = 148 = 0x94 0x01
    assert FarewellInit().encode() == bytes.fromhex("9401" "18" "495350" "68") + b"farewell_init"
    # ["ISP", "onboard_ack", fid]: "onboard_ack" is 11 B (tag 0x58); 32 B of bytes -> tag
    # 32<<3|1 = 257 = 0x81 0x02; body 4 + 12 + 34 = 50 -> list tag 50<<3|4 = 404 = 0x94 0x03
    assert OnboardAck(F1).encode() == (bytes.fromhex("9403" "18" "495350" "58")
                                       + b"onboard_ack" + bytes.fromhex("8102") + F1)


def test_set_names_are_the_references() -> None:
    root, cid = bytes([0xAB]) * 32, bytes([0x0C]) * 20
    assert ctrl_set_name(root, cid) == "ctrl" + "ab" * 32 + "0c" * 20
    assert data_set_name(root, cid) == "data" + "ab" * 32 + "0c" * 20


# --- the references' variants ----------------------------------------------------------

def test_two_argument_rejection_kotlin() -> None:
    assert decode_message(isp("onboard_response", b(REF), FALSE)) == \
        OnboardResponse(REF, False, None)


def test_refused_subscription_reasons() -> None:
    missing = decode_message(isp("sub_resp_isp", b(REF), FALSE))
    null = decode_message(isp("sub_resp_isp", b(REF), FALSE, NULL))
    found = decode_message(isp("sub_resp_isp", b(REF), FALSE, s("not_found")))
    assert missing == null == SubRespIsp(REF, False, None, None)
    assert isinstance(found, SubRespIsp) and found.reason == "not_found"
    assert decode_message(isp("sub_resp", b(REF), FALSE)) == SubResp(REF, False, None)


def test_trailing_bytes_after_the_list_are_ignored() -> None:
    assert decode_message(FarewellFin().encode() + b"\x00\x00") == FarewellFin()


@pytest.mark.parametrize("content", [
    isp("onboard_request", b(F1)),  # an argument missing
    isp("onboard_request", b(F1), b(F2), b(F3)),  # one too many
    isp("onboard_request", s("x"), b(F2)),  # a string for a feed id
    isp("onboard_request", b(F1[:31]), b(F2)),  # 31 bytes
    isp("onboard_response", b(REF), TRUE, NULL),  # accepted without a control feed
    isp("onboard_response", b(F1), FALSE, NULL),  # a 32-byte ref
    isp("onboard_response", b(REF), atom(b"\x01", 2), NULL),  # an int for a bool
    isp("sub_resp_isp", b(REF), TRUE, s("not_found")),  # accepted with a reason
    isp("sub_resp_isp", b(REF), FALSE, b(F1)),  # refused with bytes as the reason
    isp("feedhopping_next", s("next")),
    isp("farewell_init", NULL),
    isp("sup_resp", b(REF), TRUE, b(F1)),  # the typo of one intermediate commit
    lst(s("ISP"), atom(b"\x05", 2)),  # a type that is not a string
])
def test_malformed_isp_lists_raise_message_error(content: bytes) -> None:
    assert is_isp_list(content)
    with pytest.raises(MessageError):
        decode_message(content)


@pytest.mark.parametrize("content", [
    b"", b"\x00" * 120, lst(s("ISP")), lst(s("SSB"), s("onboard_ack")), s("ISP"),
    b(b"ISP"), bytes(range(240)),
])
def test_not_an_isp_list(content: bytes) -> None:
    assert not is_isp_list(content)
    assert decode_message(content) is None


fids = st.binary(min_size=32, max_size=32)
refs = st.binary(min_size=20, max_size=20)
messages = st.one_of(
    st.builds(OnboardRequest, fids, fids),
    st.builds(OnboardResponse, refs, st.just(True), fids),
    st.builds(OnboardAck, fids),
    st.builds(FeedhoppingPrev, st.none() | fids),
    st.builds(FeedhoppingNext, st.none() | fids),
    st.builds(FeedhoppingFin, fids),
    st.builds(SubReq, fids, fids),
    st.builds(SubReqIsp, refs, fids, fids),
    st.builds(SubResp, refs, st.just(True), fids),
    st.builds(SubRespIsp, refs, st.just(True), fids),
    st.builds(SubRespIsp, refs, st.just(False), st.none(),
              st.sampled_from(["not_found", "rejected"])),
)


@given(messages)
def test_round_trip(message: object) -> None:
    assert decode_message(message.encode()) == message  # type: ignore[attr-defined]


@given(st.binary(max_size=300))
def test_decoding_garbage_never_raises_anything_else(data: bytes) -> None:
    with contextlib.suppress(MessageError):
        decode_message(data)


@given(messages, st.integers(min_value=0), st.integers(min_value=0, max_value=255))
def test_decoding_damaged_messages_never_raises_anything_else(
        message: object, where: int, value: int) -> None:
    data = bytearray(message.encode())  # type: ignore[attr-defined]
    data[where % len(data)] = value
    with contextlib.suppress(MessageError):
        decode_message(bytes(data))
