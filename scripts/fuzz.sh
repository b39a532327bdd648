#!/usr/bin/env bash
# fuzz.sh — run every fuzz target of the module for a bounded time each
# ($FUZZTIME, default 15s), one at a time. Fails on the first crasher; the
# failing input is kept under the package's testdata/fuzz/ by go test.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-15s}
found=0
while IFS= read -r file; do
	pkg=./$(dirname "$file")
	for name in $(grep -oE '^func Fuzz[A-Za-z0-9_]*' "$file" | cut -d' ' -f2); do
		found=$((found + 1))
		echo "== $pkg $name ($fuzztime)"
		go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" "$pkg"
	done
done < <(grep -rlE '^func Fuzz' --include='*_test.go' . | sed 's|^\./||' | sort)
echo "fuzz.sh: $found fuzz targets passed"
