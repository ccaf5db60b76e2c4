"""tinyISP on a data directory: the engine's files, its role, and the requests of
``tinyssb isp``, ``tinyssb send`` and ``tinyssb inbox``.

The engine (``gateway.isp``) is sans-I/O; this module gives it its home:
``DATA/isp/role`` (``isp`` or ``client``, fixed by the first command that needs one),
``DATA/isp/state`` (the contract state document) and ``DATA/isp/keys`` (the keys of
the contract's feeds, owner-only). The same request handler serves the running
gateway's control socket and the CLI working on a stopped gateway's directory.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from dataclasses import asdict, is_dataclass, replace
from pathlib import Path
from typing import Any

from ..isp import DirKeyStore, DirStateStore, IspEngine, IspError, Role
from ..isp.engine import DEFAULT_PARAMS
from ..replication.node import Node
from ..store.disk import write_atomic
from ..wire.entry import FeedKey
from ..wire.ident import format_id, parse_id

__all__ = ["ISP_DIR", "IspService", "RoleError", "goset_filter", "read_role", "write_role"]

log = logging.getLogger("tinyssb.isp")

ISP_DIR = "isp"
ROLE_FILE = "role"
_MAX_SETTLE = 1000  # event rounds after one request; an engine that never settles is a bug


class RoleError(Exception):
    """The data directory has the other role already."""


def isp_dir(data_dir: Path) -> Path:
    return data_dir / ISP_DIR


def read_role(data_dir: Path) -> Role | None:
    path = isp_dir(data_dir) / ROLE_FILE
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    try:
        return Role(text)
    except ValueError:
        raise RoleError(f"{path} says {text!r}; it should say isp or client") from None


def write_role(data_dir: Path, role: Role) -> None:
    """Fix the role of ``data_dir`` (RoleError if it has the other one)."""
    old = read_role(data_dir)
    if old is role:
        return
    if old is not None:
        raise RoleError(f"{data_dir} is a tinyISP {old.value} already, not a {role.value}; "
                        "use another --data directory")
    isp_dir(data_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(isp_dir(data_dir) / ROLE_FILE, role.value.encode() + b"\n")


def _stores(data_dir: Path) -> tuple[DirStateStore, DirKeyStore]:
    root = isp_dir(data_dir)
    return DirStateStore(root / "state"), DirKeyStore(root / "keys")


def goset_filter(data_dir: Path) -> Callable[[bytes], bool] | None:
    """Which stored feeds may join the GOSET: none of a contract's own feeds."""
    if read_role(data_dir) is None:
        return None
    private = IspEngine.private_feeds(*_stores(data_dir))
    return lambda fid: fid not in private


def _plain(value: Any) -> Any:
    """Dataclasses, bytes and enums as JSON values (ids as tinySSB ids, refs as hex)."""
    if is_dataclass(value) and not isinstance(value, type):
        return _plain(asdict(value))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return format_id(value) if len(value) == 32 else value.hex()
    if hasattr(value, "value") and not isinstance(value, (int, float, str, bool)):
        return _plain(value.value)
    return value


class IspService:
    """The engine on a Node and a data directory, and its request handler."""

    def __init__(self, node: Node, key: FeedKey, data_dir: Path, role: Role,
                 now: float, *, farewell_timeout: float = DEFAULT_PARAMS.farewell_timeout
                 ) -> None:
        write_role(data_dir, role)
        self.node = node
        self.role = role
        state, keys = _stores(data_dir)
        params = replace(DEFAULT_PARAMS, farewell_timeout=farewell_timeout)
        self.engine = IspEngine(node, key, role, state, keys, now, params=params)

    def settle(self, events: list[Any], now: float) -> list[Any]:
        """Hand ``events`` and whatever the engine's own appends cause to the engine;
        every event handled, for the caller's logs and counters."""
        seen = list(events)
        for _ in range(_MAX_SETTLE):
            if events:
                try:
                    self.engine.on_events(events, now)
                except IspError as exc:  # local damage (a key gone): say so, keep serving
                    log.error("tinyISP: %s", exc)
            events = self.node.drain_events()
            if not events:
                return seen
            seen.extend(events)
        log.warning("tinyISP: still appending after %d rounds", _MAX_SETTLE)
        return seen

    def timer(self, now: float) -> None:
        due = self.engine.next_deadline()
        if due is not None and due <= now:
            try:
                self.engine.on_timer(now)
            except IspError as exc:
                log.error("tinyISP: %s", exc)

    def next_deadline(self) -> float | None:
        return self.engine.next_deadline()

    # --- requests --------------------------------------------------------------------
    def handle(self, req: dict[str, Any], now: float) -> dict[str, Any]:
        """One ``tinyssb isp ...`` request; IspError for a request that cannot be done."""
        op = str(req.get("op", ""))
        handler = _OPS.get(op)
        if handler is None:
            raise IspError(f"unknown tinyISP request {op!r}; known: {', '.join(sorted(_OPS))}")
        role, func = handler
        if role is not None and role is not self.role:
            raise IspError(f"`tinyssb isp {op}` is for a tinyISP {role.value}; this data "
                           f"directory is a {self.role.value}")
        answer = func(self, req, now)
        self.settle([], now)
        return {"ok": True, **_plain(answer)}

    def _peer(self, req: dict[str, Any]) -> bytes:
        try:
            return parse_id(str(req["peer"]))
        except (KeyError, ValueError) as exc:
            raise IspError(f"not a feed id: {req.get('peer')!r} ({exc})") from None

    @staticmethod
    def _ref(req: dict[str, Any]) -> bytes:
        text = str(req.get("ref", ""))
        try:
            ref = bytes.fromhex(text)
        except ValueError:
            ref = b""
        if len(ref) != 20:
            raise IspError(f"not a request reference: {text!r}; `tinyssb isp requests` "
                           "lists them (40 hex digits)")
        return ref

    def _allow(self, req: dict[str, Any], now: float) -> dict[str, Any]:
        peer = self._peer(req)
        self.engine.allow(peer)
        self.engine.follow(peer, now)
        return {"allowed": peer}

    def _contracts(self, _req: dict[str, Any], _now: float) -> dict[str, Any]:
        allow = list(self.engine.allow_list) if self.role is Role.ISP else []
        ended = [{"id": ref, "outcome": how} for ref, how in self.engine.ended()]
        return {"role": self.role.value, "contracts": self.engine.contracts(), "allow": allow,
                "ended": ended}

    def _farewell(self, req: dict[str, Any], now: float) -> dict[str, Any]:
        peer = self._peer(req)
        self.engine.farewell(peer, now)
        return {"farewell": peer}

    def _onboard(self, req: dict[str, Any], now: float) -> dict[str, Any]:
        return {"contract": self.engine.onboard(self._peer(req), now)}

    def _subscribe(self, req: dict[str, Any], now: float) -> dict[str, Any]:
        return {"ref": self.engine.subscribe(self._peer(req), now)}

    def _requests(self, _req: dict[str, Any], _now: float) -> dict[str, Any]:
        return {"requests": self.engine.requests(),
                "subscriptions": self.engine.subscriptions(),
                "asked": self.engine.asked()}

    def _accept(self, req: dict[str, Any], now: float) -> dict[str, Any]:
        ref = self._ref(req)
        self.engine.accept(ref, now)
        return {"accepted": ref}

    def _reject(self, req: dict[str, Any], now: float) -> dict[str, Any]:
        ref = self._ref(req)
        self.engine.reject(ref, now)
        return {"rejected": ref}

    def _leave(self, _req: dict[str, Any], now: float) -> dict[str, Any]:
        self.engine.leave(now)
        return {"leaving": True}

    def _send(self, req: dict[str, Any], now: float) -> dict[str, Any]:
        try:
            content = base64.b64decode(str(req["content"]), validate=True)
        except (KeyError, ValueError):
            raise IspError("a send request carries base64 content") from None
        peer = self._peer(req)
        self.engine.send(peer, content, now)
        return {"sent": len(content), "peer": peer}

    def _inbox(self, _req: dict[str, Any], _now: float) -> dict[str, Any]:
        return {"messages": [{**_plain(m), "content": base64.b64encode(m.content).decode()}
                             for m in self.engine.inbox()]}


_Op = Callable[[IspService, dict[str, Any], float], dict[str, Any]]
_OPS: dict[str, tuple[Role | None, _Op]] = {
    "allow": (Role.ISP, IspService._allow),
    "contracts": (None, IspService._contracts),
    "farewell": (Role.ISP, IspService._farewell),
    "onboard": (Role.CLIENT, IspService._onboard),
    "subscribe": (Role.CLIENT, IspService._subscribe),
    "requests": (Role.CLIENT, IspService._requests),
    "accept": (Role.CLIENT, IspService._accept),
    "reject": (Role.CLIENT, IspService._reject),
    "leave": (Role.CLIENT, IspService._leave),
    "send": (Role.CLIENT, IspService._send),
    "inbox": (Role.CLIENT, IspService._inbox),
}
