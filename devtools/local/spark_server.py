"""A Spark standalone cluster (one master, N workers) from the installed PySpark distribution.

The master and the workers are `spark-class org.apache.spark.deploy.{master.Master,
worker.Worker}` of the `pyspark` package: nothing is downloaded. Each worker offers a bounded
number of cores and memory; the daemons themselves run with a small heap
(`SPARK_DAEMON_MEMORY`). The environment is part of the command line (`env K=V ... spark-class`)
so `LocalCluster.restart` starts a killed worker again exactly as before. Health: the master's
web UI answers `/json/` with status ALIVE, and lists each worker ALIVE.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx

from devtools.local.http_client import local_http
from devtools.local.process_handle import ProcessHandle, ServiceError, free_port, spawn, wait_until

DAEMON_MEMORY = "256m"


def spark_home() -> Path:
    """The `pyspark` package folder, which holds Spark's `bin/` and `jars/`."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").is_file():
        raise ServiceError(f"spark: no bin/spark-class in {home}; run `make setup`")
    return home


def _command(main_class: str, *args: str) -> list[str]:
    env = shutil.which("env") or "/usr/bin/env"
    home = spark_home()
    return [
        env,
        f"SPARK_HOME={home}",
        f"SPARK_DAEMON_MEMORY={DAEMON_MEMORY}",
        "SPARK_NO_DAEMONIZE=1",
        str(home / "bin" / "spark-class"),
        main_class,
        *args,
    ]


def start_spark_master(run_dir: Path, *, timeout_s: float) -> tuple[ProcessHandle, str, int]:
    """Start the master; return its handle, its URL (`spark://127.0.0.1:<port>`) and the port
    of its web UI."""
    port, ui_port = free_port(), free_port()
    argv = _command(
        "org.apache.spark.deploy.master.Master",
        "--host", "127.0.0.1",
        "--port", str(port),
        "--webui-port", str(ui_port),
    )  # fmt: skip
    handle = spawn("spark-master", argv, log=run_dir / "logs" / "spark-master.log")
    wait_until(
        "spark-master",
        lambda: master_status(ui_port).get("status") == "ALIVE",
        handle=handle,
        timeout_s=timeout_s,
        what=f"status ALIVE on http://127.0.0.1:{ui_port}/json/",
    )
    return handle, f"spark://127.0.0.1:{port}", ui_port


def start_spark_worker(
    run_dir: Path,
    *,
    name: str,
    master_url: str,
    master_ui_port: int,
    cores: int,
    memory_mb: int,
    timeout_s: float,
) -> ProcessHandle:
    """Start a worker offering `cores` and `memory_mb` to `master_url`; return once the
    master lists it ALIVE."""
    work_dir = run_dir / "spark" / name
    work_dir.mkdir(parents=True, exist_ok=True)
    ui_port = free_port()
    argv = _command(
        "org.apache.spark.deploy.worker.Worker",
        master_url,
        "--host", "127.0.0.1",
        "--cores", str(cores),
        "--memory", f"{memory_mb}m",
        "--webui-port", str(ui_port),
        "--work-dir", str(work_dir),
    )  # fmt: skip
    handle = spawn(name, argv, log=run_dir / "logs" / f"{name}.log")
    wait_until(
        name,
        lambda: worker_alive(master_ui_port, ui_port),
        handle=handle,
        timeout_s=timeout_s,
        what=f"the master listing the worker of web UI port {ui_port} ALIVE",
    )
    return handle


def master_status(ui_port: int) -> dict[str, Any]:
    """The master's `/json/` answer ({} when it does not answer)."""
    try:
        response = local_http().get(f"http://127.0.0.1:{ui_port}/json/", timeout=2)
        response.raise_for_status()
        answer: dict[str, Any] = response.json()
    except (httpx.HTTPError, ValueError):
        return {}
    return answer


def worker_alive(master_ui_port: int, worker_ui_port: int) -> bool:
    """Whether the master lists the worker serving its UI on `worker_ui_port` as ALIVE."""
    workers = master_status(master_ui_port).get("workers", [])
    return any(
        str(w.get("webuiaddress", "")).endswith(f":{worker_ui_port}") and w.get("state") == "ALIVE"
        for w in workers
    )
