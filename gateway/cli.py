"""The ``tinyssb`` command."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from . import __version__
from .render import render_content
from .store import DiskStore, FeedStore, StoreError
from .store.keys import KEY_FILE, load_key, load_or_create_key
from .wire import bipf
from .wire.entry import FeedKey, chunks_needed
from .wire.errors import WireError
from .wire.ident import format_id, parse_id

log = logging.getLogger("tinyssb")

DEFAULT_DATA = "~/.tinyssb"
EXIT_USER_ERROR = 2


class UserError(Exception):
    """A mistake at the keyboard: printed as one line, exit code 2."""


def data_dir(args: argparse.Namespace) -> Path:
    return Path(os.path.expanduser(args.data))


def ensure_data_dir(args: argparse.Namespace) -> Path:
    root = data_dir(args)
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise UserError(f"cannot create data directory {root}: {exc.strerror}; "
                        "pass --data DIR") from None
    if not root.is_dir():
        raise UserError(f"data directory {root} is not a directory; pass --data DIR")
    return root


def open_store(args: argparse.Namespace, readonly: bool) -> FeedStore:
    root = data_dir(args)
    if readonly and not root.exists():
        raise UserError(f"data directory {root} does not exist; run `tinyssb id` first "
                        "or pass --data DIR")
    return DiskStore(root, readonly=readonly)


def own_key(args: argparse.Namespace) -> FeedKey | None:
    path = data_dir(args) / KEY_FILE
    return load_key(path) if path.exists() else None


def resolve_feed(args: argparse.Namespace, text: str, store: FeedStore) -> bytes:
    if text in ("me", "self"):
        key = own_key(args)
        if key is None:
            raise UserError("no own identity yet; run `tinyssb id` first")
        fid = key.fid
    else:
        fid = parse_id(text)
    if fid not in store:
        raise UserError(f"unknown feed {format_id(fid)}; `tinyssb feeds` lists the feeds held")
    return fid


# --- commands ------------------------------------------------------------------------

def cmd_id(args: argparse.Namespace) -> int:
    root = ensure_data_dir(args)
    key, created = load_or_create_key(root)
    if created:
        log.info("created a new identity in %s", root / KEY_FILE)
    print(key.fid.hex() if args.hex else format_id(key.fid))
    return 0


def tav_post(text: str, now: float) -> bytes:
    """A public text post in the tinySSB app layout: ["TAV", tips, text, voice, unix_s]."""
    return bipf.encode(["TAV", [], text, None, int(now)])


def cmd_publish(args: argparse.Namespace) -> int:
    if args.text is not None and args.file is not None:
        raise UserError("give either TEXT or --file, not both")
    if args.text is not None:
        content = tav_post(args.text, time.time())
    elif args.file is not None:
        content = _read_input(args.file)
    elif not sys.stdin.isatty():
        content = sys.stdin.buffer.read()
    else:
        raise UserError("nothing to publish: give TEXT, --file FILE or pipe content to stdin")
    root = ensure_data_dir(args)
    key, created = load_or_create_key(root)
    if created:
        log.info("created a new identity %s", format_id(key.fid))
    with DiskStore(root) as store:
        entry = store.publish(key, content)
    print(entry.seq)
    return 0


def _read_input(name: str) -> bytes:
    if name == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(name).read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read {name}: {exc.strerror}") from None


def cmd_feeds(args: argparse.Namespace) -> int:
    with open_store(args, readonly=True) as store:
        key = own_key(args)
        infos = store.infos()
    own = key.fid if key else None
    if args.json:
        rows = [{"id": format_id(i.fid), "hex": i.fid.hex(), "length": i.length,
                 "missing_chunks": i.missing_chunks, "own": i.fid == own,
                 "incomplete": [{"seq": s, "have": h, "need": n} for s, h, n in i.incomplete]}
                for i in infos]
        print(json.dumps(rows, indent=2))
        return 0
    if not infos:
        print("no feeds yet (`tinyssb publish TEXT` starts your own)")
        return 0
    for i in infos:
        extra = f", {i.missing_chunks} chunks missing" if i.missing_chunks else ""
        mark = "  (own)" if i.fid == own else ""
        print(f"{format_id(i.fid)}  {i.length} entries{extra}{mark}")
    return 0


def _show_entry(store: FeedStore, fid: bytes, seq: int, raw: bool) -> None:
    content = store.read_content(fid, seq)
    if raw:
        if content is not None:
            sys.stdout.buffer.write(content)
            sys.stdout.buffer.flush()
        return
    if content is None:
        info = store.info(fid)
        have = next(((h, n) for s, h, n in info.incomplete if s == seq), None)
        state = f"side chain incomplete, {have[0]}/{have[1]} chunks" if have else "absent"
        print(f"--- #{seq} ({state})")
        return
    packet = store.read_packet(fid, seq)
    chunks = chunks_needed(packet) if packet else 0
    where = f", {chunks} side-chain chunk{'s' if chunks != 1 else ''}" if chunks else ""
    print(f"--- #{seq} ({len(content)} B{where})")
    print(render_content(content))


def cmd_cat(args: argparse.Namespace) -> int:
    with open_store(args, readonly=True) as store:
        fid = resolve_feed(args, args.feed, store)
        length = store.replica(fid).max_seq
        if args.seq is not None:
            if not 1 <= args.seq <= length:
                raise UserError(f"feed {format_id(fid)} has entries 1..{length}, "
                                f"not {args.seq}")
            if args.raw and store.read_content(fid, args.seq) is None:
                raise UserError(f"entry {args.seq} is not complete yet (side chain missing)")
            _show_entry(store, fid, args.seq, args.raw)
            return 0
        for seq in range(1, length + 1):
            _show_entry(store, fid, seq, args.raw)
    return 0


def cmd_follow(args: argparse.Namespace) -> int:
    shown = args.since
    with open_store(args, readonly=True) as store:
        fid = resolve_feed(args, args.feed, store)
    try:
        while True:
            with open_store(args, readonly=True) as store:
                length = store.replica(fid).max_seq if fid in store else 0
                while shown < length and store.read_content(fid, shown + 1) is not None:
                    shown += 1
                    _show_entry(store, fid, shown, raw=False)
            sys.stdout.flush()
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0


# --- parser --------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tinyssb",
        description="tinySSB for real radios: feeds, replication gateway, simulator, analysis.")
    p.add_argument("--version", action="version", version=f"tinyssb {__version__}")
    p.add_argument("--data", default=os.environ.get("TINYSSB_DATA", DEFAULT_DATA),
                   help="data directory (default: $TINYSSB_DATA or ~/.tinyssb)")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="more log output (-vv for debug)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Callable[[argparse.Namespace], int], help: str
            ) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help, description=help)
        sp.set_defaults(func=func)
        return sp

    sp = add("id", cmd_id, "print this node's feed id (created on first use)")
    sp.add_argument("--hex", action="store_true", help="print 64 hex digits instead")

    sp = add("publish", cmd_publish, "append an entry to your own feed; prints its seq")
    sp.add_argument("text", nargs="?", help='text, published as a post ["TAV", [], TEXT, null, '
                    "unix time]")
    sp.add_argument("--file", "-f", metavar="FILE",
                    help="publish the raw bytes of FILE ('-' for stdin)")

    sp = add("feeds", cmd_feeds, "list the feeds held, with their length")
    sp.add_argument("--json", action="store_true", help="machine-readable output")

    sp = add("cat", cmd_cat, "show the entries of a feed")
    sp.add_argument("feed", help="@<base64>.ed25519, 64 hex digits, or 'me'")
    sp.add_argument("--seq", type=int, help="only this entry")
    sp.add_argument("--raw", action="store_true", help="write raw content bytes to stdout")

    sp = add("follow", cmd_follow, "show a feed's entries as they arrive (Ctrl-C stops)")
    sp.add_argument("feed", help="@<base64>.ed25519, 64 hex digits, or 'me'")
    sp.add_argument("--since", type=int, default=0, help="start after this seq (default 0)")
    sp.add_argument("--interval", type=float, default=1.0, help="poll interval, seconds")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args))
    except (UserError, StoreError, WireError) as exc:
        print(f"tinyssb: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:
        return 0
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"tinyssb: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
