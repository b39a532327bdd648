#!/usr/bin/env bash
# soak.sh — run the MPI integration suite again and again, with a random
# process count from $SOAK_NPS (default "2 3 4 8"), until $SOAK_TIME seconds
# (default 600) have passed; stop at the first failure. MPI=openmpi|mpich.
set -euo pipefail
cd "$(dirname "$0")/.."
mpi=${MPI:-openmpi}
out=${OUT:-out/soak-$mpi}
read -r -a nps <<<"${SOAK_NPS:-2 3 4 8}"
flags=()
[ "$mpi" = mpich ] && flags+=(-tags mpich)
export MPI=$mpi
mkdir -p "$out"
go test "${flags[@]}" -c -o "$out/mpi.test" ./test/mpi
end=$(($(date +%s) + ${SOAK_TIME:-600}))
round=0
while [ "$(date +%s)" -lt "$end" ]; do
	round=$((round + 1))
	np=${nps[RANDOM % ${#nps[@]}]}
	seed=$((RANDOM * 32768 + RANDOM)) # one seed for every process: they must run tests in one order
	echo "== soak round $round: $np processes, shuffle seed $seed"
	if ! scripts/mpirun.sh "$np" "$out/mpi.test" -test.count=1 -test.timeout=240s -test.shuffle="$seed"; then
		echo "soak.sh: round $round ($np processes) failed" >&2
		exit 1
	fi
done
echo "soak.sh: $round rounds passed"
