#!/usr/bin/env bash
# The one test command of the README: installs what the tests need on a fresh
# machine, then runs every test suite. Each editor suite has its own script.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=${GOFLAGS:--mod=mod}

# Every temporary file of every suite (go test's, npm's, the editors',
# Neovim's, a replay's workspace) goes under one directory of this run,
# removed when the run ends however it ends: no run leaves any behind, and
# two runs at once never share one.
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/soba-test.XXXXXX")
trap 'rm -rf "$run_tmp"' EXIT
export TMPDIR=$run_tmp

echo "== go: download modules"
go mod download

echo "== go: vet and format"
go vet ./...
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted"; exit 1; fi

echo "== go: tests (race)"
go test -race -count=1 ./...

# The cancel and stale paths of the agent's state machine, 50 times each under
# the race detector (issue 14): a cancel that reaches the wrong operation or a
# late result that lands shows up as a flake here first.
echo "== go: cancel/stale tests (race, count 50)"
go test -race -count=50 -run 'TestCancelDuringBarrierAppendsNothing_RF2|TestProgressCancelLetsTurnProceed_RF2|TestCompactRequestCancelledBeforeItStarts|TestCancelSecondCompactRequestOnly_FirstCompletes|TestCancelFirstCompactRequestCancelsItsCompaction_RF2|TestCompactionStaleWhenLeafMoves_RB5|TestMethodsAfterCloseReturnErrClosed|TestExplicitCompactWaitsForPreflight_RB1_RB3|TestCancelDuringNativeCallAppendsNothing_RB5_RN3' ./agent/
go test -race -count=50 -run 'TestAgentBackendCancelSecondCompactOnly|TestAgentBackendCancelDuringBarrier_RF2' ./app/

for suite in lsp/conformance/test.sh acp/conformance/test.sh editors/neovim/test.sh editors/vscode/test.sh packaging/test.sh; do
  if [ -x "$suite" ]; then
    echo "== $suite"
    "$suite"
  fi
done
echo "== all tests passed"
