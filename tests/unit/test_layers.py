"""The package layers read top-down (docs/architecture.md, "Layers"): a module imports only
from its own package or from layers below it, so the roles and tools never import each other.

    cli                                           entry points: the `mars` command
    benchmarks                                    the harness that drives and measures the roles
    api | mapper | reducer | spark | devtools     the roles and the dev tools, independent of
                                                  each other
    mars                                          the core every role shares
"""

from __future__ import annotations

import ast
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LAYERS: tuple[tuple[str, ...], ...] = (
    ("mars",),
    ("api", "mapper", "reducer", "spark", "devtools"),
    ("benchmarks",),
    ("cli",),
)
PACKAGES = tuple(package for layer in LAYERS for package in layer)


def layer_of(module: str) -> tuple[int, str] | None:
    """(rank, package) with rank 0 for the core; None for a module outside the project."""
    package = module.split(".")[0]
    for rank, layer in enumerate(LAYERS):
        if package in layer:
            return rank, package
    return None


def imports_of(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def project_modules() -> dict[str, list[str]]:
    """Every module of the project -> the modules it imports."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((PROJECT_ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(PROJECT_ROOT).with_suffix("").parts)
            modules[module.removesuffix(".__init__")] = imports_of(path)
    return modules


def violations(modules: dict[str, list[str]]) -> list[str]:
    found = []
    for module, imported in modules.items():
        mine = layer_of(module)
        assert mine is not None, module
        for name in imported:
            theirs = layer_of(name)
            if theirs is not None and theirs[1] != mine[1] and theirs[0] >= mine[0]:
                found.append(f"{module} imports {name}")
    return found


def test_layers_import_only_downwards() -> None:
    modules = project_modules()
    assert len(modules) > 100 and "reducer.unit_owner" in modules
    assert violations(modules) == []


def test_the_rule_sees_each_kind_of_violation() -> None:
    wrong = {
        "mars.store.seq_store": ["reducer.progress_record"],  # core -> role (upwards)
        "api.routes_cluster": ["reducer.coordination"],  # role -> role (sideways)
        "spark.backfill_job": ["mapper.batch_writer"],  # role -> role
        "devtools.local.cluster": ["mapper.mapper_process"],  # tool -> role
        "mars.tasks.spec": ["devtools.gen"],  # core -> tool
        "mapper.mapper_process": ["benchmarks.workload"],  # role -> harness
        "benchmarks.workload": ["cli.gen_command"],  # harness -> command
    }
    assert len(violations(wrong)) == len(wrong)
    right = {
        "cli.main": ["benchmarks.runner", "api.app", "devtools.local", "mars.config"],
        "benchmarks.ceiling": ["mapper.partition_batches", "devtools.gen", "mars.engine"],
        "reducer.reducer_process": ["reducer.unit_owner", "mars.store", "redis"],
        "mars.store.seq_store": ["mars.store.keys"],
    }
    assert violations(right) == []
