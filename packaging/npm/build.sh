#!/usr/bin/env bash
# Builds the npm packages of soba-lsp into OUT (default dist/npm): the main
# package `soba-lsp` (a launcher whose optional dependencies are the
# platform packages, the esbuild/biome pattern) and one `@soba-lsp/<os>-<cpu>`
# package per platform holding its static binary, then packs each with
# `npm pack`. Nothing is published.
#
#   packaging/npm/build.sh [--version V] [--out DIR] [--targets "linux-x64 darwin-arm64 ..."]
#
# --targets defaults to every platform; `--targets host` builds the one of
# this machine only.
set -euo pipefail
cd "$(dirname "$0")/../.."
version=${SOBA_VERSION:-0.1.0}
out=dist/npm
targets="linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64 win32-arm64"
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --targets) targets=$2; shift 2 ;;
    *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ "$targets" = host ]; then
  targets="$(node -p 'process.platform + "-" + process.arch')"
fi
rm -rf "$out"
mkdir -p "$out/pkg"
out=$(cd "$out" && pwd)

# Node's names for a platform, and Go's.
goos() { case "$1" in linux) echo linux ;; darwin) echo darwin ;; win32) echo windows ;; *) return 1 ;; esac; }
goarch() { case "$1" in x64) echo amd64 ;; arm64) echo arm64 ;; *) return 1 ;; esac; }

for t in $targets; do
  os=${t%-*} cpu=${t#*-}
  dir="$out/pkg/$t"
  exe=soba-lsp
  [ "$os" = win32 ] && exe=soba-lsp.exe
  mkdir -p "$dir/bin"
  CGO_ENABLED=0 GOOS=$(goos "$os") GOARCH=$(goarch "$cpu") \
    go build -trimpath -ldflags "-s -w -X main.version=v$version" -o "$dir/bin/$exe" ./cmd/soba-lsp
  cat >"$dir/package.json" <<JSON
{
  "name": "@soba-lsp/$t",
  "version": "$version",
  "description": "The soba-lsp binary for $os $cpu (installed by the soba-lsp package)",
  "license": "MIT",
  "repository": { "type": "git", "url": "git+https://github.com/soba-agent/soba-lsp.git" },
  "os": ["$os"],
  "cpu": ["$cpu"],
  "files": ["bin/$exe"],
  "preferUnplugged": true
}
JSON
  (cd "$out" && npm pack --silent "$dir" >/dev/null)
done

# The main package, its version and its optional dependencies' versions
# stamped.
main="$out/pkg/soba-lsp"
cp -R packaging/npm/soba-lsp "$main"
cp packaging/npm/README.md "$main/README.md"
node -e '
  const fs = require("fs"); const [file, v] = process.argv.slice(1);
  const p = JSON.parse(fs.readFileSync(file, "utf8"));
  p.version = v;
  for (const k of Object.keys(p.optionalDependencies)) p.optionalDependencies[k] = v;
  fs.writeFileSync(file, JSON.stringify(p, null, 2) + "\n");
' "$main/package.json" "$version"
(cd "$out" && npm pack --silent "$main" >/dev/null)
ls "$out"/*.tgz
