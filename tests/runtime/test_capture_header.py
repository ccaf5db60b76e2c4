"""What a gateway's capture says about the run: policy and links (issue 18: the report
read "unknown" for the policy of every gateway capture)."""

from __future__ import annotations

from pathlib import Path

from gateway.capture import read_capture
from gateway.replication.policy import policy_from_mapping
from gateway.transports.websocket import WebSocketServer

from .harness import free_port, run, running


def test_an_ip_only_gateway_capture_names_its_policy_and_links_and_no_radio(
        tmp_path: Path) -> None:
    capture = tmp_path / "gw.cbor"

    async def scenario() -> None:
        links = [WebSocketServer(free_port(), "127.0.0.1")]
        async with running(tmp_path / "gw", links, capture=capture,
                           policy=policy_from_mapping({"preset": "ip"})):
            pass  # started and stopped: the header is what this test reads

    run(scenario)
    header = next(iter(read_capture(capture))).meta
    assert header is not None
    assert header["policy"] == "ip" and header["links"] == ["ws-listen"]
    assert "profile" not in header and "tx_power_dbm" not in header
