"""The running gateway's control socket: ``tinyssb status`` and ``tinyssb publish``.

A Unix stream socket ``gateway.sock`` in the data directory (owner-only). One JSON
object per line each way: a request ``{"cmd": "status"}`` or ``{"cmd": "publish",
"content": BASE64}`` gets one answer, ``{"ok": true, ...}`` or ``{"ok": false, "error":
TEXT}``. Only the owner of the data directory can connect, so there is no further
authentication.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["SOCKET_FILE", "ControlError", "ControlServer", "NotListeningError", "request",
           "request_holder"]

log = logging.getLogger(__name__)

SOCKET_FILE = "gateway.sock"
_MAX_LINE = 1 << 20

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class ControlError(Exception):
    """No gateway answers on the socket, or it answered with an error."""


class NotListeningError(ControlError):
    """Nothing listens on the data directory's control socket."""


class ControlServer:
    """Serves requests on ``path`` with ``handler`` (called on the event loop)."""

    def __init__(self, path: Path, handler: Handler) -> None:
        self.path = path
        self._handler = handler
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        if self.path.exists() or self.path.is_symlink():
            # the data-dir lock is ours, so whoever made this socket is gone
            self.path.unlink()
        old = os.umask(0o077)
        try:
            self._server = await asyncio.start_unix_server(self._serve, path=str(self.path),
                                                           limit=_MAX_LINE)
        finally:
            os.umask(old)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                try:
                    req = json.loads(line)
                    if not isinstance(req, dict):
                        raise TypeError("a request is a JSON object")
                    answer = self._handler(req)
                except (ValueError, KeyError, TypeError) as exc:
                    answer = {"ok": False, "error": str(exc)}
                writer.write(json.dumps(answer).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.LimitOverrunError, ValueError) as exc:
            log.debug("control connection ended: %s", exc)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def request(data_dir: Path, req: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
    """Send one request to the gateway running on ``data_dir``; its answer."""
    path = data_dir / SOCKET_FILE
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            raise NotListeningError(f"no gateway is running on {data_dir} (start one with "
                                    "`tinyssb run`)") from None
        except OSError as exc:
            raise ControlError(f"cannot reach the gateway on {path}: {exc.strerror}") from None
        try:
            sock.sendall(json.dumps(req).encode() + b"\n")
            buf = b""
            while not buf.endswith(b"\n"):
                part = sock.recv(65536)
                if not part:
                    break
                buf += part
        except TimeoutError:
            raise ControlError(f"the gateway on {data_dir} did not answer within "
                               f"{timeout:g} s") from None
    try:
        answer = json.loads(buf)
    except ValueError:
        raise ControlError(f"the gateway on {data_dir} closed the connection") from None
    if not isinstance(answer, dict) or not answer.get("ok"):
        err = answer.get("error") if isinstance(answer, dict) else answer
        raise ControlError(f"the gateway refused: {err}")
    return answer


def request_holder(data_dir: Path, req: dict[str, Any], wait: float = 15.0) -> dict[str, Any]:
    """:func:`request` to the gateway that holds ``data_dir``'s store lock: one that is
    still starting (the store is open, the control socket not yet) gets up to ``wait``
    seconds to listen."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return request(data_dir, req)
        except NotListeningError:
            if time.monotonic() >= deadline:
                raise ControlError(
                    f"a gateway holds {data_dir} but has not answered on "
                    f"{data_dir / SOCKET_FILE} for {wait:g} s: it is stuck starting or "
                    "stopping (its log says why); try again once it runs") from None
            time.sleep(0.1)
