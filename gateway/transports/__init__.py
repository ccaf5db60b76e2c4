"""Links that move frames between the gateway and the outside world.

Transports know frames, never protocol: :mod:`.dongle_proto` is the sans-I/O codec of
the LoRa dongle's host protocol and :mod:`.serial_dongle` its asyncio serial link.
"""
