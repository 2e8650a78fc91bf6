"""Where the benchmark peers live: a virtualenv of their own, outside the project's `.venv`,
and the Kafka connector jar of its Flink.

`make bench` builds both with `scripts/setup_peers.sh` (pinned in
`scripts/peers-requirements.txt`) before `mars bench`; `make test` never does. A run of
`mars bench` without them still measures Mars and Spark and notes the missing peer instead.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.subprocesses import PROJECT_ROOT

# The path scripts/setup_peers.sh builds (its `venv=`); keep the two equal.
PEER_VENV = PROJECT_ROOT / ".cache" / "venv-peers"
# The folder scripts/setup_peers.sh fetches the Flink Kafka SQL connector into (its `jars=`).
FLINK_JARS = PROJECT_ROOT / ".cache" / "jars-peers" / "flink-kafka"
FLINK_KAFKA_JAR_GLOB = "flink-sql-connector-kafka-*.jar"
SETUP_HINT = "`make bench` builds it (scripts/setup_peers.sh)"


class PeerUnavailable(RuntimeError):
    """A peer cannot run here: its virtualenv is missing or it exited before starting."""


def peer_python(venv: Path = PEER_VENV) -> Path:
    """The peers' interpreter; PeerUnavailable when the virtualenv is not there."""
    python = venv / "bin" / "python"
    if not python.exists():
        raise PeerUnavailable(f"no peer virtualenv at {venv} ({SETUP_HINT})")
    return python


def flink_kafka_jar(folder: Path = FLINK_JARS) -> Path:
    """The Flink Kafka SQL connector jar; PeerUnavailable when it is not there (or more than
    one is, and which one matches the installed Flink is not clear)."""
    jars = sorted(folder.glob(FLINK_KAFKA_JAR_GLOB))
    if len(jars) != 1:
        found = "no" if not jars else f"{len(jars)}"
        raise PeerUnavailable(
            f"{found} {FLINK_KAFKA_JAR_GLOB} in {folder}, one expected ({SETUP_HINT})"
        )
    return jars[0]
