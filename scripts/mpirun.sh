#!/usr/bin/env bash
# mpirun.sh NP PROGRAM [ARGS...] — run PROGRAM on NP local processes with
# the MPI chosen by $MPI (openmpi, the default, or mpich), oversubscribed,
# allowed as root, under a hard time limit ($MPIRUN_TIMEOUT seconds, default 300).
set -euo pipefail

np=$1
shift
limit=${MPIRUN_TIMEOUT:-300}
case ${MPI:-openmpi} in
openmpi)
	# Open MPI refuses root and more ranks than cores unless told; keep idle
	# ranks from spinning on an oversubscribed machine.
	launcher=(mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 --bind-to none -np "$np")
	;;
mpich)
	# Debian's mpirun/mpiexec point at Open MPI when both are installed: name MPICH's own.
	launcher=(mpiexec.mpich -np "$np")
	;;
*)
	echo "mpirun.sh: unknown MPI '${MPI}' (openmpi or mpich)" >&2
	exit 2
	;;
esac
exec timeout --kill-after=10 "$limit" "${launcher[@]}" "$@"
