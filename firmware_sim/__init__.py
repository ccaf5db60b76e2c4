"""Simulation side of the project: the simulated LoRa dongle (``firmware_sim.dongle``)
and, later, the mesh simulator (see README.md)."""
