#!/usr/bin/env bash
# Platform-specific .vsix builds of the VS Code extension, each carrying the
# static soba-lsp of its platform in bin/ (the extension starts it when
# soba.serverPath is unset; a set soba.serverPath still wins). Nothing is
# published.
#
#   packaging/vsix.sh [--out DIR] [--targets "linux-x64 darwin-arm64 ..." | --targets host] [--server FILE]
#
# --server bundles FILE, a soba-lsp already built for the one target given,
# instead of building it (the VS Code end-to-end test bundles the binary it
# built from this tree).
#
# The targets are VS Code's (linux-x64, linux-arm64, darwin-x64,
# darwin-arm64, win32-x64, win32-arm64), all by default; the version is the
# extension's (editors/vscode/package.json).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
out=dist/vsix
targets="linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64 win32-arm64"
server=
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --targets) targets=$2; shift 2 ;;
    --server) server=$2; shift 2 ;;
    *) echo "vsix.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$targets" = host ] && targets="$(node -p 'process.platform + "-" + process.arch')"
if [ -n "$server" ]; then
  [ "$(echo $targets | wc -w)" -eq 1 ] || { echo "vsix.sh: --server needs exactly one target, not: $targets" >&2; exit 2; }
  [ -x "$server" ] || { echo "vsix.sh: --server $server is not an executable file" >&2; exit 2; }
  server=$(cd "$(dirname "$server")" && pwd)/$(basename "$server")
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
ext=editors/vscode
version=$(node -p "require('./$ext/package.json').version")
[ -x "$ext/node_modules/.bin/vsce" ] || (cd "$ext" && npm ci --no-audit --no-fund --loglevel=error)

goos() { case "$1" in linux) echo linux ;; darwin) echo darwin ;; win32) echo windows ;; *) return 1 ;; esac; }
goarch() { case "$1" in x64) echo amd64 ;; arm64) echo arm64 ;; *) return 1 ;; esac; }
# bin/ is the extension's bundled server (ignored by git); whatever was
# there before is put back at the end.
saved=
if [ -d "$ext/bin" ]; then saved=$(mktemp -d "${TMPDIR:-/tmp}/soba-vsix-bin.XXXXXX"); cp -R "$ext/bin/." "$saved/"; fi
restore() { rm -rf "$repo/$ext/bin"; if [ -n "$saved" ]; then mkdir -p "$repo/$ext/bin"; cp -R "$saved/." "$repo/$ext/bin/"; rm -rf "$saved"; fi; }
trap restore EXIT

for t in $targets; do
  os=${t%-*} cpu=${t#*-}
  exe=soba-lsp
  [ "$os" = win32 ] && exe=soba-lsp.exe
  rm -rf "$ext/bin"
  mkdir -p "$ext/bin"
  if [ -n "$server" ]; then
    cp "$server" "$ext/bin/$exe"
  else
    CGO_ENABLED=0 GOOS=$(goos "$os") GOARCH=$(goarch "$cpu") \
      go build -trimpath -ldflags "-s -w -X main.version=v$version" -o "$ext/bin/$exe" ./cmd/soba-lsp
  fi
  (cd "$ext" && npx vsce package --no-dependencies --target "$t" -o "$out/soba-vscode-$t-$version.vsix" >/dev/null)
  echo "$out/soba-vscode-$t-$version.vsix"
done
