#!/usr/bin/env bash
# Tests of the VS Code extension: type check, unit tests (vscode faked at the
# module boundary), the .vsix package, integration tests against the real
# soba-lsp over vscode-languageserver-protocol, and an end-to-end test in real
# VS Code (code-server + headless Chromium). Installs what it needs (npm ci;
# chromium and code-server's build dependencies with apt-get; code-server
# cached in ${XDG_CACHE_HOME:-$HOME/.cache}/soba-test/code-server). The last
# line is "N passed, N failed"; the exit status is non-zero on any failure.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# The Go tree the servers are built from (default: this checkout).
gotree=${SOBA_GO_TREE:-$repo}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/soba-test
work=$(mktemp -d "${TMPDIR:-/tmp}/soba-vscode-test.XXXXXX")
pids=()
passed=0
failed=0
skipped=0

cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

t0=$SECONDS
note() { echo "== vscode [$((SECONDS - t0))s]: $*"; }
pass() { passed=$((passed + 1)); echo "PASS $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
skip() { skipped=$((skipped + 1)); echo "SKIP $*"; }

# locked NAME CMD…: runs CMD holding an exclusive lock on $cache/NAME.lock, so
# two runs at once install the shared tools (apt, the caches) one after the
# other instead of breaking each other.
locked() {
  local name=$1
  shift
  mkdir -p "$cache"
  (flock -w 900 9 || { echo "waited 15 minutes for $cache/$name.lock"; exit 1; }; "$@") 9>"$cache/$name.lock"
}
summary() {
  echo "vscode: $passed passed, $failed failed, $skipped skipped"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}

# vitest_counts FILE adds the passed, failed and skipped tests of a vitest
# JSON report.
vitest_counts() {
  local counts p f k
  counts=$(node -e 'const r=require(process.argv[1]);console.log(r.numPassedTests, r.numFailedTests + (r.numFailedTestSuites||0), (r.numPendingTests||0) + (r.numTodoTests||0))' "$1" 2>/dev/null) || return 1
  read -r p f k <<<"$counts"
  passed=$((passed + p))
  failed=$((failed + f))
  skipped=$((skipped + k))
}

cd "$here"

# ---- dependencies --------------------------------------------------------
# npm ci, unless node_modules was installed by npm ci from this very lock file.
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat node_modules/.soba-lock-sum 2>/dev/null)" = "$lock_sum" ]; then
  note "node_modules is current with package-lock.json"
else
  note "npm ci"
  if ! npm ci --no-audit --no-fund >"$work/npm.log" 2>&1; then
    cat "$work/npm.log"; fail "npm ci"; summary
  fi
  echo "$lock_sum" >node_modules/.soba-lock-sum
fi

note "tsc --noEmit"
if npx tsc -p . --noEmit; then pass "typecheck"; else fail "typecheck"; fi

# ---- unit tests ----------------------------------------------------------
note "unit tests (vitest)"
npx vitest run test/unit --reporter=default --reporter=json --outputFile.json="$work/unit.json"
vitest_counts "$work/unit.json" || fail "unit tests produced no report"

# ---- package -------------------------------------------------------------
note "esbuild bundle and vsce package"
vsix=$work/soba-vscode.vsix
if node esbuild.mjs --production && npx vsce package --no-dependencies -o "$vsix" >"$work/vsce.log" 2>&1 \
  && grep -qa 'extension/dist/extension.js' "$vsix" && grep -qa 'extension/dist/webview.js' "$vsix" && grep -qa 'extension/package.json' "$vsix"; then
  pass "vsce package: $(basename "$vsix") ($(du -k "$vsix" | cut -f1) KiB)"
else
  cat "$work/vsce.log"; fail "vsce package"
fi

# ---- servers -------------------------------------------------------------
server=$work/soba-lsp
server_ready=
server_why=
if ! ls "$gotree"/cmd/soba-lsp/*.go >/dev/null 2>&1; then
  server_why="cmd/soba-lsp has no Go files yet"
elif ! (cd "$gotree" && go build -o "$server" ./cmd/soba-lsp) >"$work/build.log" 2>&1; then
  cat "$work/build.log"; fail "go build ./cmd/soba-lsp"; server_why="soba-lsp does not build"
fi

# start_fakemodel NAME [SCRIPT] runs the provider tests' fake model server
# with a script of this suite (default test/fixtures/fakemodel-script.json)
# on a free loopback port. It exits when its stdin closes, so
# stdin is a fifo whose write end this shell holds until it exits.
# Each consumer (integration, e2e) gets its own server NAME, because the
# script's replies are consumed in order.
fake_url=
start_fakemodel() {
  local name=$1 script=${2:-$here/test/fixtures/fakemodel-script.json} fm=$gotree/agent/provider/providertest/fakemodel fd
  fake_url=
  ls "$fm"/*.go >/dev/null 2>&1 || { echo "(no fake model server at $fm yet)"; return 0; }
  if [ ! -x "$work/fakemodel" ] && ! (cd "$gotree" && go build -o "$work/fakemodel" ./agent/provider/providertest/fakemodel) >"$work/fm-build.log" 2>&1; then
    cat "$work/fm-build.log"; fail "go build fakemodel"; return 1
  fi
  mkfifo "$work/fakemodel-$name.in"
  "$work/fakemodel" -script "$script" -addr 127.0.0.1:0 \
    -url-file "$work/fakemodel-$name.url" ${SOBA_FAKEMODEL_FLAGS:-} <"$work/fakemodel-$name.in" >"$work/fakemodel-$name.log" 2>&1 &
  pids+=($!)
  exec {fd}>"$work/fakemodel-$name.in"
  for _ in $(seq 1 100); do
    if [ -s "$work/fakemodel-$name.url" ]; then fake_url=$(head -1 "$work/fakemodel-$name.url"); echo "(fake model server for $name at $fake_url)"; return 0; fi
    sleep 0.1
  done
  cat "$work/fakemodel-$name.log"; fail "fake model server did not start"
}

if [ -x "$server" ]; then
  start_fakemodel integration
  mkdir -p "$work/probe-ws"
  node test/probe.cjs "$server" "$work/probe-ws" 2>"$work/probe.log"
  case $? in
  0) server_ready=1 ;;
  3) server_why="soba-lsp does not serve its commands yet (soba.budget or soba.session.info answers -32803 not available)" ;;
  *) cat "$work/probe.log"; fail "soba-lsp probe"; server_why="the probe failed" ;;
  esac
fi

# The scripted server: the project's lsp package (initialize, commands,
# $/progress, soba/* notifications, approvals on the wire) in front of the
# Neovim tests' scripted backend, whose "run: CMD" prompts ask for approval.
# The integration tests always run against it too (approvals); until the full
# soba-lsp serves its commands the e2e test runs against it.
scripted=
if ls "$gotree"/editors/neovim/tests/scriptedlsp/*.go >/dev/null 2>&1; then
  if (cd "$gotree" && go build -tags sobascripted -o "$work/scriptedlsp" ./editors/neovim/tests/scriptedlsp) >"$work/scripted.log" 2>&1; then
    scripted=$work/scriptedlsp
  else
    cat "$work/scripted.log"; fail "go build -tags sobascripted ./editors/neovim/tests/scriptedlsp"
  fi
fi

# ---- integration ---------------------------------------------------------
if [ -x "$server" ]; then
  note "integration tests against $server${server_ready:+ (serving)}"
  [ -n "$server_ready" ] || skip "integration: palette commands against soba-lsp: $server_why"
  SOBA_LSP=$server SOBA_LSP_READY=${server_ready:-0} SOBA_FAKE_MODEL_URL=$fake_url \
    npx vitest run test/integration --reporter=default --reporter=json --outputFile.json="$work/integration.json"
  vitest_counts "$work/integration.json" || fail "integration tests produced no report"
else
  skip "integration: $server_why"
fi
if [ -n "$scripted" ]; then
  note "integration tests against the lsp package + scripted backend"
  SOBA_LSP=$scripted SOBA_LSP_READY=1 SOBA_LSP_SCRIPTED=1 \
    npx vitest run test/integration --reporter=default --reporter=json --outputFile.json="$work/integration-scripted.json"
  vitest_counts "$work/integration-scripted.json" || fail "integration tests (scripted) produced no report"
fi

# ---- end to end in real VS Code ------------------------------------------
ensure_chromium() {
  [ -x /usr/bin/chromium ] && return 0
  note "apt-get install chromium"
  (export DEBIAN_FRONTEND=noninteractive; apt-get -o DPkg::Lock::Timeout=600 update -q && apt-get -o DPkg::Lock::Timeout=600 install -y -q chromium) >"$work/apt.log" 2>&1
  [ -x /usr/bin/chromium ] || { tail -20 "$work/apt.log"; return 1; }
}

cs=$cache/code-server/node_modules/.bin/code-server
ensure_code_server() {
  if [ -x "$cs" ] && "$cs" --version >/dev/null 2>&1; then return 0; fi
  note "installing code-server 4.100.3 into $cache/code-server (one time, about 2 minutes)"
  rm -rf "$cache/code-server"
  mkdir -p "$cache"
  if ! "$here/e2e/install-code-server.sh" "$cache/code-server" >"$work/cs-install.log" 2>&1; then
    tail -40 "$work/cs-install.log"; return 1
  fi
}

# Against the full soba-lsp, the e2e installs the .vsix of this platform
# (packaging/vsix.sh) carrying the server built above in bin/, with no
# soba.serverPath: the extension starts its bundled server, as a user's
# does after installing the platform .vsix.
e2e_server=
e2e_label=
e2e_vsix=$vsix
if [ -n "$server_ready" ]; then
  start_fakemodel e2e "$here/e2e/fakemodel-script.json"
  e2e_server=$server; e2e_label="the soba-lsp bundled in the .vsix of this platform${fake_url:+ + fake model}"
  if e2e_vsix=$("$repo/packaging/vsix.sh" --targets host --server "$server" --out "$work/vsix-host" 2>"$work/vsix-host.log" | tail -1) && [ -f "$e2e_vsix" ]; then
    pass "packaging/vsix.sh: $(basename "$e2e_vsix") carries the server"
  else
    cat "$work/vsix-host.log"; fail "packaging/vsix.sh --targets host"; e2e_vsix=
  fi
elif [ -n "$scripted" ]; then
  e2e_server=$scripted; e2e_label="lsp package + scripted backend"
  skip "e2e in VS Code against the full soba-lsp: $server_why"
fi

if [ -z "$e2e_server" ]; then
  skip "e2e in VS Code: no server to run against: $server_why"
elif [ ! -f "$e2e_vsix" ]; then
  fail "e2e in VS Code: no .vsix was built"
elif ! locked install ensure_chromium; then
  skip "e2e in VS Code: Chromium (Debian package chromium) cannot be installed on this machine"
elif ! locked install ensure_code_server; then
  fail "e2e in VS Code: code-server install"
else
  note "e2e in VS Code (code-server $("$cs" --version | head -1 | cut -d' ' -f1)) against $e2e_label"
  # Screenshots and logs of the last run stay in the cache for a look
  # afterwards. Each run writes its own directory, moved into place at the
  # end, so two runs at once do not delete each other's.
  last=${SOBA_E2E_OUT:-$cache/vscode-e2e-last}
  mkdir -p "$(dirname "$last")"
  shots=$(mktemp -d "$last.XXXXXX")
  # The bundled server is started by the extension itself; only the
  # scripted backend is named with soba.serverPath.
  serverpath=$e2e_server
  [ "$e2e_server" = "$server" ] && serverpath=
  if CS=$cs VSIX=$e2e_vsix SOBA_LSP=$serverpath FAKE_MODEL_URL=$fake_url OUT=$shots timeout 300 "$here/e2e/run-e2e.sh"; then e2e_ok=1; else e2e_ok=; fi
  rm -rf "$last" && mv -T "$shots" "$last" 2>/dev/null && shots=$last
  if [ -n "$e2e_ok" ]; then
    pass "e2e: chat, compaction, capsule, approval diff and rewind in VS Code against $e2e_label (screenshots in $shots)"
  else
    [ -f "$shots/code-server.log" ] && tail -20 "$shots/code-server.log"
    fail "e2e: chat, compaction, capsule, approval diff and rewind in VS Code against $e2e_label (screenshots in $shots)"
  fi
fi

# ---- Workspace Trust end to end in real VS Code -------------------------
# Against the full soba-lsp only (the scripted backend has no model
# layers): a restricted folder ignores the repository's model servers and
# program, and trusting it applies them (e2e/run-trust-e2e.sh).
if [ -z "$server_ready" ] || [ ! -x "$work/fakemodel" ]; then
  skip "e2e: Workspace Trust in VS Code: ${server_why:-no fake model server}"
elif [ ! -f "$vsix" ] || [ ! -x "$cs" ] || [ ! -x /usr/bin/chromium ]; then
  fail "e2e: Workspace Trust in VS Code: no .vsix, code-server or Chromium (see above)"
else
  note "e2e: Workspace Trust in VS Code (code-server, trust enabled)"
  last_trust=${SOBA_E2E_OUT:-$cache/vscode-e2e-last}-trust
  tshots=$(mktemp -d "$last_trust.XXXXXX")
  if CS=$cs VSIX=$vsix SOBA_LSP=$server FAKEMODEL=$work/fakemodel OUT=$tshots timeout 400 "$here/e2e/run-trust-e2e.sh"; then t_ok=1; else t_ok=; fi
  rm -rf "$last_trust" && mv -T "$tshots" "$last_trust" 2>/dev/null && tshots=$last_trust
  if [ -n "$t_ok" ]; then
    pass "e2e: Workspace Trust: a restricted folder ignores the repository's model servers and soba.serverPath, trusting it applies them (screenshots in $tshots)"
  else
    [ -f "$tshots/code-server.log" ] && tail -20 "$tshots/code-server.log"
    fail "e2e: Workspace Trust: a restricted folder ignores the repository's model servers and soba.serverPath, trusting it applies them (screenshots in $tshots)"
  fi
fi

note "done"
summary
