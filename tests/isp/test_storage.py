"""The state document and the key store: round trips, atomic files, owner-only keys."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gateway.isp import DirKeyStore, DirStateStore, KeyStoreError, StateError
from gateway.isp.model import (
    ClientSub,
    Contract,
    ContractParams,
    Cursor,
    EngineState,
    Incoming,
    IspSub,
    Phase,
    Reader,
    Role,
    Writer,
)
from gateway.wire.entry import FeedKey


def fid(n: int) -> bytes:
    return bytes([n]) * 32


def ref(n: int) -> bytes:
    return bytes([n]) * 20


def full_state() -> EngineState:
    c = Contract(ref(1), fid(1), fid(2), Phase.FAREWELL, fid(3), fid(4), Cursor(7, ref(7)),
                 Writer([fid(5), fid(6)], [(fid(7), 3), None], closed=True),
                 Reader(fid(8), 12, fid(9), False, {b"\x01" * 7: b"\x02" * 240}),
                 fin_sent=True, terminate_at=12.5,
                 subs={ref(2): ClientSub(ref(2), fid(10), fid(11), fid(12), 4, 5),
                       ref(3): ClientSub(ref(3), fid(13), fid(14))},
                 incoming={ref(4): Incoming(ref(4), fid(15), fid(16))})
    st = EngineState(Role.CLIENT, fid(1), [fid(20)], {fid(2): Cursor(3, ref(9)), fid(21): Cursor()},
                     {c.cid: c}, {ref(5): IspSub(ref(5), fid(22), fid(23), fid(24), None, 1, 2)},
                     [fid(25)], [fid(26)])
    st.set_outcome(ref(6), "not_found")
    return st


def test_state_round_trip() -> None:
    st = full_state()
    again = EngineState.load(st.dump())
    assert again == st
    assert again.dump() == st.dump()


def test_state_feeds_lists_every_contract_feed() -> None:
    assert full_state().feeds() == {fid(n) for n in (3, 4, 5, 6, 8, 11, 12, 14, 23, 25, 26)}


@pytest.mark.parametrize("data", [b"{", b"[]", b'{"version": 1}', b'{"version": 99}'])
def test_unreadable_state_is_one_clear_error(data: bytes) -> None:
    with pytest.raises(StateError, match="tinyISP state"):
        EngineState.load(data)


def test_outcomes_are_bounded() -> None:
    st = EngineState(Role.ISP, fid(1))
    for n in range(200):
        st.set_outcome(n.to_bytes(20, "big"), "accepted")
    assert len(st.outcomes) == 64
    assert (199).to_bytes(20, "big") in st.outcomes


def test_contract_params_are_checked() -> None:
    assert ContractParams().feed_size == 50 and ContractParams().max_feeds == 3
    for bad in ({"feed_size": 2}, {"max_feeds": 1}, {"farewell_delay": -1.0}):
        with pytest.raises(ValueError):
            ContractParams(**bad)  # type: ignore[arg-type]


def test_dir_state_store(tmp_path: Path) -> None:
    store = DirStateStore(tmp_path / "isp")
    assert store.load() is None
    store.save(b"one")
    store.save(b"two")
    assert DirStateStore(tmp_path / "isp").load() == b"two"
    assert sorted(os.listdir(tmp_path / "isp")) == ["state.json"]  # no temporary left
    assert stat.S_IMODE(os.stat(tmp_path / "isp" / "state.json").st_mode) == 0o600


def test_dir_key_store(tmp_path: Path) -> None:
    keys = DirKeyStore(tmp_path / "k")
    k1, k2 = FeedKey.from_seed(b"\x01" * 32), FeedKey.from_seed(b"\x02" * 32)
    keys.put(k1)
    keys.put(k2)
    keys.delete(k1.fid)
    path = tmp_path / "k" / "keys.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = DirKeyStore(tmp_path / "k")
    assert again.fids() == [k2.fid] and again.get(k2.fid) == k2 and again.get(k1.fid) is None


def test_dir_key_store_refuses_a_file_others_can_read(tmp_path: Path) -> None:
    DirKeyStore(tmp_path).put(FeedKey.from_seed(b"\x01" * 32))
    (tmp_path / "keys.json").chmod(0o644)
    with pytest.raises(KeyStoreError, match="chmod 600"):
        DirKeyStore(tmp_path)


def test_dir_key_store_refuses_a_seed_that_does_not_match(tmp_path: Path) -> None:
    (tmp_path / "keys.json").write_text('{"keys": {"' + "00" * 32 + '": "' + "11" * 32 + '"}}')
    (tmp_path / "keys.json").chmod(0o600)
    with pytest.raises(KeyStoreError, match="malformed"):
        DirKeyStore(tmp_path)
