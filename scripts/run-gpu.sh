#!/usr/bin/env bash
# run-gpu.sh — run a gccl bundle (made by `make gpu-bundle`) on a GPU
# machine: unit tests of the GPU packages with GCCL_REQUIRE_GPU=1 (a missing
# GPU fails instead of skipping), the MPI suite and examples on the GPUs
# under mpirun, then the benchmark if bundled. NVLS stays off. On a machine
# with one GPU the suite also runs with ranks sharing it (TestSharedGPU, and
# two processes with -gccl.device 0).
# Environment: NP (processes for the MPI runs; default: number of GPUs),
# PERF_ARGS (arguments of gccl-perf), MPIRUN_TIMEOUT (seconds per run, default 300),
# LARGE=true (also the 64 MiB counts of the GPU suite: several minutes; raise
# MPIRUN_TIMEOUT to 900).
set -uo pipefail
cd "$(dirname "$0")"
export GCCL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 GCCL_NVLS_ENABLE=0
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
np=${NP:-$ngpu}
[ "${np:-0}" -ge 1 ] || { echo "run-gpu.sh: no GPU found (nvidia-smi -L); set NP to force" >&2; exit 1; }
echo "== $(cat COMMIT 2>/dev/null || echo unknown commit), $ngpu GPU(s), $np MPI processes"

failed=()
check() { # check NAME COMMAND... — run, print PASS/FAIL, remember failures
	local name=$1
	shift
	if "$@"; then echo "PASS  $name"; else echo "FAIL  $name"; failed+=("$name"); return 1; fi
}
to_file() { # to_file FILE COMMAND... — run with stdout and stderr into FILE
	local file=$1
	shift
	"$@" >"$file" 2>&1
}

for d in tests/*/; do
	name=$(basename "$d")
	check "unit $name" bash -c "cd '$d' && timeout 600 ./pkg.test -test.count=1 -test.timeout=540s"
done
for n in $(printf '%s\n' 2 "$np" | sort -un); do
	[ "$n" -le "$np" ] || continue
	check "mpiboot np=$n" ./mpirun.sh "$n" mpi/mpiboot.test -test.count=1
	check "integration np=$n" ./mpirun.sh "$n" mpi/mpi.test -test.count=1 -test.timeout=280s
	check "gpu suite np=$n" ./mpirun.sh "$n" tests/test-gpu/pkg.test -test.count=1 -test.timeout=900s -gccl.large="${LARGE:-false}"
	for ex in onedevice progress gompi; do
		check "example $ex np=$n" ./mpirun.sh "$n" "examples/$ex"
	done
done
if [ "$ngpu" -eq 1 ]; then # one GPU: ranks share it, in one process and in two
	check "gpu suite 4 ranks sharing GPU 0 in one process" bash -c \
		"cd tests/test-gpu && timeout 600 ./pkg.test -test.count=1 -test.run TestSharedGPU -gccl.shared 4 -gccl.large=false"
	check "gpu suite np=2 sharing GPU 0" ./mpirun.sh 2 tests/test-gpu/pkg.test -test.count=1 -test.timeout=280s \
		-gccl.device 0 -gccl.counts 0,1,7,1000 -gccl.large=false
fi
if [ "$ngpu" -ge 4 ]; then # the GPU suite with two GPUs per process
	check "gpu suite several GPUs np=$((ngpu / 2))" ./mpirun.sh $((ngpu / 2)) tests/test-gpu/pkg.test -test.count=1 -test.run TestSeveralGPUs
fi
if [ "$ngpu" -ge 2 ]; then # two GPUs per process
	check "example multidevice np=$((ngpu / 2))" ./mpirun.sh $((ngpu / 2)) examples/multidevice -ngpus 2
fi
check "example singleprocess ndev=$ngpu" examples/singleprocess -ndev "$ngpu"

# perf NAME ARGS... — one gccl-perf run against NCCL; with OUT, its table
# goes to $OUT/perf/NAME.txt (CSV and PNG beside it) and only its verdict
# and summary lines are printed.
perf() {
	local name=$1
	shift
	if [ -z "${OUT:-}" ]; then
		check "gccl-perf $name np=$np" ./mpirun.sh "$np" bin/gccl-perf "$@"
		return
	fi
	local base="$OUT/perf/$name"
	check "gccl-perf $name np=$np" to_file "$base.txt" ./mpirun.sh "$np" bin/gccl-perf "$@" -csv "$base.csv" -png "$base.png" ||
		tail -n 8 "$base.txt"
	grep -E '^# (gccl-perf|Out of bounds|nccl out of bounds|time ratio|Summary)|^#  +op|^ +[a-z]+ .*@' "$base.txt"
}
if [ -x bin/gccl-perf ] && [ "${PERF:-1}" != 0 ]; then
	[ -z "${OUT:-}" ] || mkdir -p "$OUT/perf"
	read -r lo hi <<<"${PERF_RANGE:-8 1G}"
	for op in ${PERF_OPS:-allreduce allgather reducescatter broadcast reduce sendrecv}; do
		for mode in ${PERF_MODES:-eager graph}; do
			graph=-graph=false
			[ "$mode" = graph ] && graph=-graph
			# shellcheck disable=SC2086
			perf "$op-$mode" -op "$op" -b "$lo" -e "$hi" -f 2 -baseline nccl "$graph" \
				-checkmax "${PERF_CHECKMAX:-64M}" ${PERF_ARGS:-}
		done
	done
fi

if [ ${#failed[@]} -gt 0 ]; then
	echo "FAILED (${#failed[@]}): ${failed[*]}"
	exit 1
fi
echo "all GPU runs passed"
