"""Compiled builds of the hot modules (the Node's replication code, the simulator's
engine and channel), used when present and current.

``make setup`` compiles the modules in :data:`MODULES` with mypyc into ``build/accel/``
(``scripts/build_accel.py``) and writes a manifest with the SHA-256 of every source it
compiled. On import, the packages that hold those modules put ``build/accel/PACKAGE`` in
front of their ``__path__`` (see :func:`extend`), but only when every source still
matches the manifest: edit one of them and everything runs as plain Python again until
the next ``make accel``. The compiled modules behave exactly like the sources (the
simulator writes the same capture bytes either way; ``tests/sim/test_accel.py``),
about 1.6 times faster. ``TINYSSB_PURE=1`` turns them off, e.g. to profile with cProfile,
which does not see inside compiled functions. See docs/simulator.md, "Speed".
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import sys
from pathlib import Path

__all__ = ["ACCEL_DIR", "ENV_PURE", "LAYOUT", "MODULES", "ROOT", "active", "build_problem", "extend",
           "source_digests"]

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[1]
ACCEL_DIR = ROOT / "build" / "accel"
ENV_PURE = "TINYSSB_PURE"
LAYOUT = 2  # of build/accel, as scripts/build_accel.py writes it (2: shared library in lib/)

# Paths relative to ROOT. Compiled classes cannot be subclassed by interpreted ones
# (FeedStore says it may be) nor have their methods replaced, so the stores' backends
# (memory.py, disk.py), whose classes tests patch, stay out.
MODULES: tuple[str, ...] = (
    "gateway/replication/admission.py",
    "gateway/replication/goset.py",
    "gateway/replication/events.py",
    "gateway/replication/faces.py",
    "gateway/replication/node.py",
    "gateway/replication/pacing.py",
    "gateway/replication/relay.py",
    "gateway/replication/repair.py",
    "gateway/replication/requests.py",
    "gateway/replication/sets.py",
    "gateway/store/base.py",
    "gateway/store/replica.py",
    "gateway/wire/crc.py",
    "gateway/wire/entry.py",
    "gateway/wire/goset.py",
    "gateway/wire/want.py",
    "firmware_sim/background.py",
    "firmware_sim/channel.py",
    "firmware_sim/engine.py",
    "firmware_sim/phy.py",
    "firmware_sim/summary.py",
)


def source_digests(root: Path = ROOT) -> dict[str, str]:
    """SHA-256 of every source in :data:`MODULES`, as the manifest records them."""
    return {rel: hashlib.sha256((root / rel).read_bytes()).hexdigest() for rel in MODULES}


def build_problem() -> str | None:
    """What is wrong with the compiled build (missing, for another Python, older than a
    source), or None when it matches the sources."""
    try:
        manifest = json.loads((ACCEL_DIR / "manifest.json").read_text())
    except FileNotFoundError:
        return "not built (make accel builds it)"
    except (OSError, ValueError) as exc:
        return f"unreadable manifest ({exc})"
    if manifest.get("layout") != LAYOUT:
        return "made by an older build script (make accel rebuilds it)"
    if manifest.get("cache_tag") != sys.implementation.cache_tag:
        return f"built for {manifest.get('cache_tag')}, this is {sys.implementation.cache_tag}"
    try:
        digests = source_digests()
    except OSError as exc:
        return f"a source is unreadable ({exc})"
    built = manifest.get("sources", {})
    if set(built) != set(digests):
        return "built from another list of modules (make accel rebuilds it)"
    changed = sorted(rel for rel, digest in digests.items() if built[rel] != digest)
    if changed:
        return (f"{', '.join(changed)} changed since the build "
                "(make accel rebuilds it)")
    return None


@functools.cache
def active() -> bool:
    """True when the compiled modules are current and in use in this process."""
    reason = f"{ENV_PURE} is set" if os.environ.get(ENV_PURE) else build_problem()
    if reason is not None:
        log.debug("compiled modules not used: %s; running plain Python", reason)
        return False
    # the modules' shared runtime library is a top-level module, alone in lib/ (the
    # build directory itself on sys.path would shadow the packages of an installed
    # checkout with namespace packages of its compiled files)
    lib = str(ACCEL_DIR / "lib")
    if lib not in sys.path:
        sys.path.append(lib)
    log.debug("using the compiled modules in %s", ACCEL_DIR)
    return True


def extend(path: list[str], package: str) -> list[str]:
    """``package``'s ``__path__`` with its compiled modules' directory in front, when
    the build is current (see the module docstring)."""
    if not active():
        return path
    extra = ACCEL_DIR.joinpath(*package.split("."))
    return [str(extra), *path] if extra.is_dir() else path
