#!/usr/bin/env bash
# test/run.sh — testing tier 2: gccl's MPI integration tests and examples,
# run under mpirun on this machine with 1, 2, 3, 4 and 8 processes (the
# random-sequence test, test/random, with 2, 3 and 4).
#
# Environment:
#   MPI=openmpi|mpich   implementation to build against and launch with (default openmpi)
#   NPS="1 2 3 4 8"     process counts
#   RACE=1              build with the race detector (slower)
#   MPIRUN_TIMEOUT=300  hard limit of each mpirun, in seconds
#   OUT=out/test-$MPI   where binaries go
# Exit status: 0 when every run passed. Each run prints one PASS/FAIL line;
# a failing run's output is printed in full.
set -euo pipefail
cd "$(dirname "$0")/.."

mpi=${MPI:-openmpi}
nps=${NPS:-"1 2 3 4 8"}
out=${OUT:-out/test-$mpi}
flags=()
[ "$mpi" = mpich ] && flags+=(-tags mpich)
[ "${RACE:-0}" = 1 ] && flags+=(-race)
export MPI=$mpi

mkdir -p "$out"
echo "== building ($mpi${flags[*]:+, ${flags[*]}}) into $out"
go test "${flags[@]}" -c -o "$out/mpiboot.test" ./mpiboot
go test "${flags[@]}" -c -o "$out/internal-mpi.test" ./internal/mpi
go test "${flags[@]}" -c -o "$out/mpi.test" ./test/mpi
go test "${flags[@]}" -c -o "$out/random.test" ./test/random
examples=(onedevice multidevice progress singleprocess cudaaware coupling)
[ "$mpi" = openmpi ] && examples+=(gompi) # gompi hard-codes Open MPI's paths
for ex in "${examples[@]}"; do
	go build "${flags[@]}" -o "$out/$ex" "./examples/mpi/$ex"
done

failed=()
# run NAME NP COMMAND... — one mpirun, timed, output kept for failures.
run() {
	local name=$1 np=$2
	shift 2
	local log start rc=0
	log=$(mktemp)
	start=$(date +%s)
	scripts/mpirun.sh "$np" "$@" >"$log" 2>&1 || rc=$?
	if [ $rc = 0 ]; then
		printf 'PASS  %-28s np=%-2s %3ss\n' "$name" "$np" $(($(date +%s) - start))
	else
		printf 'FAIL  %-28s np=%-2s %3ss (exit %s)\n' "$name" "$np" $(($(date +%s) - start)) "$rc"
		sed 's/^/    | /' "$log" | tail -n 80
		failed+=("$name np=$np")
	fi
	rm -f "$log"
}

testflags=(-test.timeout=240s -test.count=1)
for np in $nps; do
	echo "== $np process(es)"
	run mpiboot "$np" "$out/mpiboot.test" "${testflags[@]}"
	run internal/mpi "$np" "$out/internal-mpi.test" "${testflags[@]}"
	run integration "$np" "$out/mpi.test" "${testflags[@]}"
	if [ "$np" -ge 2 ] && [ "$np" -le 4 ]; then
		run random "$np" "$out/random.test" "${testflags[@]}" -test.run TestMPI -random.backend host \
			-random.seeds 2 -random.ops 200 -random.maxcount 262144
	fi
	run example/onedevice "$np" "$out/onedevice" -count 65536
	run example/multidevice "$np" "$out/multidevice" -count 65536
	run example/progress "$np" "$out/progress" -rounds 4
	run example/cudaaware "$np" "$out/cudaaware" -rounds 4 -count 4099
	if [ -x "$out/gompi" ] && [ "$mpi" = openmpi ]; then run example/gompi "$np" "$out/gompi" -count 65536; fi
done
echo "== sockets only (GCCL_SHM_DISABLE=1: TCP between every pair, no shared memory)"
GCCL_SHM_DISABLE=1 run integration/sockets 4 "$out/mpi.test" "${testflags[@]}"
GCCL_SHM_DISABLE=1 run example/onedevice/sockets 3 "$out/onedevice" -count 65536
echo "== two hosts by GCCL_HOSTID (2+2): mpiboot's local ranks must agree with the transports'"
run mpiboot/hostid 4 bash -c 'GCCL_HOSTID=host$(( ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}} / 2 )) exec "$0" "$@"' \
	"$out/mpiboot.test" "${testflags[@]}" -test.run 'TestLocalMatchesTransports|TestLocalOf' -test.v
echo "== MPI through host copies"
run example/cudaaware/stage 3 "$out/cudaaware" -rounds 3 -count 4099 -stage
echo "== other thread levels"
run mpiboot/funneled 3 "$out/mpiboot.test" "${testflags[@]}" -mpiboot.level=funneled
run mpiboot/serialized 2 "$out/mpiboot.test" "${testflags[@]}" -mpiboot.level=serialized
run internal/mpi/funneled 3 "$out/internal-mpi.test" "${testflags[@]}" -mpi.level=funneled
run internal/mpi/serialized 2 "$out/internal-mpi.test" "${testflags[@]}" -mpi.level=serialized
echo "== MPI progress while a rank waits inside gccl (Open MPI's ob1 needs the receiver's progress;"
echo "   the same test with -mpi.noprogress deadlocks until its 5 s timeout)"
OMPI_MCA_pml=ob1 run internal/mpi/progress 3 "$out/internal-mpi.test" "${testflags[@]}" -test.run Progress
OMPI_MCA_pml=ob1 run internal/mpi/progress/funneled 2 "$out/internal-mpi.test" "${testflags[@]}" -test.run Progress -mpi.level=funneled
echo "== MPMD: two commands, communicators split by MPI_APPNUM"
mpmd=("$out/mpiboot.test" "${testflags[@]}" -test.run 'Split|From')
run mpiboot/mpmd 2 "${mpmd[@]}" : -np 3 "${mpmd[@]}"
echo "== coupled solvers (halo exchanges, residual AllReduce, interface over a split communicator)"
run example/coupling/mpmd 2 "$out/coupling" : -np 3 "$out/coupling"
run example/coupling/flag 6 "$out/coupling" -a 2 -steps 300 -every 7
run example/coupling/device0 3 "$out/coupling" -device 0 -a 1 -steps 200 -every 7 # every process on device 0, as run-gpu.sh does
echo "== one process, several devices (no MPI)"
if "$out/singleprocess" -ndev 4 -count 65536; then echo "PASS  example/singleprocess"; else failed+=(singleprocess); fi

if [ ${#failed[@]} -gt 0 ]; then
	echo "FAILED (${#failed[@]}): ${failed[*]}"
	exit 1
fi
echo "all MPI runs passed ($mpi)"
