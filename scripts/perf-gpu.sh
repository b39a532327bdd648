#!/usr/bin/env bash
# perf-gpu.sh — the memory-speed measurements of issue 18 on one GPU, from
# an unpacked bundle (`make gpu-bundle`; on the GPU machine:
# tar -xJf out/gpu-bundle.tar.xz -C /tmp && /tmp/bundle/perf-gpu.sh).
# About 5 minutes on one H100:
#   1. one rank (mpirun -np 1), every collective eager 8 B–1 GiB against NCCL
#      in the same run (-baseline nccl), with the memory-traffic columns;
#   2. 2 and 4 ranks sharing GPU 0 in one process (gccl-perf -np N -device 0:
#      one context, their kernels side by side; NCCL refuses two ranks on one
#      GPU, so the yardstick is a device copy of the same size timed in the
#      run), every collective and Send/Recv 16 MiB–1 GiB.
# Tables (and CSV) go to $OUT/perf-gpu/ when OUT is set, else to
# ./perf-gpu-out/; the summary lines are printed. NVLS stays off.
# Environment: RUN_TIMEOUT (seconds per gccl-perf run, default 150),
# PERF_ITERS (timed iterations, default 20), ONE_RANK=0 or SHARED=0 to skip
# a part, SHARED_NP (default "2 4").
set -uo pipefail
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0 GCCL_NVLS_ENABLE=0
# Ranks sharing one context: lazy module loading would make a rank's first
# launch wait for a peer's running kernel (docs/perf-notes.md, session 4).
export CUDA_MODULE_LOADING=EAGER
dir=${OUT:-$PWD/perf-gpu-out}/perf-gpu
mkdir -p "$dir"
limit=${RUN_TIMEOUT:-150}
iters=${PERF_ITERS:-20}
echo "== perf-gpu.sh at $(cat COMMIT 2>/dev/null || echo unknown commit); tables in $dir"
nvidia-smi -L 2>/dev/null | head -n 1

failed=()
# run NAME COMMAND... — one gccl-perf run into $dir/NAME.{txt,csv}; prints its
# summary lines, or the end of its output when it fails.
run() {
	local name=$1
	shift
	local start=$SECONDS
	if timeout --kill-after=10 "$limit" "$@" -csv "$dir/$name.csv" >"$dir/$name.txt" 2>&1; then
		echo "PASS  $name ($((SECONDS - start)) s)"
	else
		echo "FAIL  $name ($((SECONDS - start)) s, status $?)"
		failed+=("$name")
		tail -n 8 "$dir/$name.txt"
	fi
	grep -E '^# (gccl-perf |Out of bounds|nccl out of bounds|time ratio|memory traffic)' "$dir/$name.txt" | grep -v '^# gccl-perf ' || true
}

ops="allreduce allgather reducescatter broadcast reduce"
common=(-f 2 -n "$iters" -w 5 -checkmax 64M)
if [ "${ONE_RANK:-1}" != 0 ]; then
	for op in $ops; do
		MPIRUN_TIMEOUT=$limit run "1rank-$op" ./mpirun.sh 1 bin/gccl-perf -op "$op" -b 8 -e 1G "${common[@]}" -baseline nccl
	done
fi
if [ "${SHARED:-1}" != 0 ]; then
	for np in ${SHARED_NP:-2 4}; do
		for op in $ops sendrecv; do
			run "np$np-$op" bin/gccl-perf -np "$np" -device 0 -op "$op" -b 16M -e 1G "${common[@]}"
		done
	done
fi

# The verdicts of issue 18: one rank >= 1 MiB <= 1.0x NCCL's time; shared
# GPU >= 75% of the copy's bandwidth from 16 MiB.
echo "== summary"
for f in "$dir"/1rank-*.txt; do
	[ -e "$f" ] || continue
	printf '%-24s %s\n' "$(basename "$f" .txt)" "$(grep -m1 '^# time ratio' "$f" | sed 's/^# time ratio //')"
done
for f in "$dir"/np*.txt; do
	[ -e "$f" ] || continue
	printf '%-24s %s\n' "$(basename "$f" .txt)" "$(grep -m1 '^# memory traffic' "$f" | sed 's/^# memory traffic *: //')"
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "FAILED (${#failed[@]}): ${failed[*]}"
	exit 1
fi
echo "all perf-gpu runs passed"
