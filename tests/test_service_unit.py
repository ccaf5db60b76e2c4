"""The systemd unit shipped in contrib/ starts `tinyssb run` with arguments it takes."""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path

from gateway.cli import build_parser
from gateway.errors import EXIT_USER_ERROR

UNIT = Path(__file__).resolve().parents[1] / "contrib" / "systemd" / "tinyssb-gateway.service"


def test_the_unit_runs_the_gateway_and_does_not_restart_on_a_config_mistake() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(UNIT)
    service = unit["Service"]
    argv = shlex.split(service["ExecStart"])
    assert argv[0].endswith("/bin/tinyssb")
    args = build_parser().parse_args(argv[1:])
    assert args.command == "run" and args.config == "/etc/tinyssb/gateway.toml"
    assert args.data == "/var/lib/tinyssb"
    assert service["RestartPreventExitStatus"] == str(EXIT_USER_ERROR)
    assert service["KillSignal"] == "SIGTERM" and "dialout" in service["SupplementaryGroups"]
    assert unit["Install"]["WantedBy"] == "multi-user.target"
