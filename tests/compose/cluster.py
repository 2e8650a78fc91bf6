"""docker-compose.yml run with podman-compose on the images scripts/compose_images.sh builds
(docker-compose.podman.yml), as a project of its own with its own host ports.

podman 4.3 (Debian 12) ignores `depends_on: {condition: service_healthy}` and runs health
checks only through systemd timers, which this machine lacks; `ComposeProject.up` therefore
starts the servers, runs their health checks itself until they pass, runs `create-topics`, and
starts the Mars services last: the order the compose file's conditions describe.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from mars.config import PROJECT_ROOT

COMPOSE_FILES = ("docker-compose.yml", "docker-compose.podman.yml")
SERVERS = ("kafka", "zookeeper", "redis", "schema-registry")
MARS_SERVICES = ("mapper-1", "mapper-2", "reducer-1", "reducer-2", "api")
PODMAN_COMPOSE = PROJECT_ROOT / ".venv" / "bin" / "podman-compose"
_ALL = {"container": ("-a",), "pod": (), "volume": (), "network": ()}  # `ls` of stopped ones too


@dataclass(frozen=True, slots=True)
class HostPorts:
    """The ports docker-compose.yml publishes on 127.0.0.1 (its `*_HOST_PORT` variables)."""

    kafka: int
    zookeeper: int
    redis: int
    schema_registry: int
    api: int

    def env(self) -> dict[str, str]:
        return {
            "KAFKA_HOST_PORT": str(self.kafka),
            "ZOOKEEPER_HOST_PORT": str(self.zookeeper),
            "REDIS_HOST_PORT": str(self.redis),
            "SCHEMA_REGISTRY_HOST_PORT": str(self.schema_registry),
            "API_HOST_PORT": str(self.api),
        }


@dataclass
class ComposeProject:
    """One compose project: `podman-compose -p <name> -f docker-compose.yml -f ...podman.yml`."""

    name: str
    ports: HostPorts
    timings: dict[str, float] = field(default_factory=dict)

    def compose(self, *args: str, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
        files = [arg for f in COMPOSE_FILES for arg in ("-f", str(PROJECT_ROOT / f))]
        return subprocess.run(
            [str(PODMAN_COMPOSE), "-p", self.name, *files, *args],
            cwd=PROJECT_ROOT,
            env={**os.environ, **self.ports.env()},
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )

    def up(self, *, timeout_s: float = 300) -> None:
        """Servers, then (once healthy) the topic, then the Mars services (module docstring)."""
        started = time.monotonic()
        self._up(*SERVERS)
        self.wait_healthy(SERVERS, timeout_s=timeout_s)
        self.timings["servers healthy"] = time.monotonic() - started
        self._up("create-topics")
        self._wait_exited_ok("create-topics", timeout_s=timeout_s)
        self._up(*MARS_SERVICES)
        self.wait_healthy(("api",), timeout_s=timeout_s)
        self.timings["all up"] = time.monotonic() - started

    def _up(self, *services: str) -> None:
        done = self.compose("up", "-d", "--no-deps", *services)
        if done.returncode != 0:
            raise AssertionError(
                f"podman-compose up {services} failed:\n{done.stdout}{done.stderr}"
            )

    def container(self, service: str) -> str:
        """The container of `service` (podman-compose names it <project>_<service>_1)."""
        return f"{self.name}_{service}_1"

    def wait_healthy(self, services: Sequence[str], *, timeout_s: float) -> None:
        """Run each service's health check until it passes (`podman healthcheck run`)."""
        deadline = time.monotonic() + timeout_s
        for service in services:
            while True:
                check = podman("healthcheck", "run", self.container(service), timeout_s=60)
                if check.returncode == 0:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"{service} not healthy after {timeout_s:.0f} s: {check.stdout}"
                        f"{check.stderr}\n{self.logs([service])}"
                    )
                time.sleep(2)

    def _wait_exited_ok(self, service: str, *, timeout_s: float) -> None:
        waited = podman("wait", self.container(service), timeout_s=timeout_s)
        if waited.stdout.strip() != "0":
            raise AssertionError(f"{service} exited with {waited.stdout}{self.logs([service])}")

    def kill(self, service: str) -> None:
        """SIGKILL the service's container, as a crash."""
        killed = podman("kill", self.container(service))
        assert killed.returncode == 0, killed.stderr

    def state(self, service: str) -> Mapping[str, str]:
        shown = podman(
            "inspect", "--format", "{{.State.Status}} {{.RestartCount}}", self.container(service)
        )
        status, _, restarts = shown.stdout.strip().partition(" ")
        return {"status": status, "restarts": restarts}

    def logs(self, services: Sequence[str] = (*SERVERS, *MARS_SERVICES), lines: int = 25) -> str:
        tails = []
        for service in services:
            shown = podman("logs", "--tail", str(lines), self.container(service))
            tails.append(f"--- {service}\n{shown.stdout}{shown.stderr}")
        return "\n".join(tails)

    def down(self) -> None:
        """Containers, network and volumes, whatever state the project is in."""
        self.compose("down", "-v", "-t", "5", timeout_s=180)
        label = f"io.podman.compose.project={self.name}"
        for kind in ("container", "pod", "volume", "network"):
            listed = podman(kind, "ls", *_ALL[kind], "-q", "--filter", f"label={label}")
            names = listed.stdout.split()
            if names:
                podman(kind, "rm", "-f", *names, timeout_s=120)

    def leftovers(self) -> list[str]:
        """What of the project is still there (after `down`, nothing)."""
        label = f"label=io.podman.compose.project={self.name}"
        return [
            f"{kind} {name}"
            for kind in ("container", "pod", "volume", "network")
            for name in podman(kind, "ls", *_ALL[kind], "-q", "--filter", label).stdout.split()
        ]


def podman(*args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=timeout_s, check=False
    )


@contextlib.contextmanager
def running(project: ComposeProject, *, timeout_s: float = 300) -> Iterator[ComposeProject]:
    """The project up; down (containers, network, volumes) when leaving, also on failure."""
    project.down()  # what a killed earlier run left
    try:
        project.up(timeout_s=timeout_s)
        yield project
    finally:
        project.down()
