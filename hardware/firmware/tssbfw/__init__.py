"""tinySSB LoRa dongle firmware (MicroPython on ESP32; the pure-logic modules run on CPython too).

Protocol: hardware/PROTOCOL.md. Modules:

- ``kiss``     KISS framing, streaming decoder that counts bad frames
- ``crc32``    the CRC32 trailer of tinySSB LoRa frames
- ``airtime``  LoRa time on air in microseconds (integer arithmetic)
- ``duty``     sliding-window duty-cycle accounting
- ``dongle``   the command loop (``Dongle``)
- ``sx1262``, ``sx1276``  radio drivers over an injected SPI/pin object
- ``hal``      that object for real boards (``machine.SPI`` and ``machine.Pin``)
- ``board``    board configuration, power-up, LED and radio construction
- ``simradio`` a radio without hardware (simulator and tests; not flashed)
"""

FW_VERSION = "0.1.0"
PROTOCOL_VERSION = 1
