"""Simulation side of the project: the mesh simulator and the simulated LoRa dongle.

``engine.Simulation`` runs real ``gateway.replication.Node`` objects over a modelled
LoRa channel (``channel``, ``phy``), BLE and IP links (``links``) in virtual time;
``scenario`` reads TOML scenarios, ``runner`` builds and runs them, ``summary`` reads the
resulting captures, ``realtime`` bridges a simulated dongle (``dongle``) into the mesh
and ``cli`` adds ``tinyssb sim``. See docs/simulator.md.
"""

from gateway import accel as _accel

__path__ = _accel.extend(__path__, __name__)  # compiled modules first, when current
