"""The gateway runtime: the replication Node driven by the real clock over real links.

:class:`Gateway` owns the data directory (store and identity), the Node, the links and
their faces, the capture file and the control socket. It is the :class:`LinkHost` of
every link: frames heard go to ``Node.receive``; after every event the loop asks the
Node for frames to send and hands them to their faces, then sleeps until the Node's next
deadline or the next frame, whichever comes first.

Persistence: entries we author are durable before they leave (the store fsyncs them);
replicated ones are checkpointed every ``flush_interval`` seconds and at shutdown. The
GOSET is rebuilt from the feeds on disk at start-up, so a restarted gateway resumes where
it stopped: the Node asks again for whatever is still missing.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import __version__
from ..capture import CaptureWriter, records_for_own, records_for_rx, records_for_tx
from ..isp import IspError, Role
from ..logsetup import ENTRIES, FRAMES
from ..replication.events import ChainComplete, FeedAdded, NewEntry
from ..replication.faces import Face
from ..replication.node import Node
from ..store import DiskStore, StoreError, StoreLockedError
from ..store.keys import KEY_FILE, load_or_create_key
from ..store.scrub import Scrub, ScrubFinding
from ..transports.base import Link, RadioMeta, SendFn
from ..wire.ident import format_id
from .config import GatewayConfig
from .control import SOCKET_FILE, ControlServer
from .diagnose import FaceWatch
from .isp_service import IspService, goset_filter, read_role

__all__ = ["Gateway"]

log = logging.getLogger("tinyssb.gateway")
entry_log = logging.getLogger(ENTRIES)  # -v
frame_log = logging.getLogger(FRAMES)  # -vv

#: How long a starting gateway waits for its data directory's lock. A command run
#: offline (`tinyssb isp contracts` while no gateway answers yet) holds it for a moment;
#: another gateway holds it for good, and after this wait the start fails naming it.
STORE_LOCK_WAIT_S = 10.0
STORE_LOCK_POLL_S = 0.05


def _what(fid: bytes | None, seq: int | None) -> str:
    if fid is None:
        return ""
    return f" {format_id(fid)[:12]}..#{seq}" if seq is not None else f" {format_id(fid)[:12]}.."


def _airtime(budget: tuple[float, float, float] | None) -> dict[str, float] | None:
    if budget is None:
        return None
    used, limit, window = budget
    return {"used_s": round(used, 3), "left_s": round(max(limit - used, 0.0), 3),
            "limit_s": round(limit, 3), "window_s": window}


def capture_meta(config: GatewayConfig, links: list[Link]) -> dict[str, Any]:
    """The capture header's free keys: the policy, the links and, with a dongle, the radio
    profile and its settings (the keys the simulator writes, so the analysis reads both)."""
    meta: dict[str, Any] = {"tinyssb": __version__, "policy": config.policy.name,
                            "links": sorted({link.kind for link in links})}
    if config.serial is not None:
        p = config.serial.params
        meta.update(profile=config.serial.profile, sf=p.sf, bandwidth_hz=p.bandwidth_hz,
                    frequency_hz=p.frequency_hz, tx_power_dbm=p.tx_power_dbm,
                    duty_cycle=config.serial.duty_cycle)
    return meta


class Gateway:
    """One running gateway on ``data_dir``. Use :meth:`run` (or ``open``/``serve``/``close``)."""

    def __init__(self, data_dir: Path, config: GatewayConfig, links: list[Link], *,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time, isp_role: Role | None = None) -> None:
        self.data_dir = data_dir
        self.isp_role = isp_role  # None: whatever role the data directory has, if any
        self.isp: IspService | None = None
        self.config = config
        self.links = links
        self._clock = clock
        self._wall_offset = wall() - clock()
        self.store: DiskStore | None = None
        self.node: Node | None = None
        self._sends: dict[str, SendFn] = {}
        self._faces: dict[str, Face] = {}
        self._started: list[Link] = []
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()
        self._capture: CaptureWriter | None = None
        self._control: ControlServer | None = None
        self.watch = FaceWatch()
        self._since: Counter[str] = Counter()  # activity since the last status line
        self._dirty = False
        self._flush_trouble: str | None = None
        self.scrub: Scrub | None = None
        self.started_at = 0.0

    # --- clock --------------------------------------------------------------------------
    def now(self) -> float:
        return self._clock()

    def unix(self, now: float) -> float:
        return now + self._wall_offset

    # --- lifecycle ------------------------------------------------------------------------
    async def open(self) -> None:
        """Take the data directory and start every link; LinkError/StoreError on failure."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.store = await self._take_store()
        created = False
        try:
            self.key, created = load_or_create_key(self.data_dir)
            if created:
                log.info("created a new identity %s", format_id(self.key.fid))
            now = self.now()
            self.started_at = now
            role = self.isp_role or read_role(self.data_dir)
            self.node = Node(self.store, policy=self.config.policy, rng=random.Random(),
                             name=self.config.name, now=now,
                             goset_filter=goset_filter(self.data_dir), own=(self.key.fid,))
            if role is not None:
                self.isp = IspService(self.node, self.key, self.data_dir, role, now,
                                      farewell_timeout=self.config.isp_farewell_timeout)
                log.info("tinyISP %s: %d contracts", role.value,
                         len(self.isp.engine.contracts()))
            if self.config.scrub_interval:
                self.scrub = Scrub(self.store, frozenset({self.key.fid}),
                                   self.config.scrub_batch)
            # our own feed joins the GOSET with its first entry (Node.publish), not before:
            # an empty key would only take one of the 100 places every implementation has
            if self.config.capture is not None:
                self._capture = CaptureWriter(self.config.capture, self.config.name,
                                              t0=self.unix(now), fid=self.key.fid,
                                              **capture_meta(self.config, self.links))
            self._control = ControlServer(self.data_dir / SOCKET_FILE, self._on_control)
            await self._control.start()
            for link in self.links:
                await link.start(self)
                self._started.append(link)
        except BaseException:
            await self.close()
            if created:  # a gateway that never ran leaves no identity behind
                (self.data_dir / KEY_FILE).unlink(missing_ok=True)
            raise
        log.info("gateway %s (tinyssb %s) up: %s, %d feeds, policy %s, links: %s",
                 self.config.name, __version__, format_id(self.key.fid), len(self.store), self.config.policy.name,
                 ", ".join(link.name for link in self.links) or "none")

    async def _take_store(self) -> DiskStore:
        """The data directory's store, once its lock is free (at most STORE_LOCK_WAIT_S)."""
        deadline = time.monotonic() + STORE_LOCK_WAIT_S
        waited = False
        while True:
            try:
                return DiskStore(self.data_dir)
            except StoreLockedError:
                if time.monotonic() >= deadline:
                    raise
                if not waited:
                    log.info("%s is locked by another tinyssb process; waiting up to %g s",
                             self.data_dir, STORE_LOCK_WAIT_S)
                    waited = True
                await asyncio.sleep(STORE_LOCK_POLL_S)

    async def close(self) -> None:
        """Stop the links, checkpoint the store, finish the capture. Safe to call twice."""
        for link in reversed(self._started):
            try:
                await link.close()
            except Exception as exc:  # noqa: BLE001 - one failing link must not keep the others open
                log.warning("closing %s: %s", link.name, exc)
        self._started.clear()
        if self._control is not None:
            await self._control.close()
            self._control = None
        if self._capture is not None:
            self._capture.close()
            log.info("capture written to %s (%d records)", self._capture.path,
                     self._capture.count)
            self._capture = None
        if self.store is not None:
            try:
                self.store.close()
            except (StoreError, OSError) as exc:  # disk full: the logs hold what arrived
                log.warning("final checkpoint failed (%s); the next start re-reads the logs",
                            exc)
            self.store = None

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    async def run(self) -> None:
        """open, serve until :meth:`stop` (SIGINT/SIGTERM in the CLI), close."""
        await self.open()
        try:
            await self.serve()
        finally:
            await self.close()

    async def serve(self) -> None:
        assert self.node is not None and self.store is not None
        cfg = self.config
        now = self.now()
        next_status = now + cfg.status_interval if cfg.status_interval else float("inf")
        next_flush = now + cfg.flush_interval
        next_scrub = now + cfg.scrub_interval if self.scrub is not None else float("inf")
        while not self._stop.is_set():
            now = self.now()
            self._pump(now)
            if now >= next_flush:
                self._flush()
                next_flush = now + cfg.flush_interval
            if now >= next_scrub:
                self._scrub_step(now)
                next_scrub = now + cfg.scrub_interval
            if now >= next_status:
                self._status_line(now)
                next_status = now + cfg.status_interval
            deadline = min(next_flush, next_status, next_scrub)
            for due in (self.node.next_deadline(),
                        self.isp.next_deadline() if self.isp is not None else None):
                if due is not None:
                    deadline = min(deadline, due)
            timeout = max(0.0, deadline - self.now())
            self._wake.clear()
            if timeout > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        await self._wake.wait()
            else:
                await asyncio.sleep(0)  # let the links run between busy rounds

    # --- the pump ---------------------------------------------------------------------------
    def _pump(self, now: float) -> None:
        assert self.node is not None
        events = self.node.drain_events()
        if self.isp is not None:
            self.isp.timer(now)
            events = self.isp.settle(events, now)
        for event in events:
            self._on_event(event, now)
        for out in self.node.frames_to_send(now):
            send = self._sends.get(out.face)
            if send is None:
                continue
            if send(out.frame):
                if frame_log.isEnabledFor(logging.INFO):
                    frame_log.info("tx %s %d B %s%s", out.face, len(out.frame),
                                   out.kind.value, _what(out.fid, out.seq))
                self.watch.sent(out.face)
                self._since["tx"] += 1
                if self._capture is not None:
                    self._capture_write([records_for_tx(self.unix(now), self.config.name,
                                                        out)])

    def _on_event(self, event: FeedAdded | NewEntry | ChainComplete, now: float) -> None:
        if isinstance(event, NewEntry) and event.own and self._capture is not None:
            assert self.store is not None
            self._capture_write(records_for_own(self.unix(now), self.config.name,
                                                event.fid, event.seq, self.store))
        if isinstance(event, FeedAdded):
            if event.fid != self.key.fid:
                log.info("new feed %s", format_id(event.fid))
            self._since["feeds"] += 1
        elif isinstance(event, NewEntry):
            self._since["entries"] += 1
            entry_log.info("entry %s #%d%s%s", format_id(event.fid), event.seq,
                           " (ours)" if event.own else "",
                           f", {event.n_chunks} chunks to come" if event.n_chunks else "")
        else:
            self._since["chains"] += 1

    # --- LinkHost -------------------------------------------------------------------------
    def face_up(self, face: Face, send: SendFn) -> None:
        assert self.node is not None
        now = self.now()
        if face.name in self._faces:
            self.node.remove_face(face.name)
        self.node.add_face(face, now)
        self._faces[face.name] = face
        self._sends[face.name] = send
        self.watch.opened(face.name, now)
        radio = f", LoRa SF{face.lora.sf} {face.lora.bandwidth_hz / 1000:g} kHz" if face.lora else ""
        log.info("face %s up (%s%s)", face.name, face.kind.value, radio)
        self._wake.set()

    def face_down(self, name: str, reason: str) -> None:
        if self._faces.pop(name, None) is None:
            return
        self._sends.pop(name, None)
        if self.node is not None:
            self.node.remove_face(name)
        self.watch.closed(name)
        log.info("face %s down: %s", name, reason)

    def frame_in(self, face: str, frame: bytes, meta: RadioMeta | None = None) -> None:
        node = self.node
        if node is None or face not in self._faces:
            return
        now = self.now()
        report = node.receive(now, face, frame, snr=meta.snr if meta is not None else None)
        if frame_log.isEnabledFor(logging.INFO):
            radio = ""
            if meta is not None and (meta.rssi is not None or meta.snr is not None):
                radio = f" (RSSI {meta.rssi} dBm, SNR {meta.snr} dB)"
            frame_log.info("rx %s %d B %s%s%s%s", face, len(frame),
                           report.kind.value,
                           _what(report.fid, report.seq), radio,
                           f", dropped: {report.drop.value}" if report.drop else "")
        self._since["rx"] += 1
        if report.stored:
            self._dirty = True
        self.watch.received(face, frame, self._faces[face].crc, report, now, meta)
        if self._capture is not None:
            rssi = meta.rssi if meta is not None else None
            snr = meta.snr if meta is not None else None
            self._capture_write(records_for_rx(self.unix(now), self.config.name, face,
                                               frame, report, rssi=rssi, snr=snr))
        self._wake.set()

    # --- persistence and reporting --------------------------------------------------------
    def _capture_write(self, records: list[Any]) -> None:
        assert self._capture is not None
        try:
            self._capture.write_all(records)
        except OSError as exc:
            self._drop_capture(exc)

    def _drop_capture(self, exc: OSError) -> None:
        """Disk full: the gateway goes on without its capture."""
        assert self._capture is not None
        log.warning("capture %s stopped: %s", self._capture.path, exc.strerror or exc)
        with contextlib.suppress(OSError):
            self._capture.close()
        self._capture = None

    def _flush(self) -> None:
        if self._capture is not None:
            try:
                self._capture.flush()
            except OSError as exc:
                self._drop_capture(exc)
        if self._dirty and self.store is not None:
            try:
                self.store.flush()
            except (StoreError, OSError) as exc:
                # disk full: what was written stays readable; the checkpoint waits
                reason = exc.strerror if isinstance(exc, OSError) else str(exc)
                if self._flush_trouble != reason:
                    log.warning("cannot checkpoint the store (%s); retrying every %g s",
                                reason, self.config.flush_interval)
                self._flush_trouble = reason
                return
            if self._flush_trouble is not None:
                log.info("store checkpointed again")
            self._flush_trouble = None
            self._dirty = False

    def _scrub_step(self, now: float) -> None:
        """One bounded step of the background scrub (``scrub_batch`` records)."""
        assert self.scrub is not None and self.node is not None
        try:
            finding = self.scrub.step()
        except (StoreError, OSError) as exc:  # a cut that cannot be written: next step
            log.warning("scrub: %s", exc.strerror if isinstance(exc, OSError) else exc)
            return
        if finding is not None:
            self._report_damage(finding, now)

    def _report_damage(self, finding: ScrubFinding, now: float) -> None:
        assert self.node is not None
        feed = format_id(finding.fid)
        if finding.cut_to is None:
            log.error("scrub: our own feed %s: %s; it is not cut here: run `tinyssb verify` "
                      "for details and, with the gateway stopped, `tinyssb verify --repair`",
                      feed, finding.problem)
            return
        self.node.feed_cut(finding.fid, now)
        self._wake.set()
        log.warning("scrub: feed %s: %s; cut to %d entries (the rest kept in "
                    "feeds/%s/quarantine/), fetched from peers again", feed,
                    finding.problem, finding.cut_to, finding.fid.hex())

    def _scrub_status(self) -> dict[str, Any] | None:
        if self.scrub is None:
            return None
        s = self.scrub.stats
        pos = self.scrub.position
        last = s.last_finding
        return {"interval_s": self.config.scrub_interval, "batch": self.scrub.batch,
                "passes": s.passes, "feeds_checked": s.feeds_checked,
                "records_checked": s.records_checked,
                "at": None if pos is None else {"feed": format_id(pos[0]),
                                                "entry": pos[1], "of": pos[2]},
                "damage_found": s.damage_found, "feeds_cut": s.feeds_cut,
                "last_finding": None if last is None else {
                    "feed": format_id(last.fid), "entry": last.seq,
                    "problem": last.problem, "cut_to": last.cut_to}}

    def _status_line(self, now: float) -> None:
        assert self.node is not None and self.store is not None
        s = self._since
        entries = sum(r.max_seq for r in self.store.replicas())
        faces = ", ".join(self._faces) or "no faces"
        log.info("status: %d feeds, %d entries; +%d entries, +%d feeds; rx %d tx %d; faces: %s",
                 len(self.store), entries, s["entries"], s["feeds"], s["rx"], s["tx"], faces)
        self._since.clear()
        for warn, text in self.watch.findings(now, len(self.node.goset), self.node.goset.state,
                                              3 * self.config.status_interval):
            (log.warning if warn else log.info)(text)

    def status(self) -> dict[str, Any]:
        """What ``tinyssb status`` shows."""
        assert self.node is not None and self.store is not None
        node = self.node
        now = self.now()
        peers = self.watch.peers(now)
        return {
            "version": __version__,
            "name": self.config.name,
            "id": format_id(self.key.fid),
            "uptime": round(self.now() - self.started_at, 1),
            "policy": self.config.policy.name,
            "feeds": len(self.store),
            "entries": sum(r.max_seq for r in self.store.replicas()),
            "missing_chunks": sum(r.missing_chunks() for r in self.store.replicas()),
            "goset": {"keys": len(node.goset), "state": node.goset.state.hex()[:16]},
            "faces": [{"name": name, "kind": face.kind.value,
                       "link": self._face_link_name(name),
                       "queue": node.queue_length(name),
                       "airtime": _airtime(node.airtime_budget(name, now)),
                       **peers.get(name, {})}
                      for name, face in self._faces.items()],
            "links": [{"kind": link.kind, "name": link.name, **link.describe()}
                      for link in self._started],
            "node": {"rx": node.stats.rx, "tx": node.stats.tx,
                     "rx_kinds": dict(node.stats.rx_kinds),
                     "tx_kinds": dict(node.stats.tx_kinds),
                     "entries_stored": node.stats.entries_stored,
                     "chunks_stored": node.stats.chunks_stored,
                     # entries whose side chain exceeds max_chain_chunks: stored without it
                     "chains_ignored": self.store.chains_ignored,
                     "drops": dict(node.stats.drops),
                     "airtime": round(node.stats.airtime, 3)},
            "capture": str(self.config.capture) if self.config.capture else None,
            "scrub": self._scrub_status(),
            "isp": ({"role": self.isp.role.value,
                     "contracts": len(self.isp.engine.contracts())}
                    if self.isp is not None else None),
        }

    def _face_link_name(self, face: str) -> str | None:
        for link in self._started:
            if face in link.describe().get("peers", []):
                return link.name
        return None

    # --- control --------------------------------------------------------------------------
    def _on_control(self, req: dict[str, Any]) -> dict[str, Any]:
        cmd = req.get("cmd")
        if cmd == "status":
            return {"ok": True, **self.status()}
        if cmd == "publish":
            assert self.node is not None
            content = base64.b64decode(str(req["content"]), validate=True)
            try:
                entry = self.node.publish(self.key, content, self.now())
            except (StoreError, OSError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                return {"ok": False, "error": f"cannot publish: {reason}"}
            log.info("published #%d (%d B) on request", entry.seq, len(content))
            self._wake.set()
            return {"ok": True, "seq": entry.seq, "id": format_id(self.key.fid)}
        if cmd == "isp":
            if self.isp is None:
                return {"ok": False, "error": "this gateway runs no tinyISP; stop it and "
                        "run `tinyssb isp serve` (ISP) or `tinyssb isp onboard ISP` (client)"}
            try:
                answer = self.isp.handle(req, self.now())
            except IspError as exc:
                return {"ok": False, "error": str(exc)}
            self._wake.set()
            return answer
        raise ValueError(f"unknown request {cmd!r}; known: status, publish, isp")
