"""``tinyssb verify [--repair]``: check every feed on disk end to end."""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Callable
from pathlib import Path

from .store import DiskStore, StoreLockedError
from .store.keys import KEY_FILE, load_key
from .store.scrub import FeedCheck, check_feed, repair_feed
from .wire.ident import format_id

__all__ = ["add_verify_command"]

log = logging.getLogger("tinyssb")

EXIT_DAMAGED = 1


def _own_fid(root: Path) -> bytes | None:
    path = root / KEY_FILE
    return load_key(path).fid if path.exists() else None


def _as_json(check: FeedCheck, own: bool, repaired: bool) -> dict[str, object]:
    return {"feed": format_id(check.fid), "own": own, "entries": check.entries,
            "entries_ok": check.entries_ok, "entry_problem": check.entry_problem,
            "chunk_records": check.chunk_records, "chunk_records_ok": check.chunk_records_ok,
            "chunk_problem": check.chunk_problem, "checkpoint_ok": check.checkpoint_ok,
            "lost_tail": check.lost_tail, "quarantined": check.quarantined,
            "damaged": check.damaged, "repaired": repaired}


def add_verify_command(sub: argparse._SubParsersAction,  # type: ignore[type-arg]
                       user_error: Callable[[str], Exception],
                       data_dir: Callable[[argparse.Namespace], Path]) -> None:
    """Register ``verify`` on the ``tinyssb`` command."""

    def cmd_verify(args: argparse.Namespace) -> int:
        root = data_dir(args)
        if not (root / "feeds").is_dir():
            raise user_error(f"no feeds in {root}; pass --data DIR")
        try:
            store = DiskStore(root, readonly=not args.repair)
        except StoreLockedError:
            raise user_error(f"a gateway runs on {root}; stop it to repair, or run "
                             "`tinyssb verify` without --repair (it only reads)") from None
        own = _own_fid(root)
        rows, damaged = [], 0
        with store:
            for fid in store.feeds():
                check = check_feed(store, fid)
                repaired = False
                if check.damaged and args.repair:
                    check, repaired = repair_feed(store, fid), True
                    log.warning("feed %s: cut at its first damaged record; the rest is "
                                "kept in its quarantine and fetched from peers again",
                                format_id(fid))
                damaged += check.damaged or (check.lost_tail is not None and fid == own)
                rows.append((check, fid == own, repaired))
        if args.json:
            print(json.dumps([_as_json(c, o, r) for c, o, r in rows], indent=2))
        else:
            for check, is_own, repaired in rows:
                mark = " (own)" if is_own else ""
                done = "repaired: " if repaired else ""
                print(f"{format_id(check.fid)}{mark}: {done}{check.describe()}")
            if damaged and not args.repair:
                print("damage found: `tinyssb verify --repair` cuts each damaged feed at its "
                      "first bad record (kept in quarantine/) so that peers resend the rest")
        return EXIT_DAMAGED if damaged else 0

    help = "verify every feed from its start: signatures, chains, chunk hashes"
    sp = sub.add_parser("verify", help=help, description=help + ". Exit 1 if damage remains.")
    sp.set_defaults(func=cmd_verify)
    sp.add_argument("--repair", action="store_true",
                    help="cut damaged feeds at their first bad record (kept in quarantine/; "
                         "peers resend the rest); needs the gateway stopped")
    sp.add_argument("--json", action="store_true", help="machine-readable output")
