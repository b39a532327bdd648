#!/usr/bin/env bash
# run-gpu.sh — run a gccl bundle (made by `make gpu-bundle`) on a GPU
# machine. Every step prints one line, `PASS name`, `FAIL name` or
# `SKIP name (reason)` (a PASS lists the tests skipped inside it, with their
# reasons; a FAIL is followed by the tail of its log as `#` lines), and the
# last line is `N passed, N failed, N skipped`. The exit status is 1 when
# anything failed. NVLS stays off; GCCL_REQUIRE_GPU=1 makes "no GPU at all"
# a failure (a test that needs more GPUs than there are skips).
#
# With no arguments: the quick tier, within $BUDGET seconds (default 470,
# under 8 minutes on one H100). Ranks share GPU 0 where the machine has
# fewer GPUs than ranks (-gccl.device 0):
#   unit <pkg>            every bundled unit test binary with GPU tests
#   matrix np=1,2,4       test/gpu TestCollectives: every op × one type per
#                         class ($TYPES) × every operator × in/out of place ×
#                         counts $COUNTS, across processes under mpirun
#   matrix shared=4       the same with 4 ranks in one process (TestSharedGPU)
#   gpu np=1,2            the rest of test/gpu: graph capture and replay of
#                         every operation ($REPLAYS replays), registered and
#                         MemAlloc buffers, p2p, groups, several ranks per
#                         process, error paths (mismatched registrations)
#   group device=0 np=1,2 test/gpu's group tests (two communicators added in
#                         different orders on one stream, one communicator
#                         on two streams, eager and captured) with every
#                         rank on GPU 0: three in one process, then two in
#                         each of two processes
#   integration np=2      test/mpi (bad input, lifecycle, p2p, split) on GPUs
#   multihost gpu         every operation eager and captured across 2 and 3
#                         simulated hosts (gccl-bed; root), ranks on GPU 0
#   mpiboot np=2, internal/mpi np=2 (MPI binding, MPI's collectives), examples,
#                         random (tests/test-random, when bundled)
#   gccl-perf             only with PERF=1 (several minutes)
# FULL=1 runs the complete matrix instead (every type, and 64 MiB for a
# subset), part PART (i/n, default 1/1) of it, within $BUDGET seconds
# (default 530): split it so that each part fits one call, e.g. PART=1/3,
# 2/3, 3/3.
# Environment: BUDGET, TYPES, COUNTS, REPLAYS, RANKS (default "1 2 4"),
# SHARED (default 4), LOGS (step logs; default a new /tmp/gccl-run-gpu.*),
# PERF=1 and PERF_ARGS, PERF_RANGE, PERF_OPS, PERF_MODES, PERF_CHECKMAX.
set -uo pipefail
cd "$(dirname "$0")"
export GCCL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 GCCL_NVLS_ENABLE=0
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
ngpu=${ngpu:-0}
if [ "$ngpu" -lt 1 ]; then
	echo "FAIL gpu (no GPU found by nvidia-smi -L)"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
full=${FULL:-0}
budget=${BUDGET:-$([ "$full" = 1 ] && echo 530 || echo 470)}
[ "${PERF:-0}" != 1 ] || [ -n "${BUDGET:-}" ] || budget=$((budget + 3600)) # the benchmark takes its own time
types=${TYPES:-int32,float32,float16,bfloat16,fp8e4m3}
counts=${COUNTS:-0,1,7,1000003}
replays=${REPLAYS:-100}
part=${PART:-1/1}
logs=${LOGS:-$(mktemp -d /tmp/gccl-run-gpu.XXXXXX)}
mkdir -p "$logs"
start=$SECONDS
passed=0 failed=0 skipped=0
echo "# $(cat COMMIT 2>/dev/null || echo unknown commit), $ngpu GPU(s), budget ${budget}s, logs in $logs"

# skipped_inside LOG — "TestX: reason; ..." for the tests a passing run skipped.
skipped_inside() {
	awk '/--- SKIP:/ { name = $3; getline; sub(/^ +[^ ]+:[0-9]+: /, ""); if (!seen[name]++) printf "%s%s: %s", sep, name, $0; sep = "; " }' "$1"
}

skip() { # skip NAME REASON
	echo "SKIP $1 ($2)"
	skipped=$((skipped + 1))
}

# step NAME LIMIT COMMAND... — run COMMAND with at most LIMIT seconds (less
# when the budget has less left; none left fails it), its output in a log.
step() {
	local name=$1 limit=$2
	shift 2
	local left=$((budget - (SECONDS - start) - 5))
	[ "$limit" -le "$left" ] || limit=$left
	if [ "$limit" -lt 10 ]; then
		echo "FAIL $name (no time left in the ${budget}s budget)"
		failed=$((failed + 1))
		return
	fi
	local log="$logs/${name//[^A-Za-z0-9=._-]/_}.log" t0=$SECONDS
	# shellcheck disable=SC2016 # bash -c runs the step's words, functions included
	if MPIRUN_TIMEOUT=$limit timeout --kill-after=10 "$limit" bash -c '"$@"' step "$@" >"$log" 2>&1; then
		local inside
		inside=$(skipped_inside "$log")
		echo "PASS $name ($((SECONDS - t0))s${inside:+; skipped inside: $inside})"
		passed=$((passed + 1))
	else
		local rc=$?
		echo "FAIL $name ($((SECONDS - t0))s, exit $rc$([ $rc -ge 124 ] && echo ", over its ${limit}s"); log $log)"
		grep -E -- '--- FAIL|^panic|Error Trace|Error:|GCCL_REQUIRE_GPU|timed out' "$log" | awk '!seen[$0]++' | head -n 12 | sed 's/^/#   /'
		grep -v -E -- '^-+$|mpirun|Primary job|non-zero|^ *$' "$log" | tail -n 4 | sed 's/^/#   /'
		failed=$((failed + 1))
	fi
}

# mpi NP BINARY ARGS... — BINARY on NP processes; on a machine with fewer
# GPUs than NP they all share GPU 0 (-gccl.device 0).
mpi() {
	local np=$1
	shift
	local dev=()
	[ "$ngpu" -ge "$np" ] || dev=(-gccl.device 0)
	./mpirun.sh "$np" "$@" "${dev[@]}"
}

# indir DIR COMMAND... — run COMMAND in DIR (test binaries read files there).
indir() { (cd "$1" && shift && "$@"); }

export -f mpi indir
export ngpu
gpu_test=tests/test-gpu/pkg.test
gotest=(-test.count=1 -test.v)

# matrix LIMIT [FLAGS...] — the collective matrix at every rank count.
matrix() {
	local limit=$1
	shift
	for np in ${RANKS:-1 2 4}; do
		step "matrix np=$np" "$limit" mpi "$np" "$gpu_test" "${gotest[@]}" -test.run '^TestCollectives$' "$@"
	done
	step "matrix shared=${SHARED:-4}" "$limit" indir tests/test-gpu ./pkg.test "${gotest[@]}" \
		-test.run '^TestSharedGPU$' -gccl.shared "${SHARED:-4}" "$@"
}

if [ "$full" = 1 ]; then
	matrix 240 -gccl.types all -gccl.counts "$counts" -gccl.large=true -gccl.part "$part"
	echo "$passed passed, $failed failed, $skipped skipped"
	[ "$failed" -eq 0 ]
	exit
fi

for d in tests/*/; do
	name=$(basename "$d")
	case $name in test-gpu | test-random) continue ;; esac # run below, under mpirun
	step "unit $name" 120 indir "$d" ./pkg.test "${gotest[@]}" -test.timeout=115s
done
matrix 120 -gccl.types "$types" -gccl.counts "$counts" -gccl.large=false
# Graph capture and replay of every operation, registered and MemAlloc
# buffers, p2p, groups: one process, and two sharing the GPU.
for np in ${GPU_RANKS:-1 2}; do
	step "gpu np=$np" 100 mpi "$np" "$gpu_test" "${gotest[@]}" -test.skip '^(TestCollectives|TestSharedGPU)$' -gccl.replays "$replays"
done
# Groups (issue 16) with ranks sharing GPU 0, in one process and across two.
for np in 1 2; do
	step "group device=0 np=$np" 60 ./mpirun.sh "$np" "$gpu_test" "${gotest[@]}" \
		-test.run '^(TestGroupCommOrder|TestGroupSeveralStreams)$' -gccl.device 0
done

# The examples take the GPU of their local rank: as many processes as GPUs.
for ex in onedevice progress gompi; do
	step "example $ex np=$ngpu" 60 ./mpirun.sh "$ngpu" "examples/$ex"
done
step "example singleprocess ndev=$ngpu" 60 examples/singleprocess -ndev "$ngpu"
if [ "$ngpu" -ge 2 ]; then
	step "example multidevice np=$((ngpu / 2)) ngpus=2" 60 ./mpirun.sh $((ngpu / 2)) examples/multidevice -ngpus 2
else
	step "example multidevice np=1 ngpus=1" 60 ./mpirun.sh 1 examples/multidevice -ngpus 1
	skip "examples np=2" "needs 2 GPUs, found $ngpu: the examples put each process on its local rank's GPU"
fi

# The MPI examples of issue 17 with every process on GPU 0 (-device 0):
# CUDA-aware MPI traffic beside gccl, and two coupled solvers (MPMD by flag).
step "example cudaaware np=2 device=0" 60 ./mpirun.sh 2 examples/cudaaware -device 0 -rounds 3 -count 4099
step "example coupling np=3 device=0" 90 ./mpirun.sh 3 examples/coupling -device 0 -a 1 -steps 200 -every 7

# ---- random operation sequences (package ./test/random): every type,
# several communicators (world, duplicate, split) on several streams,
# groups, counts 0 to 1M, every element checked. The quick tier runs a few
# seeds; RANDOM_SEEDS=20 RANDOM_OPS=500 is issue 21's acceptance run.
random=tests/test-random/pkg.test
rflags=(-random.backend cuda -random.seeds "${RANDOM_SEEDS:-2}" -random.ops "${RANDOM_OPS:-300}" -random.seed "${RANDOM_SEED:-1}")
if [ -x "$random" ]; then
	# 4 ranks in one process use up to 3 communicators at once: their
	# kernels must all be resident; the GPU backend shares the SMs out
	# among them (docs/gpu.md, Synchronisation).
	step "random shared=4" "${RANDOM_LIMIT:-45}" bash -c \
		"cd tests/test-random && ./pkg.test ${gotest[*]} -test.run '^TestShared\$' -random.shared 4 ${rflags[*]}"
	for np in 2 3 4; do
		step "random np=$np" "${RANDOM_LIMIT:-45}" ./mpirun.sh "$np" "$random" "${gotest[@]}" -test.run '^TestMPI$' -gccl.device 0 "${rflags[@]}"
	done
else
	skip "random" "no $random in this bundle"
fi

step "mpiboot np=2" 60 ./mpirun.sh 2 mpi/mpiboot.test "${gotest[@]}"
if [ -x mpi/internal-mpi.test ]; then
	step "internal/mpi np=2" 60 ./mpirun.sh 2 mpi/internal-mpi.test "${gotest[@]}"
else
	skip "internal/mpi" "no mpi/internal-mpi.test in this bundle"
fi
# test/mpi on the GPU: communicator life cycle, split, abort, p2p patterns,
# groups (its collective matrix is test/gpu's, above).
step "integration np=2" 100 mpi 2 mpi/mpi.test "${gotest[@]}" -test.timeout=95s -test.skip '^TestCollectives$'

# ---- GPU communicators across simulated hosts (issue 20): bin/gccl-bed
# puts each host in its own network and UTS namespace on a veth bridge
# (root), every rank on GPU 0 under mpirun; gccl-perf runs every operation
# eager and captured in a CUDA graph and checks every element. Processes
# sharing the GPU are time-sliced (each two-way exchange waits ~2 ms for
# the peer's slice), so the sizes stay small: this is for correctness.
multihost() { # multihost HOSTS PER GCCL-PERF-ARGS...
	local hosts=$1 per=$2
	shift 2
	bin/gccl-bed with -gateway -hosts "$hosts" -- bin/gccl-bed mpirun -per "$per" -timeout "$((MPIRUN_TIMEOUT - 5))s" -- \
		bin/gccl-perf -op all -device 0 -n 2 -w 1 "$@"
}
export -f multihost
if [ "$(id -u)" != 0 ] || [ ! -x bin/gccl-bed ]; then
	echo "FAIL multihost gpu (needs root and bin/gccl-bed: simulated hosts are network namespaces)"
	failed=$((failed + 1))
else
	step "multihost gpu 2x1" 60 multihost 2 1 -b 8 -e 256K -f 8
	step "multihost gpu 2x1 graph" 60 multihost 2 1 -b 8 -e 256K -f 8 -graph -launches 2
	step "multihost gpu 2x2" 60 multihost 2 2 -b 8 -e 32K -f 64 -t int32 -o max
	step "multihost gpu 3x1 graph" 60 multihost 3 1 -b 8 -e 32K -f 64 -graph -launches 2 -t float16
fi

# perf NAME ARGS... — one gccl-perf run against NCCL on every GPU; with
# OUT, its table goes to $OUT/perf/NAME.txt (CSV and PNG beside it).
perf() {
	local name=$1
	shift
	local extra=()
	[ -z "${OUT:-}" ] || extra=(-csv "$OUT/perf/$name.csv" -png "$OUT/perf/$name.png")
	step "gccl-perf $name np=$ngpu" 300 ./mpirun.sh "$ngpu" bin/gccl-perf "$@" "${extra[@]}"
	local log="$logs/gccl-perf_${name}_np=$ngpu.log"
	grep -E '^# (gccl-perf|Out of bounds|nccl out of bounds|time ratio|Summary)|^#  +op|^ +[a-z]+ .*@' "$log" | sed 's/^[^#]/# &/'
	[ -z "${OUT:-}" ] || cp "$log" "$OUT/perf/$name.txt"
}
if [ "${PERF:-0}" = 1 ] && [ -x bin/gccl-perf ]; then
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
elif [ "${PERF:-0}" != 1 ]; then
	skip "gccl-perf" "opt-in: PERF=1"
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
