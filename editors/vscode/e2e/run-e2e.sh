#!/usr/bin/env bash
# End-to-end test in real VS Code: code-server (VS Code 1.100.3 in the browser)
# on 127.0.0.1 with a fresh profile, the built .vsix installed, a workspace
# whose .soba/config.json points at the fake model server (when given) and
# asks before writes, and headless Chromium driven by playwright-core
# (e2e.js) using the chat, the palette, compaction, capsules, an approval and
# rewind against soba-lsp.
#
# Environment: CS (code-server binary), VSIX, OUT (directory for logs and
# screenshots), FAKE_MODEL_URL (optional), SOBA_LSP (optional: the server
# binary, set as soba.serverPath). Without SOBA_LSP no soba.serverPath is
# set anywhere: VSIX must be a platform .vsix carrying bin/soba-lsp, and the
# run checks that the server the extension started is that bundled binary.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${CS:?code-server binary}" "${VSIX:?vsix}" "${OUT:?output dir}"
SOBA_LSP=${SOBA_LSP:-}
mkdir -p "$OUT"
W=$(mktemp -d "${TMPDIR:-/tmp}/soba-vscode-e2e.XXXXXX")
mkdir -p "$W/data/User" "$W/xdg" "$W/ws/.soba"
export XDG_CONFIG_HOME=$W/xdg XDG_DATA_HOME=$W/xdg XDG_CACHE_HOME=$W/xdg XDG_STATE_HOME=$W/xdg
# No marketplace lookups: the gallery points at a closed loopback port.
export EXTENSIONS_GALLERY='{"serviceUrl":"http://127.0.0.1:9/gallery","itemUrl":"http://127.0.0.1:9/item"}'
serverpath=
[ -n "$SOBA_LSP" ] && serverpath=", \"soba.serverPath\": \"$SOBA_LSP\""
cat >"$W/data/User/settings.json" <<JSON
{ "workbench.startupEditor": "none", "telemetry.telemetryLevel": "off", "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false, "update.mode": "none", "workbench.tips.enabled": false,
  "security.workspace.trust.enabled": false $serverpath }
JSON
# The server path is a fact of this machine: it is also a Machine (remote)
# setting, which the extension host reads on the server side, so a reloaded
# window finds it even while the browser's user settings are still loading.
mkdir -p "$W/data/Machine"
printf '{ %s }\n' "${serverpath#, }" >"$W/data/Machine/settings.json"
model=""
if [ -n "${FAKE_MODEL_URL:-}" ]; then
  model="\"model\": { \"provider\": \"openai\", \"baseURL\": \"$FAKE_MODEL_URL\", \"name\": \"fake-model\", \"apiKeyEnv\": \"SOBA_TEST_API_KEY\", \"contextWindow\": 65000, \"maxOutputTokens\": 8000 },"
fi
cat >"$W/ws/.soba/config.json" <<JSON
{ $model
  "compaction": { "keepRecentTokens": 200, "minReclaimableTokens": 100, "minSavingsRatio": 0.1, "timeoutMs": 15000 },
  "tools": { "approval": "${E2E_TOOLS_APPROVAL:-ask}" } }
JSON
{
  printf '# Notes\n\nThe end-to-end test opens this workspace.\n\n'
  # Long enough that the turn which reads it leaves history worth compacting.
  for i in $(seq 1 120); do echo "- Note $i: the parser keeps token counts per entry and the budget is checked before each inference."; done
} >"$W/ws/notes.md"

timeout 120 "$CS" --user-data-dir "$W/data" --extensions-dir "$W/exts" --install-extension "$VSIX" >"$OUT/install.log" 2>&1 \
  || { cat "$OUT/install.log"; exit 1; }
port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
# Pages of 4 entries: the reopened chat of this short session takes several, loaded by scrolling up.
SOBA_CHAT_PAGE_ENTRIES=4 timeout 300 "$CS" --bind-addr "127.0.0.1:$port" --auth none --disable-telemetry --disable-update-check \
  --disable-workspace-trust --user-data-dir "$W/data" --extensions-dir "$W/exts" "$W/ws" >"$OUT/code-server.log" 2>&1 &
cspid=$!
cleanup() {
  kill "$cspid" 2>/dev/null || true
  wait "$cspid" 2>/dev/null || true
  # The settings as the run left them, for a look after a failure.
  cp "$W/data/User/settings.json" "$OUT/user-settings.json" 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT
for _ in $(seq 1 120); do
  if node -e 'require("http").get(process.argv[1], (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on("error", () => process.exit(1))' \
    "http://127.0.0.1:$port/healthz"; then break; fi
  sleep 0.5
done
CS_URL="http://127.0.0.1:$port/?folder=$W/ws" SHOT_DIR=$OUT WORKSPACE=$W/ws timeout 180 node "$here/e2e.js"

# Which soba-lsp served the run: every soba-lsp process of this user that is
# running now (code-server and its extension host are still up).
servers=$(for exe in /proc/[0-9]*/exe; do t=$(readlink "$exe" 2>/dev/null) || continue; case "$t" in */soba-lsp) echo "$t" ;; esac; done | sort -u)
echo "soba-lsp processes running: ${servers:-none}"
if [ -z "$SOBA_LSP" ]; then
  bundled=$(echo "$servers" | grep -F "$W/exts/" | grep '/bin/soba-lsp$' || true)
  [ -n "$bundled" ] || { echo "no soba-lsp from the installed extension's bin/ is running (found: ${servers:-none})"; exit 1; }
  echo "the extension started its bundled server: $bundled"
fi
