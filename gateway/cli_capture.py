"""``tinyssb capture pcap``: a capture's frames for Wireshark (``capture convert``, the
Spark dataset, lives in :mod:`spark.cli` and shares the ``capture`` command)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .capture import CaptureError, CaptureReader, export_pcap
from .errors import UserError

__all__ = ["add_capture_pcap"]


def cmd_pcap(args: argparse.Namespace) -> int:
    src = Path(args.capture)
    if not src.is_file():
        raise UserError(f"no capture file {src}")
    out = Path(args.out) if args.out else src.with_name(
        src.name.removesuffix(".zst").removesuffix(".cbor") + ".pcap")
    if not out.parent.is_dir():
        raise UserError(f"cannot write {out}: no directory {out.parent}")
    reader = CaptureReader(src)
    try:
        count = export_pcap(iter(reader), out)
    except CaptureError as exc:
        raise UserError(str(exc)) from None
    if args.json:
        print(json.dumps({"capture": str(src), "pcap": str(out), "packets": count,
                          "torn": bool(reader.torn)}))
    else:
        torn = " (its last record was torn and left out)" if reader.torn else ""
        print(f"{count} frames written to {out}{torn}; Wireshark shows them as "
              "link type USER0 (147)")
    return 0


def add_capture_pcap(csub: Any) -> None:
    """Add ``pcap`` to the ``capture`` subcommands ``csub``."""
    text = "write the frames of a capture (rx, tx, dropped) as a pcap file for Wireshark"
    p = csub.add_parser("pcap", help=text, description=text + ". Each packet is the frame "
                        "as it was on the link, with the capture's time; link type USER0.")
    p.set_defaults(func=cmd_pcap)
    p.add_argument("capture", metavar="CAPTURE", help="a capture file (.cbor or .cbor.zst)")
    p.add_argument("--out", "-o", metavar="FILE",
                   help="pcap file to write (default: the capture's name with .pcap)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
