#!/usr/bin/env bash
# Builds kernels/fatbin/gccl.fatbin from the .cu sources with nvcc (CUDA 13):
# SASS for sm_80 and sm_90, PTX for compute_90 (JIT on newer GPUs).
# Writes next to it:
#   fatbin/sources.sha256  the hash of the sources (checked by the Go test, so
#                          a stale fatbin fails CI) and of the fatbin itself;
#   fatbin/ptxas.txt       the -Xptxas -v report (registers, spills, smem).
# Usage: kernels/build.sh [nvcc]       (run from anywhere; make kernels calls it)
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${1:-${NVCC:-nvcc}}
command -v "$NVCC" >/dev/null || { echo "build.sh: $NVCC not found; build the fatbin on a machine with CUDA 13" >&2; exit 1; }

# The source hash: sha256 of the "sha256sum" listing of every .cu/.cuh file in
# byte order of their names. kernels_test.go computes the same thing.
sources_hash() {
	LC_ALL=C ls *.cu *.cuh | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One module: compile a single translation unit that includes every .cu file,
# so cuModuleLoadData loads all kernels at once.
{
	for src in *.cu; do echo "#include \"$src\""; done
} > "$tmp/all.cu"
if ! "$NVCC" -std=c++17 -O3 --fatbin --threads 0 -Xptxas -v -I. \
	-gencode arch=compute_80,code=sm_80 \
	-gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90,code=compute_90 \
	-o fatbin/gccl.fatbin "$tmp/all.cu" 2> "$tmp/all.ptxas"; then
	cat "$tmp/all.ptxas" >&2
	echo "build.sh: nvcc failed" >&2
	exit 1
fi
cat "$tmp/all.ptxas" > fatbin/ptxas.txt
{
	echo "sources $(sources_hash)"
	echo "fatbin $(sha256sum fatbin/gccl.fatbin | cut -d' ' -f1)"
} > fatbin/sources.sha256
echo "build.sh: wrote fatbin/gccl.fatbin ($(stat -c %s fatbin/gccl.fatbin) bytes), fatbin/sources.sha256, fatbin/ptxas.txt"
grep -c "Compiling entry function" fatbin/ptxas.txt | sed 's/^/build.sh: entry functions compiled (all archs): /'
