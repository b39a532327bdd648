#!/usr/bin/env bash
# scripts/fuzz.sh — run every Go fuzz target of the module for a bounded time.
#
# Finds each `func FuzzXxx(f *testing.F)` under the module (the wire
# decoders, the unique ID, the transport's frame/hello/PeerInfo decoders and
# receiver, the plan builder, ...) and runs it with -fuzz for FUZZTIME each
# (default 10s; CI uses the default, a longer session e.g. FUZZTIME=5m).
# New crashers land in the package's testdata/fuzz/ and fail the run.
#
# Environment:
#   FUZZTIME=10s   time per target
#   PKGS=./...     packages to search
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
failed=()
count=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# fuzz_once PKG TARGET — fuzz one target; a failure without a failing input
# (Go's fuzz coordinator sometimes ends a run that reached -fuzztime with
# "context deadline exceeded" on a loaded machine: CI saw it on 1-2 of 15
# targets a run) is retried, up to 3 runs in all, so only an input that
# breaks the code, or three failures in a row, fail the run.
fuzz_once() {
	local try
	for try in 1 2 3; do
		if go test -run '^$' -fuzz "^$2\$" -fuzztime "$fuzztime" -parallel 2 "$1" 2>&1 | tee "$log"; then
			return 0
		fi
		if grep -q 'Failing input written to' "$log" || [ "$try" = 3 ]; then
			return 1
		fi
		echo "== $1 $2: failed without a failing input ($(grep -m1 -E 'deadline|error|FAIL' "$log" || echo 'no reason printed')); retrying"
	done
}
for pkg in $(go list ${PKGS:-./...}); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
	for t in $targets; do
		count=$((count + 1))
		echo "== $pkg $t ($fuzztime)"
		if ! fuzz_once "$pkg" "$t"; then
			failed+=("$pkg.$t")
		fi
	done
done
echo "fuzzed $count targets for $fuzztime each"
if [ ${#failed[@]} -gt 0 ]; then
	echo "FAILED: ${failed[*]}"
	exit 1
fi
