#!/usr/bin/env bash
# Builds, with podman, every image docker-compose.podman.yml names, from a local Debian base
# instead of Docker Hub: the base from Debian's packages (debootstrap, `podman import`), Kafka,
# ZooKeeper and Apicurio Registry from the Maven artifacts `make setup` fetched, Redis from
# Debian, Mars with the native extension `make setup` built into .venv.
# Cached: the base is made once; each image carries the hash of its inputs (its Containerfile,
# its build context and its parent image) as a label and is rebuilt only when that changes.
# Needs `make setup` and scripts/setup_compose.sh first (`make test-compose` runs all three).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1mcompose-images:\033[0m %s\n' "$*"; }
fail() { printf 'compose-images: FAILED: %s\n' "$*" >&2; exit 1; }

base=localhost/mars-debian:bookworm
work=.cache/compose
mkdir -p "$work"

if ! podman image exists "$base"; then
  say "making the Debian base $base with debootstrap (about a minute)"
  rm -rf "$work/rootfs"
  debootstrap --variant=minbase bookworm "$work/rootfs" http://deb.debian.org/debian \
    >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; fail "debootstrap"; }
  tar -C "$work/rootfs" -c . | podman import -q --change 'CMD ["/bin/bash"]' - "$base" >/dev/null \
    || fail "podman import"
  rm -rf "$work/rootfs"
fi

site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
copy() { mkdir -p "$2" && cp -a "$1" "$2/"; }  # copy a file or folder into a context

# Build context of each image: only what its Containerfile copies.
stage() {
  local name=$1 ctx="$work/ctx/$1"
  rm -rf "$ctx" && mkdir -p "$ctx"
  case "$name" in
    runtime) ;;
    redis) copy deploy/podman/bin/redis-entrypoint "$ctx/bin" ;;
    kafka)
      copy .cache/jars/kafka "$ctx" && copy .cache/jars/kafka-tools "$ctx"
      copy deploy/podman/log4j2.properties "$ctx"
      for tool in kafka-run kafka-topics.sh kafka-broker-api-versions.sh; do
        copy "deploy/podman/bin/$tool" "$ctx/bin"
      done
      ;;
    zookeeper) copy .cache/jars/zookeeper "$ctx" && copy deploy/podman/bin/zkServer.sh "$ctx/bin" ;;
    schema-registry)
      copy .cache/jars/schema-registry "$ctx"
      # the Java 21+ the local registry runs on (`make setup` made sure there is one)
      local java
      java=$(.venv/bin/python -c \
        'from devtools.local.schema_registry_server import registry_java as j; print(j())')
      java=$(dirname "$(dirname "$(realpath "$java")")")
      mkdir -p "$ctx/java-runtime"
      tar -C "$java" -c --exclude=./lib/src.zip --exclude=./jmods --exclude=./man \
        --exclude=./include . | tar -C "$ctx/java-runtime" -x
      ;;
    mars)
      .venv/bin/python -c 'import tomllib; print("\n".join(
        tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' \
        >"$ctx/requirements.txt"
      cp scripts/constraints.txt "$ctx/constraints.txt"
      mkdir -p "$ctx/src"
      tar -c --exclude=__pycache__ pyproject.toml README.md mars mapper reducer spark api \
        devtools cli configs | tar -C "$ctx/src" -x
      mkdir -p "$ctx/native"
      cp -a "$site"/mars_native "$site"/mars_native-*.dist-info "$ctx/native/" \
        || fail "no mars_native in .venv: run 'make setup'"
      rm -rf "$ctx/native/mars_native/__pycache__"
      copy .cache/jars/spark-kafka "$ctx/jars"
      ;;
  esac
}

# name, tag, parent: each image after the one it is built from
images=(
  "runtime localhost/mars-runtime:bookworm $base"
  "redis localhost/mars-redis:7 $base"
  "kafka localhost/mars-kafka:4.1.1 localhost/mars-runtime:bookworm"
  "zookeeper localhost/mars-zookeeper:3.9 localhost/mars-runtime:bookworm"
  "schema-registry localhost/mars-schema-registry:3.3.3 localhost/mars-runtime:bookworm"
  "mars localhost/mars:podman localhost/mars-runtime:bookworm"
)
for entry in "${images[@]}"; do
  read -r name tag parent <<<"$entry"
  stage "$name"
  containerfile="deploy/podman/$name.Containerfile"
  inputs=$( {
    podman image inspect --format '{{.Id}}' "$parent"
    cat "$containerfile"
    tar -C "$work/ctx/$name" -c --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner .
  } | sha256sum | cut -c1-16)
  have=$(podman image inspect --format '{{index .Labels "mars.inputs"}}' "$tag" 2>/dev/null || true)
  if [ "$have" = "$inputs" ]; then
    continue
  fi
  say "building $tag"
  volumes=()
  if [ "$name" = mars ]; then
    # pip in the build uses the host's cache (the wheels `make setup` downloaded or built) and
    # the host's trust store (a proxy's certificate authority, if the machine has one)
    mkdir -p "$HOME/.cache/pip"
    volumes=(-v "$HOME/.cache/pip:/root/.cache/pip")
    [ -f /etc/ssl/certs/ca-certificates.crt ] \
      && volumes+=(-v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/host-ca.crt:ro \
                   --build-arg PIP_CERT=/etc/ssl/certs/host-ca.crt)
  fi
  podman build --layers -q "${volumes[@]}" --label "mars.inputs=$inputs" -f "$containerfile" \
    -t "$tag" "$work/ctx/$name" >"$work/build-$name.log" 2>&1 \
    || { tail -30 "$work/build-$name.log" >&2; fail "building $tag (log $work/build-$name.log)"; }
done
rm -rf "$work/ctx"
say "images ready"
