"""The analysis on a real Spark standalone cluster: a master and two workers on 127.0.0.1.

The cluster is started from the installed pyspark's own ``spark-class`` (the same
classes a cluster installation runs), ``tinyssb analyze --master spark://...`` runs as a
person would type it, and every table must equal what the local session computed for
the same campaign. The cluster is stopped afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest

from .compare import report_rows, same
from .conftest import Campaign

HOST = "127.0.0.1"
START_TIMEOUT = 180.0  # seconds for the master and both workers to come up


def _java_missing() -> bool:
    home = os.environ.get("JAVA_HOME")
    return shutil.which("java") is None and not (home and Path(home, "bin", "java").exists())


pytestmark = pytest.mark.skipif(_java_missing(), reason="Java is not installed (no `java` on "
                                "PATH, no JAVA_HOME): Spark cannot run")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def _state(ui_port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://{HOST}:{ui_port}/json/", timeout=5) as reply:
        state: dict[str, Any] = json.load(reply)
        return state


@contextlib.contextmanager
def standalone_cluster(work: Path, workers: int = 2) -> Iterator[tuple[str, int]]:
    """A master and ``workers`` workers (one core each); yields (master URL, UI port)."""
    home = Path(pyspark.__file__).resolve().parent
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": HOST,
           "SPARK_DAEMON_MEMORY": "256m", "SPARK_LOG_DIR": str(work / "logs")}
    port, ui = _free_port(), _free_port()
    url = f"spark://{HOST}:{port}"
    daemons = [
        ["org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port),
         "--webui-port", str(ui)],
        *[["org.apache.spark.deploy.worker.Worker", url, "--host", HOST, "--cores", "1",
           "--memory", "1g", "--webui-port", str(_free_port()),
           "--work-dir", str(work / f"worker-{i}")] for i in range(workers)]]
    procs: list[tuple[subprocess.Popen[bytes], Path]] = []
    try:
        for i, argv in enumerate(daemons):
            log = work / f"daemon-{i}.log"
            with log.open("wb") as out:
                procs.append((subprocess.Popen([str(home / "bin" / "spark-class"), *argv],
                                               stdout=out, stderr=subprocess.STDOUT, env=env,
                                               stdin=subprocess.DEVNULL), log))
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            for proc, log in procs:
                if proc.poll() is not None:
                    pytest.fail(f"a Spark daemon exited: {log.read_text()[-2000:]}")
            with contextlib.suppress(OSError, ValueError):
                if _state(ui).get("aliveworkers") == workers:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"the cluster did not come up in {START_TIMEOUT:.0f} s")
            time.sleep(0.5)
        yield url, ui
    finally:
        for proc, _ in reversed(procs):
            proc.terminate()
        for proc, _ in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_standalone_cluster_computes_what_local_mode_computes(
        campaign: Campaign, tmp_path: Path) -> None:
    assert campaign.rc == 0
    report = tmp_path / "report"
    with standalone_cluster(tmp_path / "cluster") as (url, ui):
        done = subprocess.run(
            [sys.executable, "-m", "gateway.cli", "analyze", str(campaign.out / "dataset"),
             "--out", str(report), "--master", url, "--quiet",
             "--conf", f"spark.driver.host={HOST}", "--conf", f"spark.driver.bindAddress={HOST}",
             "--conf", "spark.executor.memory=512m", "--conf", "spark.driver.memory=1g",
             "--conf", "spark.cores.max=2", "--conf", "spark.sql.shuffle.partitions=2",
             "--conf", "spark.ui.enabled=false"],
            check=False, capture_output=True, text=True, timeout=600,
            env={**os.environ, "SPARK_LOCAL_IP": HOST})
        apps = _state(ui)["completedapps"] + _state(ui)["activeapps"]
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # --quiet: not one line from the JVM either
    assert [a["name"] for a in apps] == ["tinyssb-analyze"]  # it ran on this cluster
    assert done.stdout.splitlines()[0] == campaign.stdout.splitlines()[0]
    for name in campaign.summary["tables"]:
        cluster, local = report_rows(report, name), report_rows(campaign.out, name)
        assert len(cluster) == len(local), name
        for got, want in zip(cluster, local, strict=True):
            assert same(got, want), (name, got, want)
    with pytest.raises(OSError):  # the cluster is gone
        socket.create_connection((HOST, int(url.rsplit(":", 1)[1])), timeout=2).close()
