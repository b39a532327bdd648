#!/usr/bin/env bash
# scripts/fault.sh — the kill -9 fault suite (host backend, 4 ranks, Open MPI).
#
# Builds test/fault/killrank once, then for each transport (shm, net) and
# each workload (allreduce, sendrecv, group, p2p) launches it RUNS times in
# a row under mpirun; in each run one rank (rotating) kills itself with
# SIGKILL in the middle of the operation. A run passes when every survivor
# wrote an "OK" result file (it saw gccl.ErrRemote or gccl.ErrTimeout within
# 2 × the timeout, AsyncError agreed, Abort took < 1 s) and mpirun ended
# before the hard limit. Any hang (the limit reached) fails the suite.
#
# mpirun kills the whole job as soon as one rank dies; --enable-recovery
# (Open MPI 4.1) lets the survivors finish and report, and mpirun then exits.
#
# Environment:
#   RUNS=20                      runs per (transport, workload)
#   WORKLOADS="allreduce sendrecv group p2p"
#   TRANSPORTS="shm net"         net sets GCCL_SHM_DISABLE=1
#   NP=4                         ranks
#   TIMEOUT=5s                   the communicators' deadline (MPI's: twice that)
#   HARD_LIMIT=60                seconds before a run counts as a hang
#   OUT=out/fault                binaries and logs
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-20}
workloads=${WORKLOADS:-"allreduce sendrecv group p2p"}
transports=${TRANSPORTS:-"shm net"}
np=${NP:-4}
tmo=${TIMEOUT:-5s}
limit=${HARD_LIMIT:-60}
out=${OUT:-out/fault}

mkdir -p "$out"
echo "== building killrank into $out"
go build -o "$out/killrank" ./test/fault/killrank

pass=0 fail=0 hangs=0
for tr in $transports; do
	shm=0
	[ "$tr" = net ] && shm=1
	for w in $workloads; do
		for i in $(seq 1 "$runs"); do
			victim=$((i % np))
			dir=$(mktemp -d "$out/run.XXXXXX")
			start=$(date +%s.%N)
			rc=0
			timeout --kill-after=5 "$limit" mpirun --allow-run-as-root --oversubscribe --bind-to none \
				--mca mpi_yield_when_idle 1 --enable-recovery -np "$np" \
				-x GCCL_FAULT_VICTIM="$victim" -x GCCL_SHM_DISABLE="$shm" \
				"$out/killrank" -workload "$w" -timeout "$tmo" -out "$dir" >"$dir/mpirun.log" 2>&1 || rc=$?
			secs=$(printf '%.2f' "$(echo "$(date +%s.%N) - $start" | bc)")
			bad=""
			if [ $rc = 124 ] || [ $rc = 137 ]; then
				bad="HANG (hard limit ${limit}s)"
				hangs=$((hangs + 1))
			fi
			for r in $(seq 0 $((np - 1))); do
				[ "$r" = "$victim" ] && continue
				f="$dir/rank-$r"
				if [ ! -s "$f" ]; then
					bad="$bad rank $r wrote no result;"
				elif ! grep -q '^OK ' "$f"; then
					bad="$bad rank $r: $(cut -c1-300 "$f");"
				fi
			done
			if [ -n "$bad" ]; then
				fail=$((fail + 1))
				echo "FAIL  $tr/$w run $i victim=$victim ${secs}s: $bad"
				sed 's/^/    | /' "$dir/mpirun.log" | tail -n 40
			else
				pass=$((pass + 1))
				printf 'PASS  %s/%s run %d victim=%d %ss %s\n' "$tr" "$w" "$i" "$victim" "$secs" \
					"$(sed -n 's/.*class="\([^"]*\)" async="\([^"]*\)" after=\([^ ]*\).*/op: \1, async: \2, after \3/p' "$dir"/rank-* | tr '\n' ';')"
				rm -rf "$dir"
			fi
		done
	done
done
echo "fault suite: $pass passed, $fail failed, $hangs hangs"
[ $fail = 0 ]
