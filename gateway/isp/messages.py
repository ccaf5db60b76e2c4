"""tinyISP messages: one dataclass per type, encoded as the reference does.

Every message is the content of one log entry: a flat BIPF list ``["ISP", type, args...]``
(tinyisp.md section 1). Feed ids are raw 32-byte Ed25519 keys, refs the 20-byte message id
of the entry they answer. The type strings and the argument order are those of the
Python ISP and the Kotlin client, byte for byte.

Decoding is tolerant where the references differ: a rejected ``onboard_response`` may
have 2 arguments (Kotlin) or 3 (Python), the reason of a rejected ``sub_resp_isp`` may
be missing or null. :func:`decode_message` returns None for content that is not an ISP
list at all (a tunnelled wire, application data) and raises :class:`MessageError` for an
ISP list it cannot read; it never raises anything else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..wire import bipf
from ..wire.entry import FID_LEN, HASH_LEN
from ..wire.errors import BipfError

__all__ = [
    "REASON_NOT_FOUND",
    "REASON_REJECTED",
    "Announcement",
    "FarewellAck",
    "FarewellFin",
    "FarewellInit",
    "FeedhoppingFin",
    "FeedhoppingNext",
    "FeedhoppingPrev",
    "Message",
    "MessageError",
    "OnboardAck",
    "OnboardRequest",
    "OnboardResponse",
    "SubReq",
    "SubReqIsp",
    "SubResp",
    "SubRespIsp",
    "ctrl_set_name",
    "data_set_name",
    "decode_message",
    "is_isp_list",
    "root_set_name",
]

TAG = "ISP"
REASON_NOT_FOUND = "not_found"
REASON_REJECTED = "rejected"


class MessageError(ValueError):
    """An ``["ISP", ...]`` list of an unknown type or with arguments of the wrong shape."""


def _fid(value: Any) -> bytes:
    if not isinstance(value, bytes) or len(value) != FID_LEN:
        raise MessageError(f"a feed id must be {FID_LEN} bytes, got {value!r:.40}")
    return value


def _opt_fid(value: Any) -> bytes | None:
    return None if value is None else _fid(value)


def _ref(value: Any) -> bytes:
    if not isinstance(value, bytes) or len(value) != HASH_LEN:
        raise MessageError(f"a ref must be {HASH_LEN} bytes, got {value!r:.40}")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise MessageError(f"expected a boolean, got {value!r:.40}")
    return value


def _arity(args: list[Any], lo: int, hi: int, kind: str) -> None:
    if not lo <= len(args) <= hi:
        want = str(lo) if lo == hi else f"{lo}..{hi}"
        raise MessageError(f"{kind} takes {want} arguments, got {len(args)}")


class _Base:
    """Shared codec: a subclass names its type and, in ``shape``, the check of each
    argument, in order; the arguments are its fields, in order."""

    __slots__ = ()
    kind: ClassVar[str]
    shape: ClassVar[tuple[Callable[[Any], Any], ...]] = ()

    def args(self) -> list[Any]:
        names: tuple[str, ...] = type(self).__slots__
        return [getattr(self, name) for name in names]

    def encode(self) -> bytes:
        return bipf.encode([TAG, self.kind, *self.args()])

    @classmethod
    def parse(cls, args: list[Any]) -> Any:
        _arity(args, len(cls.shape), len(cls.shape), cls.kind)
        make: Any = cls
        return make(*(check(value) for check, value in zip(cls.shape, args, strict=True)))


@dataclass(slots=True, frozen=True)
class Announcement(_Base):
    """Defined by the references, never sent by them."""

    kind: ClassVar[str] = "announcement"


@dataclass(slots=True, frozen=True)
class OnboardRequest(_Base):
    """Client root feed: asks ``isp_root`` for a contract; our control feed."""

    kind: ClassVar[str] = "onboard_request"
    shape = (_fid, _fid)
    isp_root: bytes
    client_ctrl: bytes


@dataclass(slots=True, frozen=True)
class OnboardResponse(_Base):
    """ISP root feed: the answer to the request ``ref`` (the contract id).

    Refused, the Python ISP writes ``ref, false, null``, the Kotlin code ``ref, false``;
    both are read.
    """

    kind: ClassVar[str] = "onboard_response"
    ref: bytes
    accepted: bool
    isp_ctrl: bytes | None = None

    def args(self) -> list[Any]:
        return [self.ref, self.accepted, self.isp_ctrl if self.accepted else None]

    @classmethod
    def parse(cls, args: list[Any]) -> OnboardResponse:
        _arity(args, 2, 3, cls.kind)
        ref, accepted = _ref(args[0]), _bool(args[1])
        ctrl = _opt_fid(args[2]) if len(args) == 3 else None
        if accepted and ctrl is None:
            raise MessageError("an accepting onboard_response must name the ISP control feed")
        return cls(ref, accepted, ctrl if accepted else None)


@dataclass(slots=True, frozen=True)
class OnboardAck(_Base):
    """Writer's control feed: its first data feed."""

    kind: ClassVar[str] = "onboard_ack"
    shape = (_fid,)
    data_fid: bytes


@dataclass(slots=True, frozen=True)
class FeedhoppingPrev(_Base):
    """Seq 1 of every data feed: the feed it follows (None for the first one)."""

    kind: ClassVar[str] = "feedhopping_prev"
    shape = (_opt_fid,)
    fid: bytes | None


@dataclass(slots=True, frozen=True)
class FeedhoppingNext(_Base):
    """Last entry of a data feed: the next one (at seq 50), or None: end of data."""

    kind: ClassVar[str] = "feedhopping_next"
    shape = (_opt_fid,)
    fid: bytes | None


@dataclass(slots=True, frozen=True)
class FeedhoppingFin(_Base):
    """Reader's control feed: the peer's data feed it has read completely and dropped."""

    kind: ClassVar[str] = "feedhopping_fin"
    shape = (_fid,)
    fid: bytes


@dataclass(slots=True, frozen=True)
class SubReq(_Base):
    """Requester's control feed: subscribe to ``target_root``; the requester's c2c feed."""

    kind: ClassVar[str] = "sub_req"
    shape = (_fid, _fid)
    target_root: bytes
    c2c: bytes


@dataclass(slots=True, frozen=True)
class SubReqIsp(_Base):
    """ISP control feed of the target's contract: the request ``ref`` of ``requester_root``."""

    kind: ClassVar[str] = "sub_req_isp"
    shape = (_ref, _fid, _fid)
    ref: bytes
    requester_root: bytes
    requester_c2c: bytes


@dataclass(slots=True, frozen=True)
class SubResp(_Base):
    """Responder's control feed: accept (with its c2c feed) or reject the request ``ref``."""

    kind: ClassVar[str] = "sub_resp"
    ref: bytes
    accepted: bool
    c2c: bytes | None = None

    def args(self) -> list[Any]:
        return [self.ref, self.accepted, self.c2c if self.accepted else None]

    @classmethod
    def parse(cls, args: list[Any]) -> SubResp:
        _arity(args, 2, 3, cls.kind)
        ref, accepted = _ref(args[0]), _bool(args[1])
        c2c = _opt_fid(args[2]) if len(args) == 3 and accepted else None
        if accepted and c2c is None:
            raise MessageError("an accepting sub_resp must name the responder's c2c feed")
        return cls(ref, accepted, c2c)


@dataclass(slots=True, frozen=True)
class SubRespIsp(_Base):
    """ISP control feed of the requester's contract: the outcome of the request ``ref``.

    Accepted: the responder's c2c feed in the third position; refused: a reason string
    there instead (``"not_found"`` or ``"rejected"``), which may be missing or null.
    """

    kind: ClassVar[str] = "sub_resp_isp"
    ref: bytes
    accepted: bool
    c2c: bytes | None = None
    reason: str | None = None

    def args(self) -> list[Any]:
        if self.accepted:
            return [self.ref, True, self.c2c]
        return [self.ref, False, self.reason or REASON_REJECTED]

    @classmethod
    def parse(cls, args: list[Any]) -> SubRespIsp:
        _arity(args, 2, 3, cls.kind)
        ref, accepted = _ref(args[0]), _bool(args[1])
        third = args[2] if len(args) == 3 else None
        if accepted:
            c2c = _opt_fid(third)
            if c2c is None:
                raise MessageError("an accepting sub_resp_isp must name the peer's c2c feed")
            return cls(ref, True, c2c)
        if third is not None and not isinstance(third, str):
            raise MessageError("the reason of a refused sub_resp_isp must be a string")
        return cls(ref, False, None, third)


@dataclass(slots=True, frozen=True)
class FarewellInit(_Base):
    kind: ClassVar[str] = "farewell_init"


@dataclass(slots=True, frozen=True)
class FarewellAck(_Base):
    kind: ClassVar[str] = "farewell_ack"


@dataclass(slots=True, frozen=True)
class FarewellFin(_Base):
    kind: ClassVar[str] = "farewell_fin"


Message = (Announcement | OnboardRequest | OnboardResponse | OnboardAck | FeedhoppingPrev
           | FeedhoppingNext | FeedhoppingFin | SubReq | SubReqIsp | SubResp | SubRespIsp
           | FarewellInit | FarewellAck | FarewellFin)

_PARSERS: dict[str, Any] = {cls.kind: cls.parse for cls in (
    Announcement, OnboardRequest, OnboardResponse, OnboardAck, FeedhoppingPrev,
    FeedhoppingNext, FeedhoppingFin, SubReq, SubReqIsp, SubResp, SubRespIsp,
    FarewellInit, FarewellAck, FarewellFin)}


def _isp_list(content: bytes) -> list[Any] | None:
    try:
        value = bipf.decode(content)
    except BipfError:
        return None
    if isinstance(value, list) and len(value) >= 2 and value[0] == TAG:
        return value
    return None


def is_isp_list(content: bytes) -> bool:
    """Does ``content`` decode as a BIPF list starting with ``"ISP"`` and a second item?
    (The references' test for "this is a protocol message, not a tunnelled wire".)"""
    return _isp_list(content) is not None


def decode_message(content: bytes) -> Message | None:
    """The message in an entry's content; None if it is no ISP list at all.

    Raises :class:`MessageError` for an ISP list of an unknown type or with bad arguments.
    """
    value = _isp_list(content)
    if value is None:
        return None
    kind = value[1]
    parse = _PARSERS.get(kind) if isinstance(kind, str) else None
    if parse is None:
        raise MessageError(f"unknown ISP message type {kind!r}")
    message: Message = parse(value[2:])
    return message


def root_set_name(client_root: bytes, isp_root: bytes) -> str:
    """Our local name of the root set {client_root, isp_root} (names never go on the
    wire; the reference calls every root set "tinySSB-0.1 GOset 1")."""
    return "root" + client_root.hex() + isp_root.hex()


def ctrl_set_name(client_root: bytes, contract_id: bytes) -> str:
    """The reference's name of a contract's control set."""
    return "ctrl" + client_root.hex() + contract_id.hex()


def data_set_name(client_root: bytes, contract_id: bytes) -> str:
    """The reference's name of a contract's data set."""
    return "data" + client_root.hex() + contract_id.hex()
