#!/usr/bin/env bash
# Prints the path of GoReleaser v2.17.0, building it the first time with
# `go install` into ${XDG_CACHE_HOME:-$HOME/.cache}/soba-test/goreleaser-v2.17.0
# (its release binaries come from GitHub, which a test machine may not
# reach; the Go module proxy is the one source every machine here has). A
# goreleaser of that version on PATH is used as it is. Two runs at once
# build it once: the second waits on a lock.
#
#   packaging/goreleaser.sh            # the path, after building if needed
#
# The first build compiles GoReleaser's whole module graph: minutes on two
# cores. scripts/test.sh starts it early in the background at the lowest
# CPU priority, so it mostly uses time the other suites leave idle.
set -euo pipefail
want=2.17.0
if command -v goreleaser >/dev/null 2>&1 && goreleaser --version 2>/dev/null | grep -q "GitVersion: *v$want\$"; then
  command -v goreleaser
  exit 0
fi
cache=${XDG_CACHE_HOME:-$HOME/.cache}/soba-test
bin=$cache/goreleaser-v$want
mkdir -p "$cache"
(
  flock -w 1800 9 || { echo "goreleaser.sh: waited 30 minutes for $cache/goreleaser.lock" >&2; exit 1; }
  if [ -x "$bin/goreleaser" ] && "$bin/goreleaser" --version >/dev/null 2>&1; then exit 0; fi
  # GOFLAGS of the repository's tests (-mod=mod) do not apply to a module
  # installed at a version.
  GOFLAGS= GOBIN=$bin go install "github.com/goreleaser/goreleaser/v2@v$want" >&2
) 9>"$cache/goreleaser.lock"
echo "$bin/goreleaser"
