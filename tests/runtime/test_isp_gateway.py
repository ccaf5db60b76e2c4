"""tinyISP end to end: an ISP gateway and two client gateways on loopback WebSocket,
driven only through the `tinyssb` command line: allow, onboard, subscribe, accept,
send, inbox, and a farewell."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from gateway.cli import main
from gateway.wire.ident import parse_id

from .harness import free_port, holdings, stop, tinyssb, wait_for

LIMIT = 120.0


def cli(data: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["--data", str(data), *argv])
    return code, out.getvalue(), err.getvalue()


def ok(data: Path, *argv: str) -> str:
    code, out, err = cli(data, *argv)
    assert code == 0, f"tinyssb {' '.join(argv)}: exit {code}: {err}"
    return out


def js(data: Path, *argv: str) -> Any:
    return json.loads(ok(data, *argv, "--json"))


def contract_state(data: Path) -> str | None:
    contracts = js(data, "isp", "contracts")["contracts"]
    return contracts[0]["state"] if contracts else None


def test_two_clients_chat_through_an_isp_gateway(tmp_path: Path) -> None:
    isp, alice, carol = (tmp_path / n for n in ("isp", "alice", "carol"))
    ids = {d: ok(d, "id").strip() for d in (isp, alice, carol)}
    # before any gateway runs: the commands work on the data directories directly
    ok(isp, "isp", "allow", ids[alice])
    ok(isp, "isp", "allow", ids[carol])
    ok(alice, "isp", "onboard", ids[isp])
    ok(carol, "isp", "onboard", ids[isp])
    assert contract_state(alice) == "onboard_requested"
    code, _, err = cli(alice, "isp", "allow", ids[carol])  # a client is no ISP
    assert code == 2 and "ISP" in err

    port = free_port()
    logs = tmp_path / "logs"
    logs.mkdir()
    procs = [tinyssb(isp, "isp", "serve", "--ws-listen", f"127.0.0.1:{port}",
                     "--status-interval", "0", log=logs / "isp.log")]
    try:
        wait_for(lambda: (isp / "gateway.sock").exists(), 30, "ISP up", procs)
        for d in (alice, carol):
            procs.append(tinyssb(d, "run", "--connect", f"ws://127.0.0.1:{port}",
                                 "--status-interval", "0", log=logs / f"{d.name}.log"))
        wait_for(lambda: contract_state(alice) == "established"
                 and contract_state(carol) == "established", LIMIT, "onboarding", procs)
        states = [c["state"] for c in js(isp, "isp", "contracts")["contracts"]]
        assert states == ["established", "established"]

        # subscription: alice asks, carol accepts (through the running gateways)
        ok(alice, "isp", "subscribe", ids[carol])
        assert f"asked {ids[carol]} for a subscription: no answer yet" in ok(
            alice, "isp", "requests")
        wait_for(lambda: bool(js(carol, "isp", "requests")["requests"]), LIMIT,
                 "request reaches carol", procs)
        (req,) = js(carol, "isp", "requests")["requests"]
        assert req["requester"] == ids[alice]
        ok(carol, "isp", "accept", req["ref"])
        wait_for(lambda: bool(js(alice, "isp", "requests")["subscriptions"]), LIMIT,
                 "subscription stands at alice", procs)
        assert js(alice, "isp", "requests")["asked"] == []

        for i in range(3):
            ok(alice, "send", ids[carol], f"hello carol {i}")
        ok(carol, "send", ids[alice], "hi alice, " + "long " * 40)  # with a side chain
        wait_for(lambda: len(js(carol, "inbox")["messages"]) == 3, LIMIT, "carol's inbox",
                 procs)
        wait_for(lambda: len(js(alice, "inbox")["messages"]) == 1, LIMIT, "alice's inbox",
                 procs)
        shown = ok(carol, "inbox")
        assert [line.split(": ", 1)[1] for line in shown.splitlines()] == [
            f"hello carol {i}" for i in range(3)]
        assert ids[alice] in shown
        assert "hi alice, long long" in ok(alice, "inbox")

        # farewell from alice: her contract goes away on both sides, with its feeds
        (mine,) = js(alice, "isp", "contracts")["contracts"]
        contract_feeds = [mine["ctrl_out"], mine["ctrl_in"], mine["data_in"], *mine["data_out"]]
        ok(alice, "isp", "leave")
        wait_for(lambda: contract_state(alice) is None, LIMIT, "alice's contract ends", procs)
        wait_for(lambda: len(js(isp, "isp", "contracts")["contracts"]) == 1, LIMIT,
                 "the ISP drops alice's contract", procs)
    finally:
        codes = stop(*procs)
    assert codes == [0, 0, 0]
    held = holdings(alice)
    assert held and not [f for f in contract_feeds if parse_id(f) in held]


def test_mistakes_get_one_line_naming_the_fix(tmp_path: Path) -> None:
    data = tmp_path / "n"
    ok(data, "id")
    code, _, err = cli(data, "isp", "contracts")
    assert code == 2 and "isp serve" in err and "isp onboard" in err
    code, _, err = cli(data, "isp", "onboard", "not-an-id")
    assert code == 2 and "not a feed id" in err
    ok(data, "isp", "onboard", "@" + "A" * 43 + "=.ed25519")
    code, _, err = cli(data, "isp", "accept", "zz")
    assert code == 2 and "isp requests" in err
    code, _, err = cli(data, "send", "@" + "B" * 43 + "=.ed25519", "hi")
    assert code == 2 and err.count("\n") == 1
    code, _, err = cli(data, "isp", "serve", "--ws-listen", "0")  # a client is no ISP
    assert code == 2 and "client" in err


def test_a_subscription_refused_as_not_found_says_to_ask_again(
        capsys: pytest.CaptureFixture[str]) -> None:
    from gateway.cli_isp import _print_requests

    peer = "@" + "A" * 43 + "=.ed25519"
    _print_requests({"requests": [], "subscriptions": [],
                     "asked": [{"ref": "ab" * 20, "peer": peer, "outcome": "not_found"},
                               {"ref": "cd" * 20, "peer": "@b.ed25519",
                                "outcome": "rejected"}]})
    out = capsys.readouterr().out.splitlines()
    assert out[1] == (f"asked {peer} for a subscription: refused, not_found (the peer had "
                      f"no contract with the ISP yet); once it has onboarded, ask again: "
                      f"tinyssb isp subscribe {peer}")
    assert out[2] == "asked @b.ed25519 for a subscription: refused, rejected"
