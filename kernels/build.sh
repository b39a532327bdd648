#!/usr/bin/env bash
# Builds kernels/fatbin/gccl.fatbin from the .cu sources with nvcc (CUDA 13):
# SASS for sm_80 and sm_90, PTX for compute_90 (JIT on newer GPUs).
# Writes next to it:
#   fatbin/sources.sha256  the hash of the sources (checked by the Go test, so
#                          a stale fatbin fails CI) and of the fatbin itself;
#   fatbin/ptxas.txt       the -Xptxas -v report (registers, spills, smem).
# Usage: [MODULES="gccl ring"] [QUICK=1] kernels/build.sh [nvcc]   (run from anywhere; make kernels calls it)
# QUICK=1 builds SASS for sm_90 only (about a third of the time), to try a
# kernel change on an H100/H200 through GCCL_FATBIN_DIR; never commit it.
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${1:-${NVCC:-nvcc}}
command -v "$NVCC" >/dev/null || { echo "build.sh: $NVCC not found; build the fatbin on a machine with CUDA 13" >&2; exit 1; }

# MODULES: which fatbins to build (default both):
#   gccl  fatbin/gccl.fatbin from *.cu (the peer-memory kernels); records
#         fatbin/sources.sha256 and fatbin/ptxas.txt
#   ring  fatbin/ring.fatbin from ring/*.cu (the ring kernels, docs/gpunet.md);
#         records fatbin/ring.sha256 and fatbin/ring-ptxas.txt
MODULES=${MODULES:-gccl ring}

# A module's source hash: sha256 of the "sha256sum" listing of its files in
# byte order of their names (the shared .cuh headers count for both).
# kernels.go computes the same thing (Module.SourcesHash).
sources_hash() {
	LC_ALL=C ls "$@" | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# build NAME HASHFILE PTXASFILE SOURCES...: one module, one translation unit
# that includes every .cu file, so cuModuleLoadData loads all its kernels at once.
build() {
	local name=$1 hashfile=$2 ptxas=$3
	shift 3
	local cu=()
	for src in "$@"; do [[ $src == *.cu ]] && cu+=("$src"); done
	for src in "${cu[@]}"; do echo "#include \"$src\""; done > "$tmp/$name.cu"
	local gencode=(-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90)
	[ "${QUICK:-0}" = 1 ] && gencode=(-gencode arch=compute_90,code=sm_90)
	if ! "$NVCC" -std=c++17 -O3 --fatbin --threads 0 -Xptxas -v -I. "${gencode[@]}" \
		-o "fatbin/$name.fatbin" "$tmp/$name.cu" 2> "$tmp/$name.ptxas"; then
		cat "$tmp/$name.ptxas" >&2
		echo "build.sh: nvcc failed for $name" >&2
		exit 1
	fi
	cat "$tmp/$name.ptxas" > "fatbin/$ptxas"
	{
		echo "sources $(sources_hash "$@")"
		echo "fatbin $(sha256sum "fatbin/$name.fatbin" | cut -d' ' -f1)"
	} > "fatbin/$hashfile"
	echo "build.sh: wrote fatbin/$name.fatbin ($(stat -c %s "fatbin/$name.fatbin") bytes), fatbin/$hashfile, fatbin/$ptxas"
	grep -c "Compiling entry function" "fatbin/$ptxas" | sed "s/^/build.sh: $name entry functions compiled (all archs): /"
}

for m in $MODULES; do
	case $m in
	gccl) build gccl sources.sha256 ptxas.txt *.cu *.cuh ;;
	ring) build ring ring.sha256 ring-ptxas.txt *.cuh ring/*.cu ;;
	*) echo "build.sh: unknown module $m (gccl, ring)" >&2; exit 1 ;;
	esac
done
