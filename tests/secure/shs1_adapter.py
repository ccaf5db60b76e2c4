#!/usr/bin/env python3
"""Our SHS client or server on stdin/stdout, as the shs1-test suite drives it.

``shs1_adapter.py client NETWORK_KEY SERVER_PK`` or ``shs1_adapter.py server
NETWORK_KEY SERVER_SK SERVER_PK`` (hex). The suite writes the peer's messages to stdin
and reads ours from stdout; after a good handshake we write the 112-byte outcome
(encryption key and nonce, decryption key and nonce). A bad message: exit 1, silently.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gateway.secure.shs import HandshakeFailed, Identity, ShsClient, ShsServer


def _read(n: int) -> bytes:
    data = b""
    while len(data) < n:
        part = os.read(0, n - len(data))
        if not part:
            sys.exit(1)  # the suite hung up: nothing more to do
        data += part
    return data


def _write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def main(argv: list[str]) -> int:
    role, network_key = argv[0], bytes.fromhex(argv[1])
    if role == "client":
        shs: ShsClient | ShsServer = ShsClient(Identity.from_seed(os.urandom(32)),
                                               bytes.fromhex(argv[2]), network_key)
    else:
        shs = ShsServer(Identity.from_secret(bytes.fromhex(argv[2])), network_key)
    try:
        while not shs.done:
            _write(shs.data_to_send())
            shs.receive_data(_read(shs.expected()))
    except HandshakeFailed as exc:
        print(f"shs1 adapter ({role}): {exc.reason}", file=sys.stderr)
        return 1
    assert shs.session is not None
    _write(shs.data_to_send() + shs.session.outcome())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
