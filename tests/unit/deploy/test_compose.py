"""docker-compose.yml is checked against the code, since no Docker engine runs here (Debian's
`docker-compose config` validates it too: tests/integration/deploy/test_compose.py)."""

from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import entry_point_names
from mars.config import PROJECT_ROOT, known_setting_env_names

COMPOSE_FILE = PROJECT_ROOT / "docker-compose.yml"
DOCKERFILE = PROJECT_ROOT / "Dockerfile"
INFRASTRUCTURE = {"kafka": 29092, "zookeeper": 2181, "redis": 6379}  # in the compose network
INFRASTRUCTURE |= {"schema-registry": 8080}  # in memory: no volume, not published as such
PUBLISHED = {"kafka": 9092, "zookeeper": 2181, "redis": 6379}  # on the host


def load_compose(path: Path = COMPOSE_FILE) -> dict[str, Any]:
    """The file with each `${VARIABLE:-default}` (the host ports) at its default."""
    data = yaml.safe_load(re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", path.read_text()))
    assert isinstance(data, dict)
    return data


def compose_problems(compose: dict[str, Any]) -> list[str]:
    """Everything in the compose file that disagrees with the code."""
    services: dict[str, Any] = compose.get("services", {})
    problems: list[str] = []
    for name, service in services.items():
        problems += [
            f"{name}: depends on unknown service {dependency!r}"
            for dependency in service.get("depends_on", [])
            if dependency not in services
        ]
        if "build" in service:
            problems += _mars_service_problems(name, service)
    for host, port in PUBLISHED.items():
        if host not in services:
            problems.append(f"missing infrastructure service {host!r}")
            continue
        if str(port) not in _published(services[host]):
            problems.append(f"{host}: port {port} is not published")
        if "healthcheck" not in services[host]:
            problems.append(f"{host}: no health check")
        if not services[host].get("volumes"):
            problems.append(f"{host}: its data is in no volume")
    if "healthcheck" not in services.get("schema-registry", {}):
        problems.append("schema-registry: missing, or no health check")
    return problems + _kafka_listener_problems(services.get("kafka", {}))


def _kafka_listener_problems(kafka: dict[str, Any]) -> list[str]:
    """Containers reach Kafka at kafka:<internal port>, host clients at 127.0.0.1:<published>."""
    advertised = str(kafka.get("environment", {}).get("KAFKA_ADVERTISED_LISTENERS", ""))
    wanted = [f"kafka:{INFRASTRUCTURE['kafka']}", f"127.0.0.1:{PUBLISHED['kafka']}"]
    return [f"kafka: does not advertise {a}" for a in wanted if a not in advertised]


def _mars_service_problems(name: str, service: dict[str, Any]) -> list[str]:
    """A service built from this project: a `mars` command, its dependencies and settings."""
    problems: list[str] = []
    command = service.get("command", [])
    if command[:1] != ["mars"] or len(command) < 2 or command[1] not in entry_point_names():
        problems.append(f"{name}: command {command} is not a `mars` entry point")
    depends_on = service.get("depends_on", {})
    unhealthy = [
        host
        for host in INFRASTRUCTURE
        if not isinstance(depends_on, dict)
        or depends_on.get(host, {}).get("condition") != "service_healthy"
    ]
    if unhealthy:
        problems.append(f"{name}: does not wait for {sorted(unhealthy)} to be healthy")
    env: dict[str, str] = service.get("environment", {})
    settings = known_setting_env_names()
    for variable, value in env.items():
        if variable.startswith("MARS_") and variable not in settings:
            problems.append(f"{name}: unknown setting {variable}")
        problems += [
            f"{name}: {variable} names {host} on a port it does not serve"
            for host, port in INFRASTRUCTURE.items()
            if f"{host}:" in str(value) and f"{host}:{port}" not in str(value)
        ]
    api_port = env.get("MARS_API__PORT")
    if api_port is not None and str(api_port) not in _published(service):
        problems.append(f"{name}: MARS_API__PORT {api_port} is not published")
    return problems


def _published(service: dict[str, Any]) -> list[str]:
    return [str(p).split(":")[-1] for p in service.get("ports", [])]


def test_compose_file_matches_the_code() -> None:
    assert compose_problems(load_compose()) == []


def test_the_image_carries_the_spark_kafka_jars_where_the_settings_look() -> None:
    dockerfile = DOCKERFILE.read_text()
    assert "COPY scripts/jars /build/jars" in dockerfile  # the same pom.xml `make setup` uses
    assert "-f /build/jars/spark-kafka/pom.xml" in dockerfile
    assert "MARS_LOCAL__JARS_DIR=/opt/mars/jars" in dockerfile
    assert "COPY --from=jars /jars /opt/mars/jars" in dockerfile  # spark-kafka/ beneath it


def test_the_image_copies_every_installed_package() -> None:
    """`pip install .` in the image installs what pyproject's package list finds in the build
    context: a top-level package the Dockerfile does not copy would be missing at run time."""
    pyproject = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {pattern.removesuffix("*") for pattern in patterns}
    copied = set(re.findall(r"^COPY (\w+) \./\1$", DOCKERFILE.read_text(), flags=re.M))
    assert packages <= copied, sorted(packages - copied)


def test_every_mars_role_is_in_compose() -> None:
    commands = [s.get("command", []) for s in load_compose()["services"].values()]
    roles = [c[1] for c in commands if c[:1] == ["mars"]]
    assert roles.count("mapper") == 2
    assert roles.count("reducer") == 2
    assert roles.count("api") == 1


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda c: c["services"]["mapper-1"].update(command=["mars", "mapr"]), "entry point"),
        (
            lambda c: c["services"]["reducer-1"]["environment"].update(MARS_REDUCER__TYPO="1"),
            "unknown setting MARS_REDUCER__TYPO",
        ),
        (lambda c: c["services"]["api"].update(depends_on=["kafka", "zk"]), "unknown service"),
        (lambda c: c["services"]["api"].update(depends_on=["kafka"]), "to be healthy"),
        (lambda c: c["services"]["redis"].pop("healthcheck"), "redis: no health check"),
        (lambda c: c["services"].pop("schema-registry"), "schema-registry: missing"),
        (
            lambda c: c["services"]["mapper-1"]["environment"].update(
                MARS_SCHEMA_REGISTRY__URL="http://schema-registry:8081/apis/ccompat/v7"
            ),
            "port it does not serve",
        ),
        (lambda c: c["services"]["kafka"].pop("volumes"), "kafka: its data is in no volume"),
        (
            lambda c: c["services"]["kafka"]["environment"].update(
                KAFKA_ADVERTISED_LISTENERS="PLAINTEXT://kafka:29092"
            ),
            "does not advertise 127.0.0.1:9092",
        ),
        (lambda c: c["services"]["api"].update(ports=["9999:9999"]), "not published"),
        (
            lambda c: c["services"]["mapper-2"]["environment"].update(
                MARS_REDIS__URL="redis://redis:6380/0"
            ),
            "port it does not serve",
        ),
    ],
)
def test_the_check_catches_inconsistencies(mutate: Any, expected: str) -> None:
    compose = copy.deepcopy(load_compose())
    for service in compose["services"].values():  # YAML anchors share dicts: unshare them
        if "environment" in service:
            service["environment"] = dict(service["environment"])
    mutate(compose)
    assert any(expected in problem for problem in compose_problems(compose))
