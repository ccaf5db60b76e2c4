"""The real-time bridge: a gateway Node behind DongleLink, on the simulated dongle's pty,
receives the feeds of a simulated mesh (and the mesh hears the gateway)."""

from __future__ import annotations

import asyncio
import random
import threading

from firmware_sim.engine import Simulation
from firmware_sim.realtime import DongleBridge
from gateway.replication import Face, Node, preset
from gateway.store.memory import MemoryStore
from gateway.transports.serial_dongle import DongleLink
from gateway.wire.lora import profile

PARAMS = profile("EU868.c")  # 500 kHz: a full frame is 51 ms on air
# quicker first rounds than the default policy, so the test takes about two seconds
QUICK = preset("default").with_(goset_interval_min=1.0, rtt_initial=0.5)
LIMIT = 30.0  # seconds of wall clock before the test gives up


def test_gateway_behind_simulated_dongle_receives_the_mesh_feeds() -> None:
    sim = Simulation(seed=2, policy=QUICK)
    sim.add_node("m0", 0, 0, lora=PARAMS)
    sim.add_node("m1", 60, 0, lora=PARAMS)
    k0, k1 = sim.feed_key("m0"), sim.feed_key("m1")
    sim.publish_at(0.2, "m0", k0, b"hello from m0 " * 10)  # an entry with two chunks
    sim.publish_at(0.3, "m1", k1, b"m1 says hi")
    bridge = DongleBridge(sim, "gw", 30, 20, PARAMS)
    stop = threading.Event()

    async def gateway() -> Node:
        node = Node(MemoryStore(), policy=QUICK, rng=random.Random(5), name="gw")
        node.add_face(Face.dongle("lora0", PARAMS), 0.0)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        async with DongleLink(bridge.path, radio=PARAMS, board="heltec_v3") as link:
            while not holds(node, (k0.fid, k1.fid)):
                now = loop.time() - t0
                for out in node.frames_to_send(now):
                    await link.send(out.frame)
                deadline = node.next_deadline()
                wait = 0.1 if deadline is None else min(0.1, max(0.005, deadline - now))
                try:
                    rx = await asyncio.wait_for(link.receive(), wait)
                except TimeoutError:
                    continue
                node.receive(loop.time() - t0, "lora0", rx.packet)
        return node

    async def bounded() -> Node:
        async with asyncio.timeout(LIMIT):
            return await gateway()

    with bridge:
        runner = threading.Thread(target=bridge.run, kwargs={"stop": stop}, daemon=True)
        runner.start()
        try:
            node = asyncio.run(bounded())
        finally:
            stop.set()
            runner.join(5)
    assert node.store.read_content(k0.fid, 1) == b"hello from m0 " * 10
    assert node.store.read_content(k1.fid, 1) == b"m1 says hi"
    assert bridge.sent > 0 and bridge.heard > 0  # the gateway asked, the mesh answered
    assert bridge.dongle.transmitted  # the dongle's radio really keyed up


def holds(node: Node, fids: tuple[bytes, ...]) -> bool:
    store = node.store
    return all(fid in store and store.replica(fid).max_seq == 1
               and store.replica(fid).missing_chunks() == 0 for fid in fids)
