"""docker-compose.yml validated by Debian's `docker-compose config` (installed by `make setup`),
which needs no Docker engine; its consistency with the code: tests/unit/deploy/test_compose.py."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from mars.config import PROJECT_ROOT

COMPOSE_FILE = PROJECT_ROOT / "docker-compose.yml"


def test_docker_compose_validates_the_file_and_would_catch_a_mistake(tmp_path: Path) -> None:
    docker_compose = shutil.which("docker-compose")
    assert docker_compose, "Debian's docker-compose is missing: `make setup` installs it"
    ok = subprocess.run(
        [docker_compose, "-f", str(COMPOSE_FILE), "config", "-q"], capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(COMPOSE_FILE.read_text().replace("service_healthy", "service_ready", 1))
    refused = subprocess.run(
        [docker_compose, "-f", str(broken), "config", "-q"], capture_output=True, text=True
    )
    assert refused.returncode != 0 and "service_ready" in refused.stderr
