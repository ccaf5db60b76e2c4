"""The LoRa channel with hand-computed outcomes: capture effect, half-duplex, sensitivity,
duty cycle. Shadowing is off (sigma 0) except where the test is about shadowing.

Path loss (Bor et al.): PL(d) = 127.41 + 20.8 log10(d / 40 m); tx power 20 dBm.
  40 m: 127.41 dB -> -107.41 dBm
  70 m: + 20.8 log10(1.75) = 5.055 dB -> -112.47 dBm
  80 m: + 20.8 log10(2)    = 6.261 dB -> -113.67 dBm
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from firmware_sim import phy
from firmware_sim.channel import LoRaChannel, Reception
from gateway.replication.faces import AirtimeBudget
from gateway.wire.crc import add_crc
from gateway.wire.lora import profile

EU = profile("EU868.a", tx_power_dbm=20)  # 868.3 MHz, 125 kHz, SF7, 20 dBm: sensitivity -123 dBm
FLAT = replace(phy.PATH_LOSS_PRESETS["log-distance"], sigma_db=0.0)
FRAME = add_crc(bytes(120))  # 124 bytes: 205.056 ms at SF7/125 kHz
AIR = 0.205056


def channel(**senders: float) -> tuple[LoRaChannel, int, dict[str, int]]:
    """A receiver "r" at the origin and senders at the given distances along x."""
    ch = LoRaChannel(FLAT, random.Random(1))
    r = ch.add_radio("r", 0, 0, EU, duty_cycle=0)
    ids = {name: ch.add_radio(name, d, 0, EU, duty_cycle=0) for name, d in senders.items()}
    return ch, r, ids


def at(receptions: list[Reception], receiver: int) -> Reception:
    (found,) = [rc for rc in receptions if rc.receiver == receiver]
    return found


def test_a_lone_frame_is_decoded_with_its_power_and_snr() -> None:
    ch, r, s = channel(a=40)
    tx = ch.transmit(s["a"], FRAME, 0.0)
    assert tx is not None and tx.airtime == pytest.approx(AIR)
    rc = at(ch.finish(tx), r)
    assert rc.drop is None
    assert rc.rssi == pytest.approx(-107.41)
    assert rc.snr == pytest.approx(-107.41 + 117.031, abs=0.001)  # noise floor -117.03 dBm


def test_the_stronger_frame_survives_only_six_db_above_the_other() -> None:
    ch, r, s = channel(a=40, b=80)
    ta = ch.transmit(s["a"], FRAME, 0.0)
    tb = ch.transmit(s["b"], FRAME, 0.1)  # overlaps a for 105 ms
    assert ta is not None and tb is not None
    assert at(ch.finish(ta), r).drop is None  # -107.41 vs -113.67: 6.26 dB above
    rb = at(ch.finish(tb), r)
    assert rb.drop == phy.COLLISION and rb.rssi == pytest.approx(-113.67, abs=0.01)


def test_both_frames_are_lost_when_neither_is_six_db_stronger() -> None:
    ch, r, s = channel(a=40, c=70)
    ta = ch.transmit(s["a"], FRAME, 0.0)
    tc = ch.transmit(s["c"], FRAME, 0.2)  # overlaps the last 5 ms of a: enough
    assert ta is not None and tc is not None
    assert at(ch.finish(ta), r).drop == phy.COLLISION  # only 5.06 dB above
    assert at(ch.finish(tc), r).drop == phy.COLLISION


def test_frames_that_touch_but_do_not_overlap_do_not_collide() -> None:
    ch, r, s = channel(a=40, c=70)
    ta = ch.transmit(s["a"], FRAME, 0.0)
    assert ta is not None
    tc = ch.transmit(s["c"], FRAME, ta.end)  # starts the instant a ends
    assert tc is not None
    assert at(ch.finish(ta), r).drop is None
    assert at(ch.finish(tc), r).drop is None


def test_other_spreading_factors_neither_interfere_nor_are_heard() -> None:
    ch = LoRaChannel(FLAT, random.Random(1))
    r = ch.add_radio("r", 0, 0, EU, duty_cycle=0)
    a = ch.add_radio("a", 40, 0, EU, duty_cycle=0)
    b = ch.add_radio("b", 41, 0, replace(EU, sf=9), duty_cycle=0)
    ta = ch.transmit(a, FRAME, 0.0)
    tb = ch.transmit(b, FRAME, 0.0)
    assert ta is not None and tb is not None
    assert at(ch.finish(ta), r).drop is None
    assert ch.finish(tb) == []  # nobody on SF9 to hear it


def test_half_duplex_a_transmitting_receiver_hears_nothing() -> None:
    ch, r, s = channel(a=40)
    ta = ch.transmit(s["a"], FRAME, 0.0)
    tr = ch.transmit(r, FRAME, 0.15)  # r keys up while a's frame is still arriving
    assert ta is not None and tr is not None
    assert at(ch.finish(ta), r).drop == phy.HALF_DUPLEX
    assert at(ch.finish(tr), s["a"]).drop == phy.HALF_DUPLEX  # a was on air too
    # r's transmission came first, a's frame arrives during it: lost as well
    ch2, r2, s2 = channel(a=40)
    first = ch2.transmit(r2, FRAME, 0.0)
    late = ch2.transmit(s2["a"], FRAME, 0.1)
    assert first is not None and late is not None
    assert at(ch2.finish(late), r2).drop == phy.HALF_DUPLEX


def test_a_radio_sends_one_frame_at_a_time() -> None:
    ch, _, s = channel(a=40)
    assert ch.transmit(s["a"], FRAME, 0.0) is not None
    assert ch.busy(s["a"], 0.1)
    with pytest.raises(RuntimeError, match="still transmitting"):
        ch.transmit(s["a"], FRAME, 0.1)
    assert not ch.busy(s["a"], AIR)


def test_duty_cycle_one_percent_of_an_hour() -> None:
    # 1 % of 3600 s = 36 s of airtime; 36 / 0.205056 = 175.6, so 175 full frames fit
    ch = LoRaChannel(FLAT, random.Random(1))
    a = ch.add_radio("a", 0, 0, EU, duty_cycle=0.01, duty_window=3600.0)
    t = 0.0
    for _ in range(175):
        assert ch.transmit(a, FRAME, t) is not None
        t += 1.0
    assert ch.transmit(a, FRAME, t) is None  # the 176th would make 36.09 s
    assert ch.transmit(a, FRAME, 3600.0) is not None  # the first one has left the window


def test_below_sensitivity_drops_from_a_neighbour_follow_the_shadowing() -> None:
    # a node exactly at the distance where the median power equals the sensitivity:
    # with shadowing, about half of its frames fade below -123 dBm
    loss = phy.PATH_LOSS_PRESETS["log-distance"]
    edge = loss.distance_for(20 + 123) * 0.999  # just inside: a neighbour
    ch = LoRaChannel(loss, random.Random(7))
    r = ch.add_radio("r", 0, 0, EU, duty_cycle=0)
    a = ch.add_radio("a", edge, 0, EU, duty_cycle=0)
    outcomes = []
    for i in range(400):
        tx = ch.transmit(a, FRAME, i * 1.0)
        assert tx is not None
        outcomes.append(at(ch.finish(tx), r))
    decoded = [rc for rc in outcomes if rc.drop is None]
    faded = [rc for rc in outcomes if rc.drop == phy.BELOW_SENSITIVITY]
    assert len(decoded) + len(faded) == 400
    assert 160 < len(decoded) < 240  # binomial(400, 1/2): 200 +- 4 sigma
    assert all(rc.rssi >= -123 for rc in decoded) and all(rc.rssi < -123 for rc in faded)
    assert max(rc.rssi for rc in decoded) <= -123 + 3 * 3.57 + 1e-9  # clipped at 3 sigma


def test_far_radios_are_never_considered() -> None:
    ch, r, s = channel(far=5000)  # 168.8 dB median loss: beyond 3 sigma of any margin
    tx = ch.transmit(s["far"], FRAME, 0.0)
    assert tx is not None and ch.finish(tx) == [] and r not in tx.power


def test_far_links_are_thinned_without_changing_their_odds() -> None:
    # at 1400 m the median is 20 - (127.41 + 20.8 log10(35)) = -139.5 dBm; clearing the
    # noise margin (-123 - 9 = -132 dBm) takes a draw of +2.11 sigma: about 1.7 % of the
    # frames, so the link is "far" and thinned
    from firmware_sim.channel import FAR_Q, NOISE_MARGIN_DB, SHADOW_LEVELS, shadow_levels

    loss = phy.PATH_LOSS_PRESETS["log-distance"]
    ch = LoRaChannel(loss, random.Random(11))
    a = ch.add_radio("a", 0, 0, EU, duty_cycle=0)
    far = ch.add_radio("far", 1400, 0, EU, duty_cycle=0)
    n = 20_000
    powers = []
    for i in range(n):
        tx = ch.transmit(a, FRAME, i * 1.0)
        assert tx is not None
        if far in tx.power:
            powers.append(tx.power[far])
    (link,) = ch.radios[a].far
    q = (SHADOW_LEVELS - link.first) / SHADOW_LEVELS
    assert 0 < q < FAR_Q and not ch.radios[a].links
    expected = n * q
    assert abs(len(powers) - expected) < 4 * (expected * (1 - q)) ** 0.5
    floor = -123 - NOISE_MARGIN_DB
    assert min(powers) >= floor and max(powers) <= link.median + 3 * 3.57 + 1e-9
    # the kept draws are the upper levels, each equally likely: compare the means
    upper = shadow_levels()[link.first:]
    mean = link.median + 3.57 * sum(upper) / len(upper)
    assert abs(sum(powers) / len(powers) - mean) < 0.1


def test_the_channel_never_refuses_what_the_nodes_own_budget_allows() -> None:
    from gateway.replication.faces import Face

    rng = random.Random(3)
    for _ in range(20):
        ch = LoRaChannel(FLAT, random.Random(1))
        a = ch.add_radio("a", 0, 0, EU, duty_cycle=0.01, duty_window=3600.0)
        face = Face.lora_radio("lora0", EU, duty_cycle=0.01)
        node = AirtimeBudget(face.duty_cycle, face.duty_window)
        free = rng.uniform(0, 1000)  # when the radio is idle again
        for _ in range(600):  # well past the budget: most frames wait for earliest()
            frame = add_crc(bytes(rng.choice([120, 105, 40, 60])))
            air = face.airtime(len(frame) - 4)
            t = max(node.earliest(free, air), free + rng.uniform(0, 3))
            assert ch.transmit(a, frame, t) is not None
            node.spend(t, air)
            free = t + air


def test_each_near_link_draws_the_12_bits_it_would_draw_on_its_own() -> None:
    # the channel takes a frame's shadowing levels with one getrandbits call; a seed must
    # keep giving the very draws of one getrandbits(12) per link, in link order, so that
    # captures of a seed stay the same byte for byte
    from firmware_sim.channel import SHADOW_BITS, shadow_levels

    loss = phy.PATH_LOSS_PRESETS["log-distance"]
    ch = LoRaChannel(loss, random.Random(11))
    a = ch.add_radio("a", 0, 0, EU, duty_cycle=0)
    for i in range(40):  # neighbours and radios at the edge of the noise margin
        ch.add_radio(f"n{i}", 60 + 25 * i, 7 * i, EU, duty_cycle=0)
    twin = random.Random(11)
    for k in range(5):
        tx = ch.transmit(a, FRAME, 10.0 * k)
        assert tx is not None
        expected = {}
        for link in ch.radios[a].links:
            level = twin.getrandbits(SHADOW_BITS)
            if level >= link.first:
                expected[link.receiver] = link.median + loss.sigma_db * shadow_levels()[level]
        assert ch.radios[a].far == []  # no thinned links here: every draw is one of these
        assert tx.power == expected and len(expected) > 10
