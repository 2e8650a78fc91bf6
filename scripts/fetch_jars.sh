# Sourced by scripts/setup.sh and scripts/setup_compose.sh (which define `say` and `fail`):
# `fetch_jars DIR` fetches the dependencies of each DIR/*/pom.xml from Maven Central into
# .cache/jars/<name>, skipped while the pom and the Maven settings are unchanged (a stamp); a
# distribution archive among them (the schema registry's Quarkus application) is unpacked.
fetch_jars() {
  local pom name target want archive
  for pom in "$1"/*/pom.xml; do
    name=$(basename "$(dirname "$pom")")
    target=".cache/jars/$name"
    want=$(cat "$pom" scripts/jars/settings.xml | sha256sum | cut -c1-16)
    if [ -f "$target/.stamp" ] && [ "$(cat "$target/.stamp")" = "$want" ]; then
      continue
    fi
    say "fetching $name jars from Maven Central"
    rm -rf "$target.tmp"
    mvn -q -B -s scripts/jars/settings.xml -f "$pom" dependency:copy-dependencies \
      -DoutputDirectory="$PWD/$target.tmp" >".cache/mvn-$name.log" 2>&1 \
      || { tail -20 ".cache/mvn-$name.log" >&2; fail "fetching the $name jars (log .cache/mvn-$name.log)"; }
    for archive in "$target.tmp"/*.tar.gz; do
      [ -e "$archive" ] || continue
      tar -xzf "$archive" -C "$target.tmp" && rm "$archive" || fail "unpacking $archive"
    done
    echo "$want" >"$target.tmp/.stamp"
    rm -rf "$target" && mv "$target.tmp" "$target"
  done
}
