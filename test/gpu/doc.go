// Package gpu is the GPU correctness suite: the collectives and
// point-to-point operations on device buffers, run on the GPU machine under
// mpirun with one process per GPU, several GPUs per process (mpiboot.NewComms)
// and one process driving every GPU (comm.InitAllN), plus CUDA graph capture
// and replay. On a machine with fewer GPUs than ranks, -gccl.device puts
// every rank on one GPU, and TestSharedGPU runs several ranks in one process
// (scripts/run-gpu.sh does both).
//
// Every case fills the inputs with random values every process can
// recompute, poisons the outputs, runs on device memory, copies the result
// back and checks every element on the host against internal/reduce's
// reference (exact for integers, a relative tolerance for floats).
//
// Every test calls cudatest.RequireGPU: without a GPU they skip, and with
// GCCL_REQUIRE_GPU=1 they fail instead, so a GPU job cannot pass by skipping.
// scripts/gpu-bundle.sh builds this package's test binary into
// bundle/tests/test-gpu/pkg.test; on the GPU machine run it under mpirun,
// one process per GPU (TestCollectives, the p2p and graph tests, and with
// two GPUs per process TestSeveralGPUsPerProcess), and once without mpirun
// (TestInitAll drives every GPU from one process):
//
//	mpirun --allow-run-as-root --oversubscribe -np 4 pkg.test -gccl.large=false
//	pkg.test -test.run TestInitAll
//
// Flags: -gccl.counts (the counts of the full matrix, default
// 0,1,7,1000003), -gccl.types (all, or a list of types), -gccl.part i/n
// (every n-th case of the matrix from the i-th), -gccl.large (also 64 MiB; a subset of types and
// operators unless -gccl.full), -gccl.timeout, -gccl.device N (every rank
// on GPU N: several processes share one GPU, for one-GPU machines), and
// -gccl.fatbin-dir (load a fatbin kernels/build.sh just wrote instead of
// the embedded one). GCCL_P2P_DISABLE=1 runs the same suite through the
// host-staged fallback.
package gpu
