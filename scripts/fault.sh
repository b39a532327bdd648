#!/usr/bin/env bash
# scripts/fault.sh — the kill -9 and SIGSTOP fault suite (host backend, 4
# ranks, Open MPI).
#
# Builds test/fault/killrank once, then for each fault, transport (shm, net)
# and workload launches it RUNS times in a row under mpirun; in each run one
# rank (rotating) fails in the middle of the workload:
#
#   kill  the victim kills itself with SIGKILL. A run passes when every
#         survivor wrote an "OK" result file (it saw gccl.ErrRemote or
#         gccl.ErrTimeout within 2 × the timeout, AsyncError agreed, Abort
#         took < 1 s) and mpirun ended before the hard limit.
#   stop  the victim stops itself with SIGSTOP during a series of
#         operations, after writing its pid to the run's directory: alive,
#         sockets open, no progress. A survivor's result is "OK" when its
#         operation and AsyncError failed with gccl.ErrTimeout naming the
#         victim, and no other rank, within 2 × the timeout (Abort < 1 s).
#         Once every survivor has written its result this script sends the
#         victim SIGCONT; a victim that then does not end within 10 s is
#         killed and fails the run.
#
# Any hang (the limit reached) fails the suite.
#
# mpirun kills the whole job as soon as one rank dies; --enable-recovery
# (Open MPI 4.1) lets the survivors finish and report, and mpirun then exits.
#
# Environment:
#   FAULTS="kill stop"           which faults to inject
#   RUNS=20                      runs per (kill, transport, workload)
#   STOP_RUNS=$RUNS              runs per (stop, transport, workload)
#   WORKLOADS="allreduce sendrecv group p2p"   kill's workloads
#   STOP_WORKLOADS="allreduce sendrecv"        stop's workloads
#   TRANSPORTS="shm net"         net sets GCCL_SHM_DISABLE=1
#   NP=4                         ranks
#   TIMEOUT=5s                   kill's communicator deadline (MPI's: twice that)
#   STOP_TIMEOUT=2s              stop's (a stop is seen only at the deadline)
#   HARD_LIMIT=60                seconds before a run counts as a hang
#   OUT=out/fault                binaries and logs
set -euo pipefail
cd "$(dirname "$0")/.."

faults=${FAULTS:-"kill stop"}
runs=${RUNS:-20}
stop_runs=${STOP_RUNS:-$runs}
workloads=${WORKLOADS:-"allreduce sendrecv group p2p"}
stop_workloads=${STOP_WORKLOADS:-"allreduce sendrecv"}
transports=${TRANSPORTS:-"shm net"}
np=${NP:-4}
tmo=${TIMEOUT:-5s}
stop_tmo=${STOP_TIMEOUT:-2s}
limit=${HARD_LIMIT:-60}
out=${OUT:-out/fault}
resume_limit=10 # seconds a resumed victim has to end

mkdir -p "$out"
echo "== building killrank into $out"
go build -o "$out/killrank" ./test/fault/killrank

# survivors_done DIR VICTIM: how many survivors wrote their result.
survivors_done() {
	local n=0 r
	for r in $(seq 0 $((np - 1))); do
		[ "$r" != "$2" ] && [ -s "$1/rank-$r" ] && n=$((n + 1))
	done
	echo $n
}

# alive PID: whether PID is still a running (or stopped) killrank.
alive() { [ "$(cat "/proc/$1/comm" 2>/dev/null)" = killrank ]; }

# resume DIR VICTIM MPIRUN: waits (up to the hard limit) until every
# survivor has written its result or mpirun ended, sends the stopped victim
# (its pid in DIR/stopped) SIGCONT, and waits up to $resume_limit s for
# mpirun to end, killing the victim if it has not. Prints what went wrong.
resume() {
	local dir=$1 victim=$2 mp=$3 end=$((SECONDS + limit)) pid=""
	while kill -0 "$mp" 2>/dev/null && [ $SECONDS -lt $end ] &&
		[ "$(survivors_done "$dir" "$victim")" -lt $((np - 1)) ]; do
		sleep 0.1
	done
	[ -s "$dir/stopped" ] && pid=$(cat "$dir/stopped")
	if [ -z "$pid" ]; then
		kill -0 "$mp" 2>/dev/null && echo -n " rank $victim never stopped;"
		return 0
	fi
	alive "$pid" && kill -CONT "$pid" 2>/dev/null || true
	end=$((SECONDS + resume_limit))
	while kill -0 "$mp" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
	if alive "$pid"; then
		kill -KILL "$pid" 2>/dev/null || true
		echo -n " rank $victim did not end within ${resume_limit}s of SIGCONT (killed);"
	fi
}

pass=0 fail=0 hangs=0
for fault in $faults; do
	case $fault in
	kill) n_runs=$runs ws=$workloads t=$tmo ;;
	stop) n_runs=$stop_runs ws=$stop_workloads t=$stop_tmo ;;
	*)
		echo "fault.sh: unknown fault '$fault' (kill or stop)" >&2
		exit 2
		;;
	esac
	k=0 # runs of this fault so far: the victim rotates over them
	for tr in $transports; do
		shm=0
		[ "$tr" = net ] && shm=1
		for w in $ws; do
			for i in $(seq 1 "$n_runs"); do
				k=$((k + 1))
				victim=$((k % np))
				dir=$(mktemp -d "$out/run.XXXXXX")
				start=$(date +%s.%N)
				timeout --kill-after=5 "$limit" mpirun --allow-run-as-root --oversubscribe --bind-to none \
					--mca mpi_yield_when_idle 1 --enable-recovery -np "$np" \
					-x GCCL_FAULT_VICTIM="$victim" -x GCCL_SHM_DISABLE="$shm" \
					"$out/killrank" -fault "$fault" -workload "$w" -timeout "$t" -out "$dir" >"$dir/mpirun.log" 2>&1 &
				mp=$!
				bad=""
				[ "$fault" = stop ] && bad=$(resume "$dir" "$victim" "$mp")
				rc=0
				wait "$mp" || rc=$?
				secs=$(printf '%.2f' "$(echo "$(date +%s.%N) - $start" | bc)")
				if [ $rc = 124 ] || [ $rc = 137 ]; then
					bad="$bad HANG (hard limit ${limit}s)"
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
				# A stopped victim that hung was killed above; make sure.
				[ -s "$dir/stopped" ] && alive "$(cat "$dir/stopped")" && kill -KILL "$(cat "$dir/stopped")" 2>/dev/null || true
				if [ -n "$bad" ]; then
					fail=$((fail + 1))
					echo "FAIL  $fault/$tr/$w run $i victim=$victim ${secs}s: $bad"
					sed 's/^/    | /' "$dir/mpirun.log" | tail -n 40
				else
					pass=$((pass + 1))
					printf 'PASS  %s/%s/%s run %d victim=%d %ss %s\n' "$fault" "$tr" "$w" "$i" "$victim" "$secs" \
						"$(sed -n -e 's/.*class="\([^"]*\)" async="\([^"]*\)" after=\([^ ]*\) blames="\([^"]*\)".*/op: \1, async: \2, after \3, blames \4/' \
							-e 's/, blames $//' -e '/^op: /p' "$dir"/rank-* | tr '\n' ';')"
					rm -rf "$dir"
				fi
			done
		done
	done
done
echo "fault suite: $pass passed, $fail failed, $hangs hangs"
[ $fail = 0 ]
