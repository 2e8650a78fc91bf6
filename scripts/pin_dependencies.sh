#!/usr/bin/env bash
# Write scripts/constraints.txt again from .venv: the versions every `make setup` and container
# image installs. To take newer releases: upgrade .venv (`.venv/bin/uv pip install --python
# .venv/bin/python -U -e '.[dev]'`), run `make test`, then run this and commit the file.
set -euo pipefail
cd "$(dirname "$0")/.."
out=scripts/constraints.txt
{
  echo "# The versions every \`make setup\` and container image installs (\`-c\`), so that CI and every"
  echo "# machine get what was tested. Written by scripts/pin_dependencies.sh."
  .venv/bin/uv pip freeze --python .venv/bin/python --exclude-editable | grep -v '^mars-native'
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "pinned $(grep -vc '^#' "$out") packages in $out"
