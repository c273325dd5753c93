#!/usr/bin/env bash
# Platform-specific .vsix builds of the VS Code extension, each carrying the
# static soba-lsp of its platform in bin/ (the extension starts it when
# soba.serverPath is unset; a set soba.serverPath still wins). Nothing is
# published.
#
#   packaging/vsix.sh [--out DIR] [--targets "linux-x64 darwin-arm64 ..." | --targets host]
#
# The targets are VS Code's (linux-x64, linux-arm64, darwin-x64,
# darwin-arm64, win32-x64, win32-arm64), all by default; the version is the
# extension's (editors/vscode/package.json).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
out=dist/vsix
targets="linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64 win32-arm64"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --targets) targets=$2; shift 2 ;;
    *) echo "vsix.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$targets" = host ] && targets="$(node -p 'process.platform + "-" + process.arch')"
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
  CGO_ENABLED=0 GOOS=$(goos "$os") GOARCH=$(goarch "$cpu") \
    go build -trimpath -ldflags "-s -w -X main.version=v$version" -o "$ext/bin/$exe" ./cmd/soba-lsp
  (cd "$ext" && npx vsce package --no-dependencies --target "$t" -o "$out/soba-vscode-$t-$version.vsix" >/dev/null)
  echo "$out/soba-vscode-$t-$version.vsix"
done
