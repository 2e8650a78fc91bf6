"""Where the benchmark peers live: a virtualenv of their own, outside the project's `.venv`.

`make bench` builds it with `scripts/setup_peers.sh` (pinned in `scripts/peers-requirements.txt`)
before `mars bench`; `make test` never does. A run of `mars bench` without it still measures
Mars and Spark and notes the missing peer instead.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.subprocesses import PROJECT_ROOT

# The path scripts/setup_peers.sh builds (its `venv=`); keep the two equal.
PEER_VENV = PROJECT_ROOT / ".cache" / "venv-peers"
SETUP_HINT = "`make bench` builds it (scripts/setup_peers.sh)"


class PeerUnavailable(RuntimeError):
    """A peer cannot run here: its virtualenv is missing or it exited before starting."""


def peer_python(venv: Path = PEER_VENV) -> Path:
    """The peers' interpreter; PeerUnavailable when the virtualenv is not there."""
    python = venv / "bin" / "python"
    if not python.exists():
        raise PeerUnavailable(f"no peer virtualenv at {venv} ({SETUP_HINT})")
    return python
