"""What differs between MicroPython and CPython, in one place."""

try:
    from micropython import const
except ImportError:  # CPython

    def const(value: int) -> int:
        """MicroPython's compile-time constant marker; the identity on CPython."""
        return value


__all__ = ["const"]
