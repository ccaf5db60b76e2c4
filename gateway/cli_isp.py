"""``tinyssb isp ...``, ``tinyssb send`` and ``tinyssb inbox``: tinyISP from the shell.

Every request goes to the running gateway through its control socket when one runs on
the data directory; otherwise the command opens the directory itself, does the work
(appending the protocol's entries) and closes it again, and the gateway replicates them
when it next runs.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from .cli_gateway import add_run_arguments, cmd_run
from .isp import IspError, Role
from .isp.storage import KeyStoreError
from .replication.node import Node
from .runtime.control import ControlError, request_holder
from .runtime.isp_service import IspService, RoleError, goset_filter, read_role
from .store import DiskStore
from .store.disk import StoreLockedError
from .store.keys import load_or_create_key
from .wire import bipf
from .wire.errors import BipfError

__all__ = ["add_isp_commands", "chat_text", "isp_request"]

UserErrorFactory = Callable[[str], Exception]


def chat_text(text: str, now: float) -> bytes:
    """A chat message as c2c content: the tinySSB post layout ["TAV", [], TEXT, null, unix s]."""
    return bipf.encode(["TAV", [], text, None, int(now)])


def _text_of(content: bytes) -> str:
    try:
        value = bipf.decode(content)
    except BipfError:
        return content.hex()
    if isinstance(value, list) and len(value) >= 3 and value[0] == "TAV" \
            and isinstance(value[2], str):
        return value[2]
    return repr(value)


def isp_request(root: Path, req: dict[str, Any], role: Role | None,
                user_error: UserErrorFactory) -> dict[str, Any]:
    """Do one tinyISP request on ``root``: through the running gateway, or directly.

    ``role``: the role the request needs when the directory has none yet (None: the
    directory must have one already)."""
    try:
        return _offline(root, req, role, user_error)
    except StoreLockedError:
        pass  # a gateway runs on this directory: it does the work
    try:
        answer = request_holder(root, {"cmd": "isp", **req})
    except ControlError as exc:
        raise user_error(str(exc)) from None
    return answer


def _offline(root: Path, req: dict[str, Any], role: Role | None,
             user_error: UserErrorFactory) -> dict[str, Any]:
    try:
        have = read_role(root)
    except RoleError as exc:
        raise user_error(str(exc)) from None
    chosen = have or role
    if chosen is None:
        raise user_error(f"{root} is no tinyISP node yet: run `tinyssb isp serve` (ISP) or "
                         "`tinyssb isp onboard ISP-ID` (client) first")
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    with DiskStore(root) as store:  # StoreLockedError: a gateway has it
        key, _ = load_or_create_key(root)
        now = time.monotonic()
        try:
            node = Node(store, rng=random.Random(), name="cli", now=now,
                        goset_filter=goset_filter(root))
            service = IspService(node, key, root, chosen, now)
            service.settle(node.drain_events(), now)  # whatever arrived while we were away
            return service.handle(req, now)
        except (IspError, RoleError, KeyStoreError) as exc:
            raise user_error(str(exc)) from None


def _print_json(answer: dict[str, Any]) -> None:
    answer = {k: v for k, v in answer.items() if k != "ok"}
    print(json.dumps(answer, indent=2))


def _print_contracts(answer: dict[str, Any]) -> None:
    contracts = answer.get("contracts", [])
    allow = answer.get("allow", [])
    if "allow" in answer and answer.get("role") == "isp":
        print(f"allow-list: {', '.join(allow) if allow else 'off (every client may onboard)'}")
    if not contracts:
        print("no contracts")
    for c in contracts:
        print("contract", c.get("id"))
        for k, v in c.items():
            if k != "id":
                print(f"  {k}: {v}")
    for e in answer.get("ended", []):
        print(f"ended contract {e.get('id')}: {e.get('outcome')}")


def _print_requests(answer: dict[str, Any]) -> None:
    reqs = answer.get("requests", [])
    subs = answer.get("subscriptions", [])
    if not reqs:
        print("no subscription requests waiting")
    for r in reqs:
        print(f"request {r.get('ref')} from {r.get('requester') or r.get('peer')}")
    if subs:
        print("subscriptions:")
        for s in subs:
            print(f"  {s}")
    for a in answer.get("asked", []):
        peer, outcome = a.get("peer"), a.get("outcome")
        if outcome == "pending":
            print(f"asked {peer} for a subscription: no answer yet")
        elif outcome == "not_found":
            print(f"asked {peer} for a subscription: refused, not_found (the peer had no "
                  f"contract with the ISP yet); once it has onboarded, ask again: "
                  f"tinyssb isp subscribe {peer}")
        else:
            print(f"asked {peer} for a subscription: refused, {outcome}")


def _print_inbox(answer: dict[str, Any]) -> None:
    messages = answer.get("messages", [])
    if not messages:
        print("inbox empty")
    for m in messages:
        content = base64.b64decode(m["content"])
        when = m.get("t")
        stamp = (datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M ")
                 if isinstance(when, (int, float)) and when > 1e9 else "")
        print(f"{stamp}{m.get('peer')} #{m.get('seq')}: {_text_of(content)}")


def add_isp_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                     user_error: UserErrorFactory,
                     data_dir: Callable[[argparse.Namespace], Path]) -> None:
    help_isp = "tinyISP: serve as an ISP, or onboard with one and chat with its clients"
    ip = sub.add_parser("isp", help=help_isp, description=help_isp + ". Commands work on "
                        "a running gateway through its control socket, or on the data "
                        "directory directly when no gateway runs.")
    isub = ip.add_subparsers(dest="isp_command", required=True, metavar="SUBCOMMAND")

    def simple(name: str, help: str, role: Role | None, op: str,
               show: Callable[[dict[str, Any]], None] | None = None,
               args: tuple[tuple[str, str], ...] = ()) -> argparse.ArgumentParser:
        """A subcommand sending request ``op``; ``role``: the role it gives a data
        directory that has none yet (None: it needs one already)."""
        sp = isub.add_parser(name, help=help, description=help)
        for arg, arg_help in args:
            sp.add_argument(arg, help=arg_help)
        sp.add_argument("--json", action="store_true", help="machine-readable output")

        def run(ns: argparse.Namespace) -> int:
            req: dict[str, Any] = {"op": op}
            for arg, _ in args:
                req[arg] = getattr(ns, arg)
            answer = isp_request(data_dir(ns), req, role, user_error)
            if not answer.get("ok", False):
                raise user_error(str(answer.get("error", "the gateway refused")))
            if ns.json or show is None:
                _print_json(answer)
            else:
                show(answer)
            return 0

        sp.set_defaults(func=run)
        return sp

    peer = ("peer", "the peer's feed id (@<base64>.ed25519 or 64 hex digits)")
    ref = ("ref", "the request's reference (40 hex digits, from `tinyssb isp requests`)")

    help_serve = "run the gateway as a tinyISP ISP (takes the flags of `tinyssb run`)"
    sp = isub.add_parser("serve", help=help_serve, description=help_serve)
    add_run_arguments(sp)
    sp.set_defaults(func=lambda ns: cmd_run(ns, user_error, data_dir(ns), isp_role=Role.ISP))

    simple("allow", "ISP: accept onboarding from this client (the allow-list is off while "
           "empty) and follow its root feed", Role.ISP, "allow", args=(peer,))
    simple("contracts", "list the contracts (an ISP's all, a client's own) and the ISP's "
           "allow-list", None, "contracts",
           _print_contracts)
    simple("farewell", "ISP: end the contract with a client", None, "farewell",
           args=(peer,))
    simple("onboard", "client: ask an ISP for a contract", Role.CLIENT, "onboard",
           args=(peer,))
    simple("subscribe", "client: ask for a subscription to another client of the ISP",
           None, "subscribe", args=(peer,))
    simple("requests", "client: subscription requests waiting for an answer, the "
           "subscriptions, and ours still unanswered or refused", None, "requests",
           _print_requests)
    simple("accept", "client: accept a subscription request", None, "accept",
           args=(ref,))
    simple("reject", "client: reject a subscription request", None, "reject",
           args=(ref,))
    simple("leave", "client: end the contract with the ISP (farewell)", None, "leave")

    help_send = "send a text to a peer you are subscribed to through your ISP"
    sp = sub.add_parser("send", help=help_send, description=help_send)
    sp.add_argument("peer", help=peer[1])
    sp.add_argument("text", help="the message")

    def send(ns: argparse.Namespace) -> int:
        content = chat_text(ns.text, time.time())
        answer = isp_request(data_dir(ns), {"op": "send", "peer": ns.peer,
                                            "content": base64.b64encode(content).decode()},
                             None, user_error)
        if not answer.get("ok", False):
            raise user_error(str(answer.get("error", "the gateway refused")))
        print(f"queued {answer.get('sent')} B for {answer.get('peer')}")
        return 0

    sp.set_defaults(func=send)

    help_inbox = "show the messages your peers sent you through your ISP"
    sp = sub.add_parser("inbox", help=help_inbox, description=help_inbox)
    sp.add_argument("--json", action="store_true", help="machine-readable output")

    def inbox(ns: argparse.Namespace) -> int:
        answer = isp_request(data_dir(ns), {"op": "inbox"}, None, user_error)
        if not answer.get("ok", False):
            raise user_error(str(answer.get("error", "the gateway refused")))
        if ns.json:
            _print_json(answer)
        else:
            _print_inbox(answer)
        return 0

    sp.set_defaults(func=inbox)
