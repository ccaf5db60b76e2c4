"""The Secret Handshake between our own client and server, in memory."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.secure import DEFAULT_NETWORK_KEY, SSB_MAIN_NETWORK_KEY, parse_network_key
from gateway.secure.boxstream import BoxDecoder, BoxEncoder
from gateway.secure.netkey import DEFAULT_NETWORK_LABEL, describe_network_key
from gateway.secure.shs import (
    MSG1_LEN,
    MSG2_LEN,
    MSG3_LEN,
    MSG4_LEN,
    HandshakeFailed,
    Identity,
    Phase,
    ShsClient,
    ShsServer,
)

CLIENT = Identity.from_seed(bytes([1]) * 32)
SERVER = Identity.from_seed(bytes([2]) * 32)
NET = bytes(range(32))


def messages(client: ShsClient, server: ShsServer) -> list[bytes]:
    """Run a handshake to the end; the four messages as they went over the wire."""
    m1 = client.data_to_send()
    server.receive_data(m1)
    m2 = server.data_to_send()
    client.receive_data(m2)
    m3 = client.data_to_send()
    server.receive_data(m3)
    m4 = server.data_to_send()
    client.receive_data(m4)
    return [m1, m2, m3, m4]


def pair(**server_kw: object) -> tuple[ShsClient, ShsServer]:
    return (ShsClient(CLIENT, SERVER.public, NET, ephemeral_secret=bytes([3]) * 32),
            ShsServer(SERVER, NET, ephemeral_secret=bytes([4]) * 32, **server_kw))  # type: ignore[arg-type]


def test_a_handshake_authenticates_both_and_agrees_on_keys() -> None:
    client, server = pair()
    wire = messages(client, server)
    assert [len(m) for m in wire] == [MSG1_LEN, MSG2_LEN, MSG3_LEN, MSG4_LEN]
    assert client.done and server.done
    cs, ss = client.session, server.session
    assert cs is not None and ss is not None
    assert cs.peer == SERVER.public and ss.peer == CLIENT.public
    assert (cs.encrypt_key, cs.encrypt_nonce) == (ss.decrypt_key, ss.decrypt_nonce)
    assert (cs.decrypt_key, cs.decrypt_nonce) == (ss.encrypt_key, ss.encrypt_nonce)
    assert cs.encrypt_key != cs.decrypt_key
    # the box streams it sets up carry frames both ways
    frame = bytes(range(120))
    assert BoxDecoder(ss.decrypt_key, ss.decrypt_nonce).receive_data(
        BoxEncoder(cs.encrypt_key, cs.encrypt_nonce).encode(frame)) == [frame]
    assert BoxDecoder(cs.decrypt_key, cs.decrypt_nonce).receive_data(
        BoxEncoder(ss.encrypt_key, ss.encrypt_nonce).encode(frame)) == [frame]


def test_the_same_keys_give_the_same_bytes() -> None:
    assert messages(*pair()) == messages(*pair())


def test_a_wrong_network_key_stops_the_server_at_the_hello() -> None:
    client = ShsClient(CLIENT, SERVER.public, bytes(32))
    server = ShsServer(SERVER, NET)
    with pytest.raises(HandshakeFailed, match="wrong network key"):
        server.receive_data(client.data_to_send())
    assert server.data_to_send() == b"" and server.phase is Phase.FAILED


def test_a_client_expecting_another_server_is_refused() -> None:
    other = Identity.from_seed(bytes([9]) * 32)
    client = ShsClient(CLIENT, other.public, NET)
    server = ShsServer(SERVER, NET)
    server.receive_data(client.data_to_send())
    client.receive_data(server.data_to_send())
    with pytest.raises(HandshakeFailed, match="did not open"):
        server.receive_data(client.data_to_send())
    assert server.data_to_send() == b""


def test_an_identity_off_the_allow_list_gets_no_accept() -> None:
    seen: list[bytes] = []

    def authorize(pk: bytes) -> bool:
        seen.append(pk)
        return False

    client, server = pair(authorize=authorize)
    server.receive_data(client.data_to_send())
    client.receive_data(server.data_to_send())
    with pytest.raises(HandshakeFailed, match="not on the allow-list"):
        server.receive_data(client.data_to_send())
    assert seen == [CLIENT.public] and server.data_to_send() == b""
    assert server.session is None


def test_partial_reads_wait_and_extra_bytes_are_kept_for_the_box_stream() -> None:
    client, server = pair()
    m1 = client.data_to_send()
    server.receive_data(m1[:10])
    assert server.expected() == MSG1_LEN - 10 and server.data_to_send() == b""
    server.receive_data(m1[10:])
    client.receive_data(server.data_to_send())
    server.receive_data(client.data_to_send())
    client.receive_data(server.data_to_send() + b"box stream starts")
    assert client.done and client.rest == b"box stream starts"


@settings(max_examples=80, deadline=None)
@given(which=st.integers(min_value=0, max_value=3), data=st.data())
def test_any_bit_flip_in_any_message_fails_the_handshake(which: int, data: st.DataObject) -> None:
    wire = messages(*pair())  # the same ephemeral keys: the same messages again below
    client, server = pair()
    bit = data.draw(st.integers(min_value=0, max_value=len(wire[which]) * 8 - 1))
    sides = [server, client, server, client]  # who receives message 1, 2, 3, 4
    for i in range(which):
        sides[i].receive_data(wire[i])
    bad = bytearray(wire[which])
    bad[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(HandshakeFailed):
        sides[which].receive_data(bytes(bad))
    assert not sides[which].done
    with pytest.raises(HandshakeFailed, match="already failed"):
        sides[which].receive_data(b"")


def test_identity_from_a_libsodium_secret_key() -> None:
    assert Identity.from_secret(CLIENT.secret) == CLIENT
    with pytest.raises(ValueError, match="does not match"):
        Identity.from_secret(CLIENT.secret[:32] + SERVER.public)


def test_network_keys() -> None:
    import hashlib

    assert DEFAULT_NETWORK_KEY == hashlib.sha256(DEFAULT_NETWORK_LABEL).digest()
    assert DEFAULT_NETWORK_KEY != SSB_MAIN_NETWORK_KEY
    assert parse_network_key(NET.hex()) == NET
    assert parse_network_key("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=") == NET
    with pytest.raises(ValueError, match="64 hex digits or base64"):
        parse_network_key("abcd")
    assert describe_network_key(DEFAULT_NETWORK_KEY) == "the tinySSB default network key"
    assert "main-net" in describe_network_key(SSB_MAIN_NETWORK_KEY)
    assert describe_network_key(NET).startswith("network key ")


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=63), max_size=6),
       extra=st.binary(max_size=40))
def test_handshake_over_any_fragmentation(cuts: list[int], extra: bytes) -> None:
    client, server = pair()

    def deliver(data: bytes, to: ShsClient | ShsServer) -> None:
        edges = sorted({0, len(data), *(c for c in cuts if c < len(data))})
        for a, b in itertools.pairwise(edges):
            to.receive_data(data[a:b])

    deliver(client.data_to_send(), server)
    deliver(server.data_to_send(), client)
    deliver(client.data_to_send(), server)
    deliver(server.data_to_send() + extra, client)
    assert client.done and server.done and client.rest == extra
    assert client.session is not None and server.session is not None
    assert client.session.outcome()[:56] == server.session.outcome()[56:]


@settings(max_examples=60, deadline=None)
@given(junk=st.binary(min_size=1, max_size=300), server_side=st.booleans())
def test_random_bytes_only_ever_fail_the_handshake(junk: bytes, server_side: bool) -> None:
    client, server = pair()
    side: ShsClient | ShsServer = server if server_side else client
    try:
        side.receive_data(junk)
    except HandshakeFailed:
        assert side.phase is Phase.FAILED and not side.done
    else:  # too short to be a whole message yet
        assert len(junk) < MSG1_LEN and side.phase is Phase.HELLO
