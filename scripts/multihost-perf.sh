#!/usr/bin/env bash
# scripts/multihost-perf.sh — gccl against Open MPI across simulated hosts
# (cmd/gccl-bed: network namespaces on a bridge; needs root), in one run on
# the same veth links:
#
#   1. the links' capacity: one plain TCP stream from host 0 to host 1
#      (gccl-bed stream), the best of 3;
#   2. for each ranks-per-host count: gccl-perf AllReduce, host backend,
#      against Open MPI's MPI_Allreduce forced to TCP (--mca btl tcp,self
#      --mca pml ob1, over the bed's subnet), under mpirun with every rank
#      in its host (gccl-bed mpirun).
#
# Not part of make test. Figures from a machine with few cores measure the
# cores as much as the links: the script prints how many there are.
#
# Environment:
#   HOSTS=2            simulated hosts
#   PERS="1 2"         ranks per host, one run each
#   MIN=1K MAX=256M    AllReduce sizes (bytes), doubling
#   ITERS=10 WARMUP=2  timed and warm-up iterations per size
#   CHECKMAX=16M       check results up to this size (larger rows: N/A)
#   RATE=0             each link's rate in bits/s (tc tbf; 0 = unshaped)
#   DELAY=0s           each link's one-way delay (tc netem; the kernel needs sch_netem)
#   STREAM=1073741824  bytes of each TCP stream
#   OUT=out/multihost-perf   where the binaries are built
#   BIN=DIR            use DIR/gccl-bed and DIR/gccl-perf as they are (no Go
#                      needed: the GPU bundle's bin/, on the GPU machine)
#   PERF_TIMEOUT=600   seconds each mpirun may take
set -euo pipefail

[ -n "${BIN:-}" ] || cd "$(dirname "$0")/.."
out=$(realpath -m "${BIN:-${OUT:-out/multihost-perf}}")
if [ -z "${GCCL_BED:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "multihost-perf: simulated hosts need root (network namespaces)" >&2; exit 1; }
	if [ -z "${BIN:-}" ]; then
		mkdir -p "$out"
		echo "== building gccl-bed and gccl-perf into $out"
		go build -o "$out/gccl-bed" ./cmd/gccl-bed
		go build -o "$out/gccl-perf" ./cmd/gccl-perf
	fi
	# Build the bed once and run the rest of this script inside it.
	export BIN=$out
	exec "$out/gccl-bed" with -gateway -hosts "${HOSTS:-2}" -rate "${RATE:-0}" -delay "${DELAY:-0s}" -- "$0" "$@"
fi

bed=$out/gccl-bed
echo "== machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load $(cut -d' ' -f1-3 /proc/loadavg);" \
	"every rank, the kernel's TCP and the veth links share these CPUs"
echo "== link capacity: one TCP stream, host 0 -> host 1"
"$bed" stream -bytes "${STREAM:-1073741824}" -repeat 3

export GCCL_DEVICE=host # the host backend, even where a GPU is present
pers=${PERS:-1 2}
for per in $pers; do
	echo "== AllReduce, ${HOSTS:-2} hosts x $per rank(s): gccl (host backend) vs Open MPI (btl tcp,self, pml ob1)"
	"$bed" mpirun -per "$per" -timeout "${PERF_TIMEOUT:-600}s" -- "$out/gccl-perf" -op allreduce \
		-b "${MIN:-1K}" -e "${MAX:-256M}" -n "${ITERS:-10}" -w "${WARMUP:-2}" -checkmax "${CHECKMAX:-16M}" -baseline mpi
done
