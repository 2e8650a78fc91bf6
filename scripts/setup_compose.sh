#!/usr/bin/env bash
# Idempotent set-up for running docker-compose.yml with podman on a machine without Docker Hub:
# Debian's podman and debootstrap, the containers.conf setting runc needs here, and
# podman-compose (PyPI) in .venv. `make setup` comes first (the venv, the jars, the native
# extension); this adds Kafka's tool jars. scripts/compose_images.sh then builds the images.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1msetup-compose:\033[0m %s\n' "$*"; }
fail() { printf 'setup-compose: FAILED: %s\n' "$*" >&2; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_packages=()
# aardvark-dns: containers on a compose network find each other by service name
for tool in podman:podman debootstrap:debootstrap newuidmap:uidmap slirp4netns:slirp4netns \
            netavark:netavark aardvark-dns:aardvark-dns; do
  command -v "${tool%%:*}" >/dev/null || [ -x "/usr/lib/podman/${tool%%:*}" ] \
    || apt_packages+=("${tool##*:}")
done
dpkg -s containernetworking-plugins >/dev/null 2>&1 || apt_packages+=(containernetworking-plugins)
if [ ${#apt_packages[@]} -gt 0 ]; then
  say "installing Debian packages: ${apt_packages[*]}"
  as_root apt-get update -qq || fail "apt-get update (needed for ${apt_packages[*]})"
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
    "${apt_packages[@]}" >/dev/null || fail "apt-get install ${apt_packages[*]}"
fi

# runc fails here setting the RLIMIT_NOFILE that podman asks for by default: with no default
# ulimits, containers start with the limits they inherit.
conf=/etc/containers/containers.conf
if ! grep -qs '^default_ulimits *= *\[\]' "$conf"; then
  say "setting default_ulimits = [] in $conf"
  as_root mkdir -p /etc/containers
  if grep -qs '^\[containers\]' "$conf"; then
    as_root sed -i '/^\[containers\]/a default_ulimits = []' "$conf"
  else
    printf '[containers]\ndefault_ulimits = []\n' | as_root tee -a "$conf" >/dev/null
  fi
fi

[ -x .venv/bin/python ] || fail ".venv is missing: run 'make setup' first"
if ! [ -x .venv/bin/podman-compose ]; then
  say "installing podman-compose into .venv"
  .venv/bin/pip install -q podman-compose >.cache/pip-podman-compose.log 2>&1 \
    || { tail -20 .cache/pip-podman-compose.log >&2; fail "pip install podman-compose"; }
fi
# Kafka's command-line tools for the Kafka image (the broker's jars are make setup's).
source scripts/fetch_jars.sh
fetch_jars deploy/podman/jars
podman info >/dev/null 2>&1 || fail "podman does not run here ('podman info' fails)"
say "ready"
