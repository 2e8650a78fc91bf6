"""docker-compose.yml is checked against the code, since no Docker engine runs here."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from mars.cli.main import entry_point_names
from mars.config import PROJECT_ROOT, known_setting_env_names

COMPOSE_FILE = PROJECT_ROOT / "docker-compose.yml"
INFRASTRUCTURE = {"kafka": 9092, "zookeeper": 2181, "redis": 6379}


def load_compose(path: Path = COMPOSE_FILE) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
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
    for host, port in INFRASTRUCTURE.items():
        if host not in services:
            problems.append(f"missing infrastructure service {host!r}")
        elif str(port) not in _published(services[host]):
            problems.append(f"{host}: port {port} is not published")
    return problems


def _mars_service_problems(name: str, service: dict[str, Any]) -> list[str]:
    """A service built from this project: a `mars` command, its dependencies and settings."""
    problems: list[str] = []
    command = service.get("command", [])
    if command[:1] != ["mars"] or len(command) < 2 or command[1] not in entry_point_names():
        problems.append(f"{name}: command {command} is not a `mars` entry point")
    missing = set(INFRASTRUCTURE) - set(service.get("depends_on", []))
    if missing:
        problems.append(f"{name}: does not depend on {sorted(missing)}")
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
