#!/usr/bin/env bash
# Tests of the Neovim plugin, on Neovim 0.7 (Debian's `neovim`, installed with
# apt-get when missing), on Neovim 0.10 (Debian trixie's packages unpacked
# into a cache dir and run with trixie's own loader; the system is not
# changed) and on Debian unstable's Neovim (0.11 or later, the same way) for
# lsp/soba.lua. Per version: unit tests that need no server, then end-to-end tests
# against the real soba-lsp and a fake model server, when the server already
# answers soba.budget (a clear SKIP line otherwise). Every nvim run is bounded
# by `timeout`. The last line is "N passed, N failed, N skipped".
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/soba-test
work=$(mktemp -d "${TMPDIR:-/tmp}/soba-nvim-test.XXXXXX")
results=$work/results
: >"$results"
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL $*" | tee -a "$results"; }

# locked NAME CMD…: runs CMD holding an exclusive lock on $cache/NAME.lock, so
# two runs at once install the shared tools (apt, the caches) one after the
# other instead of breaking each other.
locked() {
  local name=$1
  shift
  mkdir -p "$cache"
  (flock -w 900 9 || { echo "waited 15 minutes for $cache/$name.lock"; exit 1; }; "$@") 9>"$cache/$name.lock"
}
note() { echo "== $*"; }

ensure_nvim07() {
  if command -v nvim >/dev/null 2>&1; then return 0; fi
  note "installing neovim with apt-get"
  if ! apt-get -o DPkg::Lock::Timeout=600 install -y neovim >"$work/apt.log" 2>&1; then
    apt-get -o DPkg::Lock::Timeout=600 update >>"$work/apt.log" 2>&1 && apt-get -o DPkg::Lock::Timeout=600 install -y neovim >>"$work/apt.log" 2>&1
  fi
  command -v nvim >/dev/null 2>&1 || { cat "$work/apt.log"; return 1; }
}

# unpack_nvim NAME SUITE PACKAGE…: unpacks Debian SUITE's Neovim and the
# libraries it needs into $cache/NAME/root and writes a wrapper
# $cache/NAME/nvim that runs it through that suite's own dynamic loader (the
# system is not changed). It is built in a temporary directory and renamed
# into place, so a run killed halfway never leaves a cache that looks
# complete; callers hold the install lock.
unpack_nvim() {
  local name=$1 suite=$2
  shift 2
  note "unpacking Neovim from Debian $suite into $cache/$name"
  local tmp
  tmp=$(mktemp -d "$cache/$name.tmp.XXXXXX") || return 1
  local apt=$tmp/apt
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$tmp/root"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" \
    >"$apt/sources.list"
  local opts=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o APT::Architecture=amd64
    -o APT::Sandbox::User=root)
  (
    set -e
    apt-get "${opts[@]}" update -qq
    cd "$apt/debs"
    apt-get "${opts[@]}" download "$@"
    for d in *.deb; do dpkg-deb -x "$d" "$tmp/root"; done
  ) >"$work/$name.log" 2>&1 || { cat "$work/$name.log"; rm -rf "$tmp"; return 1; }
  rm -rf "$apt"
  local dir=$cache/$name
  local lib=$dir/root/usr/lib/x86_64-linux-gnu
  cat >"$tmp/nvim" <<WRAP
#!/bin/sh
export VIMRUNTIME=$dir/root/usr/share/nvim/runtime
exec $lib/ld-linux-x86-64.so.2 --library-path $lib:$lib/lua/5.1 $dir/root/usr/bin/nvim "\$@"
WRAP
  chmod +x "$tmp/nvim"
  rm -rf "$dir.old"
  if [ -e "$dir" ]; then mv "$dir" "$dir.old"; fi
  mv "$tmp" "$dir" && rm -rf "$dir.old"
  "$dir/nvim" --version | head -1
}

# ensure_nvim10: Debian trixie's Neovim 0.10; a cache that runs is reused.
nvim10=$cache/nvim10/nvim
ensure_nvim10() {
  if [ -x "$nvim10" ] && "$nvim10" --version 2>/dev/null | grep -q '^NVIM v0\.10'; then return 0; fi
  unpack_nvim nvim10 trixie neovim neovim-runtime libc6 libgcc-s1 libluajit-5.1-2 \
    libluajit-5.1-common libmsgpack-c2 libtree-sitter0.22 libunibilium4 libuv1t64 libvterm0 lua-lpeg lua-luv
}

# ensure_nvim_new: Debian unstable's Neovim, 0.11 or later (the
# vim.lsp.config / vim.lsp.enable of lsp/soba.lua). GitHub's release
# tarballs would do as well, but this machine reaches deb.debian.org only.
nvim_new=$cache/nvim-new/nvim
ensure_nvim_new() {
  if [ -x "$nvim_new" ] && "$nvim_new" --version 2>/dev/null | grep -Eq '^NVIM v0\.(1[1-9]|[2-9][0-9])'; then return 0; fi
  unpack_nvim nvim-new sid neovim neovim-runtime libc6 libgcc-s1 libluajit-5.1-2 libluajit-5.1-common \
    libtree-sitter0.26 libunibilium4 libutf8proc3 libuv1t64 libvterm0 libmsgpack-c2 lua-lpeg lua-luv
}

# run_nvim LABEL NVIM SPEC [SECONDS]: one headless run of tests/SPEC with
# fresh XDG dirs. A run that crashes or times out counts as one failure.
run_nvim() {
  local label=$1 bin=$2 spec=$3 secs=${4:-120}
  local x=$work/xdg-$label-${spec%.lua}
  mkdir -p "$x"/{data,state,cache,config}
  note "$label: $spec"
  local before
  before=$(wc -l <"$results")
  XDG_DATA_HOME=$x/data XDG_STATE_HOME=$x/state XDG_CACHE_HOME=$x/cache XDG_CONFIG_HOME=$x/config \
    SOBA_PLUGIN_DIR=$here SOBA_TEST_FILE=$here/tests/$spec SOBA_TEST_RESULTS=$results SOBA_TEST_LABEL=$label \
    timeout -k 5 "$secs" "$bin" --headless -u NONE -i NONE -n -c "luafile $here/tests/run.lua" </dev/null
  local rc=$?
  echo
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    fail "$label: $spec timed out after ${secs}s"
  elif [ "$rc" != 0 ] && [ "$(wc -l <"$results")" = "$before" ]; then
    fail "$label: $spec exited $rc without results"
  fi
}

# ---- servers for the end-to-end tests ------------------------------------
e2e_ready=
e2e_why=
prepare_e2e() {
  if ! ls "$repo"/cmd/soba-lsp/*.go >/dev/null 2>&1; then
    e2e_why="cmd/soba-lsp has no Go files yet"; return
  fi
  note "go build -o $work/soba-lsp ./cmd/soba-lsp"
  if ! (cd "$repo" && go build -o "$work/soba-lsp" ./cmd/soba-lsp) >"$work/build.log" 2>&1; then
    cat "$work/build.log"; fail "soba-lsp does not build"; e2e_why="soba-lsp does not build"; return
  fi
  local fm=$repo/agent/provider/providertest/fakemodel
  if ! ls "$fm"/*.go >/dev/null 2>&1; then
    e2e_why="the fake model server ($fm) does not exist yet"; return
  fi
  if ! (cd "$repo" && go build -o "$work/fakemodel" ./agent/provider/providertest/fakemodel) >"$work/build.log" 2>&1; then
    cat "$work/build.log"; fail "fakemodel does not build"; e2e_why="fakemodel does not build"; return
  fi
  start_fakemodel || { fail "the fake model server did not start"; e2e_why="fake model server did not start"; return; }
  make_workspace "$work/probe-ws"
  local rc
  SOBA_PLUGIN_DIR=$here SOBA_LSP=$work/soba-lsp SOBA_WORKSPACE=$work/probe-ws \
    XDG_DATA_HOME=$work/px XDG_STATE_HOME=$work/px XDG_CACHE_HOME=$work/px XDG_CONFIG_HOME=$work/px \
    timeout -k 5 40 nvim --headless -u NONE -i NONE -n -c "luafile $here/tests/probe.lua" </dev/null
  rc=$?
  echo
  case $rc in
  0) e2e_ready=1 ;;
  3) e2e_why="soba-lsp does not serve soba.budget yet (not available)" ;;
  *) fail "soba-lsp probe failed (exit $rc)"; e2e_why="soba-lsp probe failed (exit $rc)" ;;
  esac
}

# start_fakemodel runs the fake OpenAI-compatible model server on a free
# loopback port and sets fake_url to its base URL.
fake_url=
start_fakemodel() {
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
    || echo $((20000 + RANDOM % 20000)))
  # Every reply is a capsule-shaped answer, so the same fake also serves the
  # summary requests of a compaction (summaryModel defaults to model).
  cat >"$work/fakemodel.json" <<'JSON'
{"format": "openai", "repeatLast": true, "replies": [
  {"text": "Turn one answered.", "thinking": "The user wants a summary; keep it short.", "thinkingAs": "tags"}, {"text": "Turn two answered."}, {"text": "Turn three answered."},
  {"toolCalls": [{"id": "call_a1", "name": "bash", "arguments": {"command": "echo allowed for session"}}]},
  {"text": "The command ran."},
  {"text": "## Goal\nAnswer the test prompts\n## Done\n- answered the prompts\n## Next steps\n- keep answering\n", "thinking": "DRAFT-GOAL-XYZ OK let me answer.", "thinkingAs": "reasoning_content"}]}
JSON
  # fakemodel ends when its stdin closes: this script holds the write end of
  # a FIFO open until it exits, so nothing is left running afterwards.
  mkfifo "$work/fakemodel.in"
  "$work/fakemodel" -script "$work/fakemodel.json" -addr "127.0.0.1:$port" ${SOBA_FAKEMODEL_FLAGS:-} \
    >"$work/fakemodel.log" 2>&1 <"$work/fakemodel.in" &
  pids+=($!)
  exec {fakemodel_in}>"$work/fakemodel.in"
  fake_url=http://127.0.0.1:$port/v1
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  cat "$work/fakemodel.log"
  return 1
}

# make_workspace DIR writes a workspace whose .soba/config.json points the
# "openai" provider at the fake model server, with a small keep window so
# that a few turns give history to compact.
make_workspace() {
  local ws=$1
  rm -rf "$ws"
  mkdir -p "$ws/.soba"
  cat >"$ws/.soba/config.json" <<JSON
{
  "model": { "provider": "openai", "baseURL": "$fake_url", "name": "fake-model", "apiKeyEnv": "SOBA_TEST_API_KEY",
             "contextWindow": 65000, "maxOutputTokens": 8000 },
  "compaction": { "keepRecentTokens": 600, "minReclaimableTokens": 100, "minSavingsRatio": 0.1,
                  "timeoutMs": 15000 },
  "tools": { "approval": "ask" }
}
JSON
  printf '# Notes\n\nThe test edits this file.\n' >"$ws/notes.md"
}

# prepare_scripted builds the lsp package's real server in front of a
# scripted backend (tests/scriptedlsp), so the plugin's end-to-end tests run
# on the wire even before the full soba-lsp serves the commands.
scripted_ready=
scripted_why=
prepare_scripted() {
  if ! ls "$repo"/lsp/*.go >/dev/null 2>&1; then
    scripted_why="the lsp package does not exist yet"; return
  fi
  note "go build -tags sobascripted -o $work/scriptedlsp ./editors/neovim/tests/scriptedlsp"
  if ! (cd "$repo" && go build -tags sobascripted -o "$work/scriptedlsp" ./editors/neovim/tests/scriptedlsp) \
    >"$work/build-scripted.log" 2>&1; then
    cat "$work/build-scripted.log"; fail "tests/scriptedlsp does not build"; scripted_why="does not build"; return
  fi
  scripted_ready=1
}

# run_e2e LABEL NVIM SERVER_KIND: the end-to-end spec against the scripted
# server ("scripted") or the full soba-lsp with the fake model ("real").
run_e2e() {
  local label=$1 bin=$2 kind=$3 server ws=$work/ws-$1-$3
  if [ "$kind" = real ]; then
    if [ -z "$e2e_ready" ]; then echo "SKIP $label: e2e against soba-lsp: $e2e_why" | tee -a "$results"; return; fi
    server=$work/soba-lsp
    # A fresh fake model per run: its script is consumed in order.
    start_fakemodel || { fail "$label: the fake model server did not start"; return; }
    make_workspace "$ws"
  else
    if [ -z "$scripted_ready" ]; then echo "SKIP $label: e2e against tests/scriptedlsp: $scripted_why" | tee -a "$results"; return; fi
    server=$work/scriptedlsp
    mkdir -p "$ws/.soba"
    echo '{}' >"$ws/.soba/config.json"
    printf '# Notes\n' >"$ws/notes.md"
  fi
  mkdir -p "$work/out-$label-$kind"
  local scripted_flag=
  [ "$kind" = scripted ] && scripted_flag=1
  SOBA_LSP=$server SOBA_WORKSPACE=$ws SOBA_OUT=$work/out-$label-$kind \
    SOBA_SCRIPTED=${scripted_flag:-} run_nvim "$label-$kind" "$bin" e2e_spec.lua 180
}

# ---- main ------------------------------------------------------------------
export SOBA_TEST_API_KEY=test-key
if locked install ensure_nvim07; then
  run_nvim nvim0.7 nvim unit_spec.lua 120
else
  fail "could not install neovim 0.7 with apt-get"
fi
if locked install ensure_nvim10; then
  run_nvim nvim0.10 "$nvim10" unit_spec.lua 120
else
  fail "could not unpack Neovim 0.10 from Debian trixie"
fi
# Neovim 0.11+ where installable: a machine that cannot reach Debian
# unstable says so and goes on.
nvim_new_label=
if locked install ensure_nvim_new; then
  nvim_new_label=nvim$("$nvim_new" --version | head -1 | sed -E 's/^NVIM v([0-9]+\.[0-9]+).*/\1/')
  run_nvim "$nvim_new_label" "$nvim_new" unit_spec.lua 120
else
  echo "SKIP Neovim 0.11+: could not unpack it from Debian unstable (see above)" | tee -a "$results"
fi

prepare_scripted
prepare_e2e
for kind in scripted real; do
  command -v nvim >/dev/null 2>&1 && run_e2e nvim0.7 nvim "$kind"
  [ -x "$nvim10" ] && run_e2e nvim0.10 "$nvim10" "$kind"
  [ -n "$nvim_new_label" ] && run_e2e "$nvim_new_label" "$nvim_new" "$kind"
done
# Workspace trust (R-W5) against the full soba-lsp: :trust, an edit,
# soba-lsp trust; per version (0.7 has no :trust: soba-lsp trust only).
run_trust() {
  local label=$1 bin=$2 ws=$work/ws-$1-trust
  if [ -z "$e2e_ready" ]; then echo "SKIP $label: trust against soba-lsp: $e2e_why" | tee -a "$results"; return; fi
  start_fakemodel || { fail "$label: the fake model server did not start"; return; }
  make_workspace "$ws"
  SOBA_LSP=$work/soba-lsp SOBA_WORKSPACE=$ws run_nvim "$label-trust" "$bin" trust_spec.lua 120
}
command -v nvim >/dev/null 2>&1 && run_trust nvim0.7 nvim
[ -x "$nvim10" ] && run_trust nvim0.10 "$nvim10"
[ -n "$nvim_new_label" ] && run_trust "$nvim_new_label" "$nvim_new"
# lsp/soba.lua through vim.lsp.config / vim.lsp.enable (0.11+ only).
if [ -n "$nvim_new_label" ]; then
  if [ -n "$e2e_ready" ] && start_fakemodel; then
    make_workspace "$work/ws-lspconfig"
    SOBA_LSP=$work/soba-lsp SOBA_WORKSPACE=$work/ws-lspconfig \
      run_nvim "$nvim_new_label-lspconfig" "$nvim_new" lspconfig_spec.lua 120
  else
    echo "SKIP $nvim_new_label: lsp/soba.lua against soba-lsp: ${e2e_why:-the fake model server did not start}" | tee -a "$results"
  fi
fi

passed=$(grep -c '^PASS ' "$results")
failed=$(grep -c '^FAIL ' "$results")
skipped=$(grep -c '^SKIP ' "$results")
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
