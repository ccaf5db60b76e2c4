"""How big a run's capture will get, told before the run writes it.

A LoRa node cannot be on air for more than its duty cycle: over ``duration`` it sends
at most ``duty_cycle * duration / airtime(124 B)`` full frames. Each frame becomes one
``tx`` record and one ``rx`` (or ``drop``) record at each neighbour (a node whose median
signal reaches it, :func:`lora_edges`). A busy mesh runs close to that limit (city-100
spends it within the first minutes of every hour), so this is the size to expect there;
a quiet one writes less. Records average about 215 bytes (city-100: 1.2 GB for 5.6 M).
"""

from __future__ import annotations

from collections import Counter

from gateway.wire.lora import airtime

from .scenario import FULL_FRAME, Scenario, lora_edges

__all__ = ["BYTES_PER_RECORD", "capture_bytes"]

BYTES_PER_RECORD = 215


def capture_bytes(scenario: Scenario) -> int | None:
    """The plain capture size of ``scenario`` when its radios use their whole duty cycle;
    None when the duty cycle is unlimited (no bound)."""
    radio = scenario.radio
    if not radio.duty_cycle:
        return None
    degree: Counter[str] = Counter()
    for a, b in lora_edges(scenario):
        degree[a] += 1
        degree[b] += 1
    frames = radio.duty_cycle * scenario.duration / airtime(radio.params, FULL_FRAME)
    records = sum(frames * (1 + degree[n.name]) for n in scenario.nodes if "lora" in n.radios)
    return round(records * BYTES_PER_RECORD)
