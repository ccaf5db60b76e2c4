"""``tinyssb status`` as a person reads it: the gateway, then one row per face and per
neighbour heard on it, rendered with rich (a table on a terminal, plain text in a pipe).

Input is the dict the gateway answers on its control socket (``Gateway.status``), so
``tinyssb status --json`` and this view show the same numbers.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

__all__ = ["status_view"]


def _peers(link: dict[str, Any]) -> str:
    """A link's peers; a secure link's with the identity each proved."""
    ids = link.get("identities") or {}
    return ", ".join(f"{p} {ids[p]}" if p in ids else p
                     for p in link.get("peers", [])) or "no peers"


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return "never"
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


def _radio(row: dict[str, Any]) -> str:
    rssi, snr = row.get("rssi"), row.get("snr")
    if rssi is None and snr is None:
        return "-"
    parts = []
    if rssi is not None:
        parts.append(f"{rssi:.0f} dBm")
    if snr is not None:
        parts.append(f"SNR {snr:.1f} dB")
    return ", ".join(parts)


def _airtime(air: dict[str, float] | None) -> str:
    if not air:
        return "no limit"
    window = air["window_s"]
    span = f"{window / 3600:g} h" if window >= 3600 else f"{window:g} s"
    return f"{air['used_s']:.1f} s used, {air['left_s']:.1f} s left / {span}"


def scrub_line(scrub: dict[str, Any] | None) -> str:
    """The background scrub's progress and findings in one line."""
    if scrub is None:
        return "scrub: off (scrub_interval = 0)"
    at = scrub.get("at")
    where = (f", at {at['feed'][:13]}.. entry {at['entry']} of {at['of']}" if at else "")
    text = (f"scrub: {scrub['passes']} passes, {scrub['feeds_checked']} feeds, "
            f"{scrub['records_checked']} records checked{where}; ")
    last = scrub.get("last_finding")
    if last is None:
        return text + "no damage found"
    done = ("not cut (own feed: `tinyssb verify`)" if last["cut_to"] is None
            else f"cut to {last['cut_to']} entries")
    return (text + f"damage found {scrub['damage_found']}x, last: {last['feed'][:13]}.. "
            f"{last['problem']}, {done}")


def status_view(st: dict[str, Any]) -> Group:
    """The gateway's summary lines and its peers table."""
    node = st["node"]
    drops = ", ".join(f"{k} {v}" for k, v in sorted(node["drops"].items())) or "none"
    # (a gateway older than the chain cap sends no such key)
    ignored = (f", {node['chains_ignored']} side chains ignored (over max_chain_chunks)"
               if node.get("chains_ignored") else "")
    head = Text.assemble(
        (f"gateway {st['name']}", "bold"), f"  {st['id']}  tinyssb {st.get('version', '?')}\n",
        f"up {st['uptime']:.0f} s, policy {st['policy']}, {st['feeds']} feeds, "
        f"{st['entries']} entries, GOSET {st['goset']['keys']} keys "
        f"(state {st['goset']['state']}...)\n",
        f"frames rx {node['rx']} tx {node['tx']}, stored {node['entries_stored']} entries "
        f"{node['chunks_stored']} chunks{ignored}, dropped: {drops}")
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for name, justify in (("face / neighbour", "left"), ("kind", "left"),
                          ("last heard", "right"), ("RSSI / SNR", "left"),
                          ("rx", "right"), ("tx", "right"), ("queue", "right"),
                          ("airtime (duty window)", "left")):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for f in st["faces"]:
        table.add_row(f["name"], f["kind"], _ago(f.get("last_heard_s")), _radio(f),
                      str(f.get("rx", 0)), str(f.get("tx", 0)), str(f["queue"]),
                      _airtime(f.get("airtime")))
        for n in f.get("neighbours", []):
            table.add_row(f"  {n['peer']}", "", _ago(n["last_heard_s"]), _radio(n),
                          str(n["rx"]), "", "", "")
    if not st["faces"]:
        table.add_row("(no faces open)", "", "", "", "", "", "", "")
    links = Text("\n".join(
        f"link {link['name']}: {link.get('state', '?')}, {_peers(link)}" for link in st["links"]))
    parts: list[Any] = [head, table, links]
    if "scrub" in st:  # (a gateway older than the scrub sends no such key)
        parts.append(Text(scrub_line(st["scrub"])))
    if st.get("capture"):
        parts.append(Text(f"capture: {st['capture']}"))
    return Group(*parts)
