#!/usr/bin/env bash
# Idempotent, cached set-up of the benchmark peers (`make bench` runs it before `mars bench`):
# a virtualenv of its own with the pinned packages of scripts/peers-requirements.txt (Quix
# Streams, PyFlink), so that neither `make test` nor the project's .venv carries them, and the
# Kafka SQL connector jar of that Flink from Maven Central (PyFlink ships no connector).
# Each step is skipped when its stamp matches; the paths are the ones benchmarks/peers.py looks
# for (PEER_VENV, FLINK_JARS).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1msetup peers:\033[0m %s\n' "$*"; }
fail() { printf 'setup peers: FAILED: %s\n' "$*" >&2; exit 1; }

venv=".cache/venv-peers"
requirements="scripts/peers-requirements.txt"
python=${PYTHON:-python3}
"$python" -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null \
  || fail "Python >= 3.11 is needed as '$python' (set PYTHON=...)"

mkdir -p .cache
stamp="$venv/.peers-installed"
want=$(sha256sum "$requirements" | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  say "creating $venv with $(grep -v '^#' "$requirements" | xargs)"
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv" || fail "python venv $venv"
  "$venv/bin/pip" install -q --upgrade pip >/dev/null || fail "pip upgrade in $venv"
  "$venv/bin/pip" install -r "$requirements" >.cache/pip-peers.log 2>&1 \
    || { tail -20 .cache/pip-peers.log >&2; fail "pip install -r $requirements (log .cache/pip-peers.log)"; }
  echo "$want" > "$stamp"
fi

# The connector built for the pinned apache-flink (Flink 2.2: connector 5.0.0-2.2); keep the two
# matching when either changes.
flink_kafka="org.apache.flink:flink-sql-connector-kafka:5.0.0-2.2"
jars=".cache/jars-peers/flink-kafka"
want=$(printf '%s' "$flink_kafka" | sha256sum | cut -c1-16)
if [ ! -f "$jars/.stamp" ] || [ "$(cat "$jars/.stamp")" != "$want" ]; then
  say "fetching $flink_kafka from Maven Central"
  rm -rf "$jars.tmp"
  mvn -q -B -s scripts/jars/settings.xml \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
    -Dartifact="$flink_kafka:jar" -DoutputDirectory="$PWD/$jars.tmp" \
    >.cache/mvn-flink-kafka.log 2>&1 \
    || { tail -20 .cache/mvn-flink-kafka.log >&2; fail "fetching $flink_kafka (log .cache/mvn-flink-kafka.log)"; }
  echo "$want" > "$jars.tmp/.stamp"
  rm -rf "$jars" && mv "$jars.tmp" "$jars"
fi
say "ready ($venv, $jars)"
