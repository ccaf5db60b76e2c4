"""The CLI's one error for mistakes at the keyboard, shared by every ``tinyssb`` command
(gateway, simulator, analysis): printed as one line, exit code 2."""

from __future__ import annotations

__all__ = ["EXIT_USER_ERROR", "UserError"]

EXIT_USER_ERROR = 2


class UserError(Exception):
    """A mistake at the keyboard: printed as one line, exit code 2."""
