#!/usr/bin/env bash
# acpx, the headless ACP client from npm (pinned in package.json), drives
# `soba-lsp acp` as a user would: a one-shot prompt with a write and a
# permission, a named session (new, prompt, list, config option, close) and
# a cancelled prompt. Run by TestAcpxDrivesSobaACP, which starts the fake
# model and sets SOBA_LSP (the binary) and SOBA_WORKSPACE, with HOME and the
# XDG directories of the test.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
acpx="$here/node_modules/.bin/acpx"
ws=$SOBA_WORKSPACE
A=("$acpx" --agent "$SOBA_LSP acp" --cwd "$ws" --approve-all --ttl 60 --timeout 60)
fail() { echo "acpx: $*" >&2; exit 1; }

echo "== one-shot: a write, approved"
"${A[@]}" --format json exec "write the notes" >"$ws/../exec.json"
grep -q '"method":"session/request_permission"' "$ws/../exec.json" || fail "no permission was asked"
grep -q '"stopReason":"end_turn"' "$ws/../exec.json" || fail "the one-shot did not end its turn"
[ "$(cat "$ws/notes.txt")" = "hello from acpx" ] || fail "notes.txt: $(cat "$ws/notes.txt" 2>&1)"

echo "== a named session: new, prompt, list, config option"
id=$("${A[@]}" sessions new --name work 2>/dev/null | tail -1)
[[ $id == s_* ]] || fail "sessions new printed $id"
"${A[@]}" prompt -s work "say something" >"$ws/../prompt.txt" 2>&1
grep -q "Named session answer." "$ws/../prompt.txt" || fail "prompt: $(cat "$ws/../prompt.txt")"
"${A[@]}" sessions list | grep -q "^$id" || fail "sessions list lacks $id"
"${A[@]}" set -s work approval auto | grep -q "approval=auto" || fail "set approval auto"
grep -q '"approval":"auto"' "$ws/.soba/sessions/$id.jsonl" || fail "the change is not in the transcript"

echo "== a cancelled prompt"
"${A[@]}" prompt -s work "run the long one" >"$ws/../long.txt" 2>&1 &
long=$!
for _ in $(seq 100); do grep -q "sleep 30" "$ws/../long.txt" 2>/dev/null && break; sleep 0.2; done
"${A[@]}" cancel -s work
wait "$long" || true
grep -qi "cancel" "$ws/../long.txt" || fail "the long prompt was not cancelled: $(cat "$ws/../long.txt")"

echo "== close"
"${A[@]}" sessions close work >/dev/null
echo "acpx: all steps passed"
