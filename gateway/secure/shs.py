"""The Secret Handshake (SHS, version 1), sans-I/O: bytes in, bytes out.

Four messages (the Scuttlebutt protocol guide, section "Handshake"):

1. client hello, 64 B: ``auth(client_ephemeral_pk, K) || client_ephemeral_pk``
2. server hello, 64 B: ``auth(server_ephemeral_pk, K) || server_ephemeral_pk``
3. client authenticate, 112 B: a secret box (zero nonce, key ``sha256(K || ab || aB)``)
   around ``sig_A || client_longterm_pk``, where ``sig_A`` signs
   ``K || server_longterm_pk || sha256(ab)``
4. server accept, 80 B: a secret box (zero nonce, key ``sha256(K || ab || aB || Ab)``)
   around ``sig_B``, which signs ``K || sig_A || client_longterm_pk || sha256(ab)``

``K`` is the network key, ``auth`` is HMAC-SHA-512-256 (libsodium's ``crypto_auth``),
``ab``/``aB``/``Ab`` are the Curve25519 shared secrets of the ephemeral and long-term
keys (long-term Ed25519 keys converted to Curve25519). Afterwards both ends derive the
two box-stream keys ``sha256(sha256(sha256(K || ab || aB || Ab)) || receiver's
long-term pk)`` and starting nonces (the first 24 bytes of the receiver's hello HMAC).

:class:`ShsClient` and :class:`ShsServer` take whatever bytes arrived
(:meth:`~_Handshake.receive_data`) and say what to send
(:meth:`~_Handshake.data_to_send`). A message that does not verify raises
:class:`HandshakeFailed` with a one-line reason; the handshake object is then dead. A
server stays silent after a bad message, as SHS requires: the caller just closes.
Bytes that arrive after the last handshake message are kept in :attr:`~_Handshake.rest`
for the box stream.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from nacl.bindings import (
    crypto_box_keypair,
    crypto_scalarmult,
    crypto_scalarmult_base,
    crypto_secretbox,
    crypto_secretbox_open,
    crypto_sign,
    crypto_sign_ed25519_pk_to_curve25519,
    crypto_sign_ed25519_sk_to_curve25519,
    crypto_sign_open,
    crypto_sign_seed_keypair,
)
from nacl.exceptions import CryptoError

__all__ = [
    "MSG1_LEN",
    "MSG2_LEN",
    "MSG3_LEN",
    "MSG4_LEN",
    "HandshakeFailed",
    "Identity",
    "Phase",
    "Session",
    "ShsClient",
    "ShsServer",
    "auth",
]

MSG1_LEN = 64  # client hello
MSG2_LEN = 64  # server hello
MSG3_LEN = 112  # client authenticate: 16 B MAC + 64 B signature + 32 B public key
MSG4_LEN = 80  # server accept: 16 B MAC + 64 B signature
KEY_LEN = 32
NONCE_LEN = 24
_ZERO_NONCE = bytes(NONCE_LEN)


def auth(message: bytes, key: bytes) -> bytes:
    """libsodium's ``crypto_auth``: HMAC-SHA-512 truncated to 32 bytes."""
    return hmac.digest(key, message, "sha512")[:32]


def _sha256(*parts: bytes) -> bytes:
    return hashlib.sha256(b"".join(parts)).digest()


def _sign(message: bytes, secret: bytes) -> bytes:
    return crypto_sign(message, secret)[:64]


def _verify(signature: bytes, message: bytes, public: bytes) -> bool:
    try:
        crypto_sign_open(signature + message, public)
    except CryptoError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Identity:
    """A long-term Ed25519 key pair: ``public`` (32 B) and libsodium's ``secret`` (64 B)."""

    public: bytes
    secret: bytes

    @classmethod
    def from_seed(cls, seed: bytes) -> Identity:
        if len(seed) != 32:
            raise ValueError(f"an Ed25519 seed is 32 bytes, got {len(seed)}")
        public, secret = crypto_sign_seed_keypair(bytes(seed))
        return cls(public, secret)

    @classmethod
    def from_secret(cls, secret: bytes) -> Identity:
        """From libsodium's 64-byte secret key (seed followed by the public key)."""
        if len(secret) != 64:
            raise ValueError(f"an Ed25519 secret key is 64 bytes, got {len(secret)}")
        identity = cls.from_seed(secret[:32])
        if identity.secret != secret:
            raise ValueError("the secret key's public half does not match its seed")
        return identity


@dataclass(frozen=True, slots=True)
class Session:
    """What a completed handshake gives the box streams, and whom it authenticated."""

    peer: bytes  # the other end's long-term Ed25519 public key
    encrypt_key: bytes
    encrypt_nonce: bytes
    decrypt_key: bytes
    decrypt_nonce: bytes

    def outcome(self) -> bytes:
        """The 112 bytes the shs1-test suite expects: keys and nonces, ours first."""
        return self.encrypt_key + self.encrypt_nonce + self.decrypt_key + self.decrypt_nonce


class HandshakeFailed(Exception):
    """The peer's message did not verify; ``reason`` is one line for the log."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Phase(Enum):
    HELLO = "hello"  # waiting for the peer's hello
    AUTHENTICATE = "authenticate"  # server: waiting for msg3
    ACCEPT = "accept"  # client: waiting for msg4
    DONE = "done"
    FAILED = "failed"


def _ephemeral(secret: bytes | None) -> tuple[bytes, bytes]:
    """A fresh Curve25519 key pair, or the one of the given secret (tests)."""
    if secret is None:
        return crypto_box_keypair()
    if len(secret) != KEY_LEN:
        raise ValueError(f"an ephemeral secret is {KEY_LEN} bytes, got {len(secret)}")
    return crypto_scalarmult_base(secret), secret


class _Handshake(ABC):
    """What both ends share: the buffer, the hello messages, the phase and the result."""

    def __init__(self, identity: Identity, network_key: bytes,
                 ephemeral_secret: bytes | None) -> None:
        if len(network_key) != KEY_LEN:
            raise ValueError(f"a network key is {KEY_LEN} bytes, got {len(network_key)}")
        self.identity = identity
        self.network_key = bytes(network_key)
        self.ephemeral_pk, self._ephemeral_sk = _ephemeral(ephemeral_secret)
        self.phase = Phase.HELLO
        self.session: Session | None = None
        self.failure: str | None = None
        self._in = bytearray()
        self._out = bytearray()
        self._peer_ephemeral = b""

    @property
    def done(self) -> bool:
        return self.phase is Phase.DONE

    @property
    def rest(self) -> bytes:
        """Bytes received after the handshake's last message (the box stream's start)."""
        return bytes(self._in) if self.phase is Phase.DONE else b""

    def data_to_send(self) -> bytes:
        out = bytes(self._out)
        self._out.clear()
        return out

    def expected(self) -> int:
        """How many more bytes the current message needs (0 when none is awaited)."""
        need = self._need()
        return max(0, need - len(self._in)) if need else 0

    @abstractmethod
    def _need(self) -> int:
        """The length of the message awaited in the current phase."""

    @abstractmethod
    def _step(self, message: bytes) -> None:
        """Verify one whole message and queue the answer; HandshakeFailed if it is bad."""

    def receive_data(self, data: bytes) -> None:
        """Take bytes from the peer; :class:`HandshakeFailed` if a message is bad."""
        if self.phase is Phase.FAILED:
            raise HandshakeFailed(f"handshake already failed: {self.failure}")
        self._in += data
        while self.phase is not Phase.DONE:
            need = self._need()
            if len(self._in) < need:
                return
            message = bytes(self._in[:need])
            del self._in[:need]
            try:
                self._step(message)
            except HandshakeFailed as exc:
                self.phase = Phase.FAILED
                self.failure = exc.reason
                self._in.clear()
                self._out.clear()
                raise

    # --- the parts both ends compute alike ------------------------------------------
    def _hello(self) -> bytes:
        return auth(self.ephemeral_pk, self.network_key) + self.ephemeral_pk

    def _check_hello(self, message: bytes, who: str) -> None:
        mac, ephemeral = message[:32], message[32:]
        if not hmac.compare_digest(mac, auth(ephemeral, self.network_key)):
            raise HandshakeFailed(f"{who} hello failed authentication (wrong network key?)")
        self._peer_ephemeral = ephemeral

    def _scalarmult(self, secret: bytes, public: bytes, what: str) -> bytes:
        try:
            return crypto_scalarmult(secret, public)
        except CryptoError:
            raise HandshakeFailed(f"unusable {what} (low-order point)") from None

    def _finish(self, peer: bytes, key_hash: bytes, client_ephemeral: bytes,
                server_ephemeral: bytes, *, client: bool) -> None:
        """The box-stream keys from ``key_hash`` = ``sha256(sha256(K||ab||aB||Ab))``."""
        client_pk, server_pk = (self.identity.public, peer) if client else (
            peer, self.identity.public)
        to_server = (_sha256(key_hash, server_pk),
                     auth(server_ephemeral, self.network_key)[:NONCE_LEN])
        to_client = (_sha256(key_hash, client_pk),
                     auth(client_ephemeral, self.network_key)[:NONCE_LEN])
        (ek, en), (dk, dn) = (to_server, to_client) if client else (to_client, to_server)
        self.session = Session(peer, ek, en, dk, dn)
        self.phase = Phase.DONE


class ShsClient(_Handshake):
    """The connecting end: knows the server's long-term key; sends the client hello now."""

    def __init__(self, identity: Identity, server_pk: bytes, network_key: bytes, *,
                 ephemeral_secret: bytes | None = None) -> None:
        super().__init__(identity, network_key, ephemeral_secret)
        if len(server_pk) != KEY_LEN:
            raise ValueError(f"a server key is {KEY_LEN} bytes, got {len(server_pk)}")
        self.server_pk = bytes(server_pk)
        try:
            self._server_curve = crypto_sign_ed25519_pk_to_curve25519(self.server_pk)
        except CryptoError:
            raise ValueError("the server key is not a valid Ed25519 public key") from None
        self._ab = self._aB = self._sig_a = b""
        self._out += self._hello()

    def _need(self) -> int:
        return MSG2_LEN if self.phase is Phase.HELLO else MSG4_LEN

    def _step(self, message: bytes) -> None:
        if self.phase is Phase.HELLO:
            self._check_hello(message, "server")
            self._ab = self._scalarmult(self._ephemeral_sk, self._peer_ephemeral,
                                        "server ephemeral key")
            self._aB = self._scalarmult(self._ephemeral_sk, self._server_curve, "server key")
            self._sig_a = _sign(self.network_key + self.server_pk + _sha256(self._ab),
                                self.identity.secret)
            box_key = _sha256(self.network_key, self._ab, self._aB)
            self._out += crypto_secretbox(self._sig_a + self.identity.public, _ZERO_NONCE,
                                          box_key)
            self.phase = Phase.ACCEPT
            return
        own_curve = crypto_sign_ed25519_sk_to_curve25519(self.identity.secret)
        a_b = self._scalarmult(own_curve, self._peer_ephemeral, "server ephemeral key")
        box_key = _sha256(self.network_key, self._ab, self._aB, a_b)
        try:
            sig_b = crypto_secretbox_open(message, _ZERO_NONCE, box_key)
        except CryptoError:
            raise HandshakeFailed("server accept did not open (server not who we "
                                  "expected, or tampered)") from None
        signed = self.network_key + self._sig_a + self.identity.public + _sha256(self._ab)
        if len(sig_b) != 64 or not _verify(sig_b, signed, self.server_pk):
            raise HandshakeFailed("server accept carries a bad signature")
        self._finish(self.server_pk, _sha256(box_key), self.ephemeral_pk,
                     self._peer_ephemeral, client=True)


class ShsServer(_Handshake):
    """The listening end: learns the client's long-term key from msg3.

    ``authorize`` decides whether that key may connect (the allow-list); it is asked
    after the client proved the key and before the server accepts, so a refused client
    learns nothing but a closed connection.
    """

    def __init__(self, identity: Identity, network_key: bytes, *,
                 authorize: Callable[[bytes], bool] | None = None,
                 ephemeral_secret: bytes | None = None) -> None:
        super().__init__(identity, network_key, ephemeral_secret)
        self._authorize = authorize
        self._ab = self._aB = b""

    def _need(self) -> int:
        return MSG1_LEN if self.phase is Phase.HELLO else MSG3_LEN

    def _step(self, message: bytes) -> None:
        if self.phase is Phase.HELLO:
            self._check_hello(message, "client")
            self._ab = self._scalarmult(self._ephemeral_sk, self._peer_ephemeral,
                                        "client ephemeral key")
            own_curve = crypto_sign_ed25519_sk_to_curve25519(self.identity.secret)
            self._aB = self._scalarmult(own_curve, self._peer_ephemeral,
                                        "client ephemeral key")
            self._out += self._hello()
            self.phase = Phase.AUTHENTICATE
            return
        box_key = _sha256(self.network_key, self._ab, self._aB)
        try:
            plain = crypto_secretbox_open(message, _ZERO_NONCE, box_key)
        except CryptoError:
            raise HandshakeFailed("client authenticate did not open (client does not "
                                  "know our identity, or tampered)") from None
        sig_a, client_pk = plain[:64], plain[64:]
        signed = self.network_key + self.identity.public + _sha256(self._ab)
        if len(plain) != 96 or not _verify(sig_a, signed, client_pk):
            raise HandshakeFailed("client authenticate carries a bad signature")
        try:
            client_curve = crypto_sign_ed25519_pk_to_curve25519(client_pk)
        except CryptoError:
            raise HandshakeFailed("client key is not a valid Ed25519 key") from None
        if self._authorize is not None and not self._authorize(client_pk):
            shown = base64.b64encode(client_pk).decode()
            raise HandshakeFailed(f"identity @{shown}.ed25519 is not on the allow-list")
        a_b = self._scalarmult(self._ephemeral_sk, client_curve, "client key")
        accept_key = _sha256(self.network_key, self._ab, self._aB, a_b)
        sig_b = _sign(self.network_key + sig_a + client_pk + _sha256(self._ab),
                      self.identity.secret)
        self._out += crypto_secretbox(sig_b, _ZERO_NONCE, accept_key)
        self._finish(client_pk, _sha256(accept_key), self._peer_ephemeral,
                     self.ephemeral_pk, client=False)
