#!/usr/bin/env bash
# scripts/soak.sh — the soak test: OPS random operations (default 100000) on a
# 4-rank in-process host communicator, every result verified bit-exact,
# goroutine / fd / /dev/shm counts equal before and after.
#
# Environment:
#   OPS=100000    operations
#   SEED=0        seed of the sequence (0 = random; the test prints it)
#   RANKS=4       ranks
#   LIMIT=60m     go test's hard timeout
#   RACE=0        1 = with the race detector (much slower: lower OPS)
set -euo pipefail
cd "$(dirname "$0")/.."
flags=()
[ "${RACE:-0}" = 1 ] && flags+=(-race)
exec go test "${flags[@]}" -count=1 -v -run '^TestSoak$' -timeout "${LIMIT:-60m}" ./test/soak \
	-soak.ops="${OPS:-100000}" -soak.seed="${SEED:-0}" -soak.ranks="${RANKS:-4}"
