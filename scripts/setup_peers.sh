#!/usr/bin/env bash
# Idempotent, cached set-up of the benchmark peers (`make bench` runs it before `mars bench`):
# a virtualenv of its own with the pinned packages of scripts/peers-requirements.txt (Quix
# Streams), so that neither `make test` nor the project's .venv carries them.
# Skipped when its stamp matches the requirements; the venv's path is the one
# benchmarks/peers.py looks for (PEER_VENV).
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
say "ready ($venv)"
