"""Policies as data: presets and config-file tables."""

from __future__ import annotations

import pytest

from gateway.replication.policy import DEFAULT, REFERENCE, OffsetStep, policy_from_mapping
from gateway.wire.ident import format_id


def test_policy_from_a_config_table() -> None:
    fid = bytes(range(32))
    p = policy_from_mapping({"preset": "reference", "credit": 5, "offset_step": "past",
                             "allow": [format_id(fid)]})
    assert (p.credit, p.offset_step, p.allow, p.replicate_all) == (
        5, OffsetStep.PAST, frozenset({fid}), False)
    assert p.goset_interval_min == REFERENCE.goset_interval_min
    assert policy_from_mapping({}) == DEFAULT
    for bad, msg in [({"credits": 3}, "unknown policy setting 'credits'"),
                     ({"credit": "lots"}, "'credit' must be a number"),
                     ({"credit": 2.5}, "whole number"),
                     ({"trickle": 1}, "true or false"),
                     ({"preset": "fast"}, "unknown policy 'fast'"),
                     ({"allow": ["nope"]}, "'allow'"),
                     ({"rtt_min": 0}, "rtt_min"),
                     ({"push_skip_start": 0}, "push_skip_start")]:
        with pytest.raises(ValueError, match=msg):
            policy_from_mapping(bad)
