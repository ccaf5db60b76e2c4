#!/usr/bin/env python3
"""Compile the hot modules (``gateway.accel.MODULES``) with mypyc into ``build/accel/``.

Usage: ``python scripts/build_accel.py [--force] [--optional]`` (``make accel``; ``make
setup`` and ``make test`` run it). Does nothing when the build is current (its manifest
lists the same source digests). The build goes to a directory next to ``build/accel``
and replaces it only when complete, so a failed or interrupted build leaves the previous
one (or none) in place. With ``--optional`` a failure (no C compiler, no Python headers,
no mypyc) is one warning line and exit 0: everything then runs as plain Python.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ["TINYSSB_PURE"] = "1"  # this process compiles the sources, it never runs them
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gateway.accel import ACCEL_DIR, LAYOUT, MODULES, ROOT, build_problem, source_digests


def build() -> float:
    """Compile into a fresh directory and put it in place; returns the seconds taken."""
    from mypyc.build import mypycify
    from setuptools import Distribution

    started = time.monotonic()
    digests = source_digests()  # what is compiled is what the manifest names
    ACCEL_DIR.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="accel-", dir=ACCEL_DIR.parent))
    try:
        stage = work / "out"
        os.chdir(ROOT)  # mypyc reads the mypy settings of pyproject.toml
        extensions = mypycify(list(MODULES), opt_level="3", target_dir=str(work / "c"))
        dist = Distribution({"name": "tinyssb-accel", "ext_modules": extensions})
        dist.script_name = "build_accel"
        dist.script_args = ["-q", "build_ext", "--build-lib", str(stage),
                            "--build-temp", str(work / "obj"),
                            "--parallel", str(os.cpu_count() or 1)]
        dist.parse_command_line()
        dist.run_commands()
        # the shared runtime library is a top-level module: it goes to lib/, the one
        # directory put on sys.path (build/accel itself would make its package folders
        # look like namespace packages to imports outside the checkout)
        lib = stage / "lib"
        lib.mkdir()
        for shared in stage.glob("*__mypyc*"):
            shared.rename(lib / shared.name)
        (stage / "manifest.json").write_text(json.dumps(
            {"layout": LAYOUT, "cache_tag": sys.implementation.cache_tag, "python": sys.version,
             "sources": digests}, indent=1) + "\n")
        old = work / "old"
        if ACCEL_DIR.exists():
            ACCEL_DIR.rename(old)
        stage.rename(ACCEL_DIR)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return time.monotonic() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="rebuild even when current")
    ap.add_argument("--optional", action="store_true",
                    help="a failed build is a warning (plain Python is used), not an error")
    args = ap.parse_args()
    if not args.force and build_problem() is None:
        print(f"compiled modules up to date ({ACCEL_DIR.relative_to(ROOT)})")
        return 0
    print(f"compiling {len(MODULES)} modules with mypyc into "
          f"{ACCEL_DIR.relative_to(ROOT)} (30-40 s) ...", flush=True)
    try:
        took = build()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 (mypyc, setuptools and the compiler fail in many ways; each is one line)
        what = f"build_accel: compiling failed ({type(exc).__name__}: {exc})"
        if args.optional:
            print(f"{what}; everything runs as plain Python (slower simulations)",
                  file=sys.stderr)
            return 0
        print(what, file=sys.stderr)
        return 1
    print(f"compiled in {took:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
