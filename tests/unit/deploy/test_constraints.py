"""scripts/constraints.txt pins what every set-up installs (`make setup`, the container images):
each of the project's dependencies has a pin, and the virtualenv running the tests was made
from those pins, so what CI tests is what the file says."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[3]


def pins() -> dict[str, str]:
    found = {}
    for line in (ROOT / "scripts" / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"not a pin: {line!r}"
            found[canonicalize_name(name)] = version.strip()
    return found


def test_every_dependency_of_the_project_is_pinned() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    pinned = pins()
    for text in wanted:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{requirement.name} has no pin in scripts/constraints.txt"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"{requirement.name}=={pinned[name]} does not meet pyproject's {requirement}"
        )


def test_the_virtualenv_holds_the_pinned_versions() -> None:
    for name, version in pins().items():
        assert metadata.version(name) == version, (
            f"{name} {metadata.version(name)} installed, {version} pinned: run make setup"
        )
