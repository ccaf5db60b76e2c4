"""The compiled (mypyc) modules behave exactly like their sources, and a stale build is
never used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway import accel

ROOT = Path(__file__).resolve().parents[2]

# every module of the list is loaded from where it should be, then a simulation runs
RUN = ("import importlib, sys; from gateway.accel import MODULES; "
       "from firmware_sim.runner import run_scenario; "
       "from firmware_sim.scenario import load_scenario; "
       "print(*(importlib.import_module(m[:-3].replace('/', '.')).__file__ for m in MODULES)); "
       "run_scenario(load_scenario('grid-25').with_(duration=1200.0), sys.argv[1])")


def _run(out: Path, pure: bool) -> list[str]:
    env = dict(os.environ)
    env.pop(accel.ENV_PURE, None)
    if pure:
        env[accel.ENV_PURE] = "1"
    done = subprocess.run([sys.executable, "-c", RUN, str(out)], check=True, cwd=ROOT,
                          env=env, timeout=300, capture_output=True, text=True)
    return done.stdout.split()


@pytest.mark.skipif(not accel.active(), reason="compiled modules not built or not current "
                    "(make accel builds them)")
def test_compiled_and_pure_simulations_write_the_same_capture(tmp_path: Path) -> None:
    compiled = _run(tmp_path / "compiled.cbor", pure=False)
    pure = _run(tmp_path / "pure.cbor", pure=True)
    assert len(compiled) == len(pure) == len(accel.MODULES)
    assert all(f.startswith(str(accel.ACCEL_DIR)) and f.endswith(".so") for f in compiled)
    assert all(f.endswith(".py") for f in pure), pure
    assert (tmp_path / "compiled.cbor").read_bytes() == (tmp_path / "pure.cbor").read_bytes()


def test_a_build_whose_sources_changed_is_not_used(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(accel.ENV_PURE, raising=False)
    monkeypatch.setattr(accel, "ACCEL_DIR", tmp_path)
    digests = accel.source_digests()
    manifest = {"layout": accel.LAYOUT, "cache_tag": sys.implementation.cache_tag,
                "sources": digests}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert accel.build_problem() is None

    changed = dict(digests, **{accel.MODULES[0]: "0" * 64})
    (tmp_path / "manifest.json").write_text(json.dumps(dict(manifest, sources=changed)))
    reason = accel.build_problem()
    assert reason is not None and accel.MODULES[0] in reason and "make accel" in reason

    (tmp_path / "manifest.json").write_text(json.dumps(dict(manifest, cache_tag="other-1")))
    assert "built for other-1" in (accel.build_problem() or "")

    more = dict(digests, **{"gateway/store/memory.py": "0" * 64})  # a module not compiled
    (tmp_path / "manifest.json").write_text(json.dumps(dict(manifest, sources=more)))
    assert "another list of modules" in (accel.build_problem() or "")

    (tmp_path / "manifest.json").write_text(json.dumps(dict(manifest, layout=1)))
    assert "older build script" in (accel.build_problem() or "")

    (tmp_path / "manifest.json").unlink()
    assert "not built" in (accel.build_problem() or "")


def test_pure_python_keeps_the_package_path_as_it_is(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    monkeypatch.setattr(accel, "active", lambda: False)
    assert accel.extend(["/src/pkg"], "gateway.replication") == ["/src/pkg"]
    monkeypatch.setattr(accel, "active", lambda: True)
    monkeypatch.setattr(accel, "ACCEL_DIR", tmp_path)
    (tmp_path / "gateway" / "replication").mkdir(parents=True)
    assert accel.extend(["/src/pkg"], "gateway.replication") == [
        str(tmp_path / "gateway" / "replication"), "/src/pkg"]
    assert accel.extend(["/src/w"], "gateway.wire") == ["/src/w"]  # nothing compiled there


def test_tinyssb_pure_turns_the_compiled_modules_off() -> None:
    code = ("import gateway.accel as a, gateway.replication.node as n; "
            "print(a.active(), n.__file__.endswith('.py'))")
    done = subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60,
                          env=dict(os.environ, **{accel.ENV_PURE: "1"}),
                          capture_output=True, text=True)
    assert done.stdout.split() == ["False", "True"]


def test_packages_come_from_the_checkout_when_it_is_not_on_the_path(tmp_path: Path) -> None:
    """As the `tinyssb` command runs: outside the checkout, through the editable install.
    The compiled build once put its own directory on sys.path, and `firmware_sim`
    became a namespace package of compiled files there, without its scenarios."""
    code = ("from gateway.cli import main; import firmware_sim; "
            "from firmware_sim.scenario import shipped_scenarios; "
            "print(firmware_sim.__file__, 'city-100' in shipped_scenarios())")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, env=env,
                          timeout=60, capture_output=True, text=True)
    assert done.stdout.split() == [str(ROOT / "firmware_sim" / "__init__.py"), "True"]
