"""The `[secure]` table and the `--secure-*` flags: what a person writes, what they get."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.cli import main
from gateway.runtime.config import ConfigError, load_config
from gateway.runtime.secure_config import SecurePeer, parse_secure_peer
from gateway.secure import DEFAULT_NETWORK_KEY
from gateway.wire.entry import FeedKey
from gateway.wire.ident import format_id

A = FeedKey.from_seed(bytes([1]) * 32).fid
B = FeedKey.from_seed(bytes([2]) * 32).fid
NET = bytes(range(32))


def test_a_full_secure_table(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, f"""
[secure]
listen = [8008, "127.0.0.1:9008"]
connect = ["peer.example:8008@{format_id(A)}", "[::1]:7@{B.hex()}"]
network_key = "{NET.hex()}"
allow = ["{format_id(B)}"]
handshake_timeout = 3
"""), required=True)
    sec = cfg.secure
    assert cfg.has_faces() and sec.listen == [("0.0.0.0", 8008), ("127.0.0.1", 9008)]
    assert sec.connect == [SecurePeer("peer.example", 8008, A), SecurePeer("::1", 7, B)]
    assert sec.network_key == NET and sec.handshake_timeout == 3
    assert sec.allowed() == frozenset({A, B})  # those we connect to are allowed too
    sec.check()


def test_defaults_are_the_tinyssb_network_key_and_nobody_allowed(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, "[secure]\nlisten = [8008]\n"), required=True)
    assert cfg.secure.network_key == DEFAULT_NETWORK_KEY
    with pytest.raises(ValueError, match="no peer may connect"):
        cfg.secure.check()
    cfg = load_config(_write(tmp_path, "[secure]\nlisten = [1]\nallow_any = true\n"),
                      required=True)
    assert cfg.secure.allowed() is None
    cfg.secure.check()


@pytest.mark.parametrize("text, expected", [
    ('[secure]\nconnect = ["host:1"]\n', ("gateway.toml:2: secure.connect: expected "
     "HOST:PORT@<peer id>")),
    ('[secure]\n\nallow = ["@nope.ed25519"]\n', "gateway.toml:3: secure.allow: not a feed id"),
    ('[secure]\nnetwork_key = "abcd"\n', ("gateway.toml:2: secure.network_key: a network key "
     "is 32 bytes")),
    ('[secure]\nlisten = [70000]\n', "gateway.toml:2: secure.listen: a port is 0..65535"),
    ('[secure]\nallow_any = 1\n', "gateway.toml:2: secure.allow_any: expected bool"),
    ('[secure]\nkey = ""\n', "gateway.toml:2: secure.key: unknown key 'key'"),
])
def test_mistakes_name_the_line_and_the_key(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, text), required=True)
    assert expected in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("text", ["host:8008", "host@" + "a" * 64, ":8008@x", "h:x@y",
                                  "h:0@" + "a" * 64])
def test_peer_forms_that_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_secure_peer(text)


@pytest.mark.parametrize("argv, expected", [
    (("--secure-listen", "8008"), "no peer may connect; name them with --secure-allow ID"),
    (("--secure-connect", "h:1@bad"), "--secure-connect: 'h:1@bad': not a feed id"),
    (("--secure-listen", "1", "--secure-allow", "x"), "--secure-allow: not a feed id"),
    (("--secure-connect", f"h:1@{A.hex()}", "--network-key", "zz"),
     "--network-key: a network key is 32 bytes"),
])
def test_run_refuses_bad_secure_flags_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...],
        expected: str) -> None:
    assert main(["--data", str(tmp_path / "d"), "run", *argv]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("tinyssb: error:")]
    assert len(lines) == 1 and expected in lines[0], err


def test_network_key_prints_a_fresh_key(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from gateway.secure import parse_network_key

    keys = []
    for _ in range(2):
        assert main(["--data", str(tmp_path), "network-key"]) == 0
        keys.append(parse_network_key(capsys.readouterr().out))
    assert keys[0] != keys[1] and DEFAULT_NETWORK_KEY not in keys
    # a bad key's message names this very command (it once named `tinyssb secure-key`)
    with pytest.raises(ValueError, match="`tinyssb network-key` makes one"):
        parse_network_key("zz")
    from gateway.secure import netkey
    assert "``tinyssb network-key``" in (netkey.__doc__ or "")
    assert "secure-key" not in Path(netkey.__file__).read_text()


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gateway.toml"
    path.write_text(text)
    return path
