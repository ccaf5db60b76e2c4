"""Showing entry content to a person: BIPF values in a JSON-like text form.

Byte strings are written in CBOR diagnostic style, ``h'00ff'``; content that is not one
well-formed BIPF value is shown as hex.
"""

from __future__ import annotations

import json
import math

from .wire import bipf
from .wire.errors import BipfError


def render_value(value: object, indent: int = 0, step: int = 2) -> str:
    pad = " " * (indent + step)
    end = " " * indent
    if isinstance(value, (bytes, bytearray)):
        return f"h'{bytes(value).hex()}'"
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else json.dumps(str(value))
    if isinstance(value, (int, str)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        if not value:
            return "[]"
        if len(value) <= 6 and all(not isinstance(v, (list, dict)) or not v for v in value):
            return "[" + ", ".join(render_value(v, 0, step) for v in value) + "]"
        items = ",\n".join(pad + render_value(v, indent + step, step) for v in value)
        return "[\n" + items + "\n" + end + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = ",\n".join(
            f"{pad}{render_value(k, 0, step)}: {render_value(v, indent + step, step)}"
            for k, v in value.items())
        return "{\n" + items + "\n" + end + "}"
    return repr(value)


def render_content(content: bytes) -> str:
    """Pretty text for entry content: its BIPF value if it is one, else text, else hex."""
    try:
        value, end = bipf.decode_at(content, 0)
    except BipfError:
        value, end = None, -1
    if end >= 0 and not content[end:].strip(b"\x00"):
        return render_value(value)
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return "hex: " + content.hex()
    if text.isprintable() or all(c.isprintable() or c in "\n\t\r" for c in text):
        return "text: " + text
    return "hex: " + content.hex()
