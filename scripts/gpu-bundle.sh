#!/usr/bin/env bash
# gpu-bundle.sh [DIR] — build everything the GPU machine runs (it has CUDA,
# Open MPI and NCCL but no Go) into DIR (default ./bundle):
#   tests/<pkg>/pkg.test   test binaries of the packages with GPU tests, with
#                          their testdata/ next to them (they run from there)
#   tests/kernels/         also the kernel sources and ptxas report the kernels
#                          tests read; kernels/ links to it (internal/engine's
#                          tests read ../../kernels/p2p.cu)
#   mpi/                   mpiboot.test, internal-mpi.test and the MPI integration suite
#   examples/              the MPI examples
#   bin/gccl-perf          the benchmark, when cmd/gccl-perf exists
#   bin/gccl-bed, mpi/multihost.test, multihost-perf.sh
#                          simulated hosts (network namespaces, root): the
#                          multi-host suite (host backend) and benchmark, e.g.
#                          mpi/multihost.test -multihost -test.run 'Test[MKC]'
#                          and BIN=bundle/bin bundle/multihost-perf.sh
#   run-gpu.sh             runs all of it there: bundle/run-gpu.sh
# The binaries link the system's libmpi.so.40 (Open MPI 4.x) and dlopen
# libcuda.so.1; build against Open MPI (the default), not MPICH.
#
# Every binary embeds the 10 MB kernel fatbin, so DIR is ~250 MB even
# stripped and trimmed. To carry it, the script also writes one xz archive
# with a dictionary large enough to share the repeated fatbin and runtime
# between the binaries (~12 MB), at $BUNDLE_ARCHIVE (default
# out/gpu-bundle.tar.xz; "none" skips it), and fails if that is over
# $BUNDLE_LIMIT_MIB (default 50). On the GPU machine:
#   tar -xJf out/gpu-bundle.tar.xz -C /tmp && /tmp/bundle/run-gpu.sh
# (without xz: python3 -c 'import tarfile; tarfile.open("out/gpu-bundle.tar.xz").extractall("/tmp")').
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-bundle}
rm -rf "$dir"
mkdir -p "$dir/tests" "$dir/mpi" "$dir/examples" "$dir/bin"
# Stripped (no DWARF; panics still name functions), so the bundle stays small to carry.
flags=(-trimpath "-ldflags=-s -w")

# Packages with GPU tests: those whose tests call RequireGPU, plus the
# packages that own the CUDA code paths.
mapfile -t pkgs < <(
	{
		grep -rl 'RequireGPU(' --include='*_test.go' . | xargs -r -n1 dirname
		for p in ./internal/cuda ./internal/nccl ./device ./kernels ./coll ./p2p ./group ./internal/engine; do
			[ -d "$p" ] && echo "$p"
		done
	} | sed 's|^\./||' | sort -u
)
for p in "${pkgs[@]}"; do
	ls "$p"/*_test.go >/dev/null 2>&1 || continue
	name=${p//\//-}
	mkdir -p "$dir/tests/$name"
	echo "test binary: $p"
	go test "${flags[@]}" -c -o "$dir/tests/$name/pkg.test" "./$p"
	[ -d "$p/testdata" ] && cp -r "$p/testdata" "$dir/tests/$name/"
done
# The files the kernels and engine tests read, at the paths they read them
# from (their working directory is tests/<pkg>/).
if [ -d "$dir/tests/kernels" ]; then
	mkdir -p "$dir/tests/kernels/fatbin" "$dir/tests/kernels/ring"
	cp kernels/*.cu kernels/*.cuh kernels/build.sh "$dir/tests/kernels/"
	cp kernels/ring/*.cu "$dir/tests/kernels/ring/"
	cp kernels/fatbin/ptxas.txt kernels/fatbin/sources.sha256 kernels/fatbin/ring-ptxas.txt kernels/fatbin/ring.sha256 "$dir/tests/kernels/fatbin/"
	ln -s tests/kernels "$dir/kernels"
fi

go test "${flags[@]}" -c -o "$dir/mpi/mpiboot.test" ./mpiboot
go test "${flags[@]}" -c -o "$dir/mpi/internal-mpi.test" ./internal/mpi
go test "${flags[@]}" -c -o "$dir/mpi/mpi.test" ./test/mpi
for ex in onedevice multidevice progress singleprocess gompi cudaaware coupling; do
	go build "${flags[@]}" -o "$dir/examples/$ex" "./examples/mpi/$ex"
done
if [ -d cmd/gccl-perf ]; then
	go build "${flags[@]}" -o "$dir/bin/gccl-perf" ./cmd/gccl-perf
fi
go build "${flags[@]}" -o "$dir/bin/gccl-bed" ./cmd/gccl-bed
go test "${flags[@]}" -c -o "$dir/mpi/multihost.test" ./test/multihost
cp scripts/run-gpu.sh scripts/perf-gpu.sh scripts/mpirun.sh scripts/multihost-perf.sh "$dir/"
git rev-parse HEAD >"$dir/COMMIT" 2>/dev/null || true
echo "bundle ready: $dir ($(du -sh "$dir" | cut -f1)); on the GPU machine run $dir/run-gpu.sh"

archive=${BUNDLE_ARCHIVE:-out/gpu-bundle.tar.xz}
[ "$archive" != none ] || exit 0
mkdir -p "$(dirname "$archive")"
# One xz stream (-T1): blocks of a multi-threaded run could not share the fatbin.
tar -C "$(dirname "$dir")" -cf - "$(basename "$dir")" | xz -T1 --lzma2=preset=2,dict=256MiB >"$archive.tmp"
mv "$archive.tmp" "$archive"
mib=$(($(stat -c %s "$archive") / 1048576))
limit=${BUNDLE_LIMIT_MIB:-50}
echo "archive: $archive (${mib} MiB); unpack with: tar -xJf $archive -C /tmp && /tmp/$(basename "$dir")/run-gpu.sh"
if [ "$mib" -gt "$limit" ]; then
	echo "gpu-bundle.sh: $archive is ${mib} MiB, over the ${limit} MiB that can be carried to the GPU machine" >&2
	exit 1
fi
