#!/usr/bin/env bash
# run-gpu.sh — run a gccl bundle (made by `make gpu-bundle`) on a GPU
# machine: unit tests of the GPU packages with GCCL_REQUIRE_GPU=1 (a missing
# GPU fails instead of skipping), the MPI suite and examples on the GPUs
# under mpirun, then the benchmark if bundled. NVLS stays off.
# Environment: NP (processes for the MPI runs; default: number of GPUs),
# PERF_ARGS (arguments of gccl-perf), MPIRUN_TIMEOUT (seconds per run, default 300).
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
	if "$@"; then echo "PASS  $name"; else echo "FAIL  $name"; failed+=("$name"); fi
}

for d in tests/*/; do
	name=$(basename "$d")
	check "unit $name" bash -c "cd '$d' && timeout 600 ./pkg.test -test.count=1 -test.timeout=540s"
done
for n in $(printf '%s\n' 2 "$np" | sort -un); do
	[ "$n" -le "$np" ] || continue
	check "mpiboot np=$n" ./mpirun.sh "$n" mpi/mpiboot.test -test.count=1
	check "integration np=$n" ./mpirun.sh "$n" mpi/mpi.test -test.count=1 -test.timeout=280s
	for ex in onedevice progress gompi; do
		check "example $ex np=$n" ./mpirun.sh "$n" "examples/$ex"
	done
done
if [ "$ngpu" -ge 2 ]; then # two GPUs per process
	check "example multidevice np=$((ngpu / 2))" ./mpirun.sh $((ngpu / 2)) examples/multidevice -ngpus 2
fi
check "example singleprocess ndev=$ngpu" examples/singleprocess -ndev "$ngpu"
if [ -x bin/gccl-perf ]; then
	# shellcheck disable=SC2086
	check "gccl-perf np=$np" ./mpirun.sh "$np" bin/gccl-perf ${PERF_ARGS:-}
fi

if [ ${#failed[@]} -gt 0 ]; then
	echo "FAILED (${#failed[@]}): ${failed[*]}"
	exit 1
fi
echo "all GPU runs passed"
