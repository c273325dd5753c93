#!/usr/bin/env bash
# ACP conformance: installs the pinned official ACP TypeScript SDK (npm ci)
# and runs the Go test that builds soba-lsp and drives `soba-lsp acp` with it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
npm ci --no-audit --no-fund --loglevel=error
cd "$here/../.."
go test -count=1 -run 'TestACPWithOfficialClient' -v ./acp/conformance/ | tail -40
