"""Dongle main loop: USB serial <-> tssbfw.dongle.Dongle <-> LoRa radio.

Press the PRG/BOOT button (GPIO0) within 2 s after reset to skip the loop and keep the
MicroPython REPL (to update files with mpremote); otherwise Ctrl-C is disabled because
the serial line carries binary KISS frames.
"""

import select
import sys
import time

import machine
import micropython
from tssbfw import board
from tssbfw.dongle import Dongle
from tssbfw.hal import Clock, MachineHal
from tssbfw.radio import RadioError

WDT_TIMEOUT_MS = 8000
SAFE_WINDOW_MS = 2000
READ_CHUNK = 256


def safe_mode_requested() -> bool:
    button = machine.Pin(0, machine.Pin.IN, machine.Pin.PULL_UP)
    start = time.ticks_ms()
    while time.ticks_diff(time.ticks_ms(), start) < SAFE_WINDOW_MS:
        if button.value() == 0:
            return True
        time.sleep_ms(20)
    return False


def run() -> None:
    cfg = board.load()
    board.power_up(cfg, machine)
    led = board.Led(cfg, machine)
    radio = board.make_radio(cfg, MachineHal(cfg["radio"]))
    clock = Clock()
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    dongle = Dongle(radio, cfg["board"], clock.ms, stdout.write)
    micropython.kbd_intr(-1)
    wdt = machine.WDT(timeout=WDT_TIMEOUT_MS)
    try:
        radio.reset()
    except RadioError as exc:
        dongle.log(f"radio reset failed: {exc}")
    dongle.boot()
    poller = select.poll()
    poller.register(sys.stdin, select.POLLIN)
    buf = bytearray()
    while True:
        wdt.feed()
        while len(buf) < READ_CHUNK and poller.poll(0):
            buf += stdin.read(1)
        if buf:
            dongle.feed(bytes(buf))
            buf = bytearray()
        dongle.poll()
        led.show(clock.ms(), dongle.transmitting())
        poller.poll(1)  # idle for at most 1 ms until the host writes


if not safe_mode_requested():
    run()
