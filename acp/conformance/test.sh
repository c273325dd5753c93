#!/usr/bin/env bash
# ACP conformance: installs the pinned official ACP TypeScript SDK, acpx and
# the published MCP server @modelcontextprotocol/server-everything (npm install of the lock),
# then runs the Go tests that need them: `soba-lsp acp` driven by the SDK
# (with the MCP server handed over in session/new; a client that offers its
# files and terminal), driven by acpx (acpx.sh), and the LSP mode with the
# same MCP server in its configuration.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
# Not `npm ci`: acpx's dependency @openclaw/fs-safe names optional platform
# packages that were never published (darwin, arm64, win32: 404), so no lock
# file can hold them and `npm ci` refuses the lock as out of sync. `npm
# install --no-save` installs the locked versions and leaves the lock as is.
npm install --no-save --no-audit --no-fund --loglevel=error
cd "$here/../.."
go test -count=1 -run 'TestACPWithOfficialClient|TestACPEditorDelegationWithOfficialClient|TestAcpxDrivesSobaACP|TestLSPModeRunsPublishedMCPServer' -v ./acp/conformance/ ./app/ | tail -40
