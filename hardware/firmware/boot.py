"""Runs before main.py: silence ESP-IDF log output, which would share the serial line."""

import esp

esp.osdebug(None)
