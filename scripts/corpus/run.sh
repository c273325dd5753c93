#!/usr/bin/env bash
# Scores soba-lsp's capsules of the whole usable corpus (docs/capsule-fidelity.md).
#
#   scripts/corpus/run.sh [GIT_DIR]
#
# GIT_DIR is a clone of github.com/entireio/cli holding the branch
# entire/checkpoints/v1; without it the branch is cloned (bare, that branch
# only) into $SOBA_CORPUS_CACHE (default ~/.cache/soba-corpus). The
# transcripts whose SHA-256 starts with 0-7 are extracted there
# (extract.py; the others are never written), soba-lsp is built, and each
# transcript is imported and compacted (dry run, keepRecentTokens 0) and
# scored against truth.py (score.py). Prints the totals; the rows are in
# $SOBA_CORPUS_CACHE/score.json.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${SOBA_CORPUS_CACHE:-$HOME/.cache/soba-corpus}
mkdir -p "$cache"
git_dir=${1:-}
if [ -z "$git_dir" ]; then
	git_dir=$cache/entireio-cli.git
	if [ ! -d "$git_dir" ]; then
		git clone --quiet --bare --single-branch --branch entire/checkpoints/v1 \
			https://github.com/entireio/cli "$git_dir"
	fi
fi
python3 "$here/extract.py" "$git_dir" "$cache/corpus"
(cd "$root" && GOFLAGS=-mod=mod go build -o "$cache/soba-lsp" ./cmd/soba-lsp)
python3 "$here/score.py" "$cache/soba-lsp" "$cache/corpus" "$cache/score.json"
