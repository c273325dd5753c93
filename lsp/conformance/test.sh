#!/usr/bin/env bash
# Protocol conformance: builds soba-lsp, installs the pinned npm client
# libraries (npm ci) and runs the node test against the binary over stdio.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/soba-lsp-conformance.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
bin="$tmp/soba-lsp"
(cd "$root" && go build -o "$bin" ./cmd/soba-lsp)
cd "$here"
npm ci --no-audit --no-fund --loglevel=error
SOBA_LSP="$bin" node --test conformance.test.js
