"""The ``ip`` preset's GOSET on a point-to-point face: two gateways agree on their sets
within seconds.

The radio preset keeps its GOSET quiet (a differing claim does not restart Trickle:
keys travel as pushed novelties there). The ``ip`` preset derives from it and inherited
that rule, so over WebSocket a gateway learnt a peer's 50 keys in 236 s of GOSET rounds
instead of 9 s, and the 50 x 200 gateway bench took 35 s instead of 14 s.
"""

from __future__ import annotations

import random

import pytest

from gateway.replication import Face, preset
from gateway.replication.faces import FaceKind

from .mesh import Mesh, author, converged


def _ip_pair(seed: int = 3) -> tuple[Mesh, object, object]:
    mesh = Mesh(rng=random.Random(seed), delay=0.002,
                face=Face("radio", kind=FaceKind.POINT_TO_POINT))
    a, b = mesh.add("a", preset("ip")), mesh.add("b", preset("ip"))
    mesh.link("a", "b")
    return mesh, a, b


@pytest.mark.parametrize("feeds", [20, 50, 100])
def test_a_peer_learns_every_key_within_seconds(feeds: int) -> None:
    mesh, a, b = _ip_pair()
    for i in range(feeds):
        author(a, 1000 + i, [b"x"])
    took = mesh.run_until(lambda: len(b.goset) >= feeds, 600)
    assert took < 0.3 * feeds + 5  # 3 s, 9 s and 24 s measured; 236 s for 50 before


def test_a_differing_claim_restarts_the_rounds_only_under_ip() -> None:
    assert preset("ip").goset_reset_on_claim
    assert not preset("default").goset_reset_on_claim  # keys travel as novelties there


def test_fifty_feeds_replicate_within_seconds_of_virtual_time() -> None:
    mesh, a, b = _ip_pair(seed=4)
    expected = {author(a, 2000 + i, [f"post {j}".encode() for j in range(20)]).fid: 20
                for i in range(50)}
    took = mesh.run_until(lambda: converged([b], expected), 600)
    assert took < 30


def test_under_ip_the_next_request_waits_until_the_answers_pause() -> None:
    # answers to one WANT stream in over TCP for a while; a request sent meanwhile asks
    # again for what is on its way and is answered twice (100 x 1,000 entries over
    # loopback WebSocket: 2.95 frames per item delivered; 1.03 with the pause)
    from gateway.replication.requests import RequestTimer

    for pol, waits in ((preset("ip"), True), (preset("reference"), False)):
        timer = RequestTimer(pol, 0.0, lambda: 0.0)
        timer.sent(0.0)
        timer.arrival(0.01)
        after_first = timer.next_at
        t = 0.02
        while t < 1.0:  # an answer every 10 ms for a second
            timer.arrival(t)
            t += 0.01
        if waits:
            assert timer.next_at >= 0.99 + timer.rtt / 4 > after_first
        else:  # the reference asks every rtt after its request, answers coming or not
            assert timer.next_at == after_first
