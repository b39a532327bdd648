// Package gpu is the GPU correctness suite: the collectives and
// point-to-point operations on device buffers, run on the GPU machine under
// mpirun with one process per GPU, several GPUs per process (mpiboot.NewComms)
// and one process driving every GPU (comm.InitAllN), plus CUDA graph capture
// and replay.
//
// Every case fills the inputs with random values every process can
// recompute, poisons the outputs, runs on device memory, copies the result
// back and checks every element on the host against internal/reduce's
// reference (exact for integers, a relative tolerance for floats).
//
// Every test calls cudatest.RequireGPU: without a GPU they skip, and with
// GCCL_REQUIRE_GPU=1 they fail instead, so a GPU job cannot pass by skipping.
// scripts/gpu-bundle.sh builds this package's test binary into bundle/ and
// writes bundle/run-gpu.sh, which runs it on the GPU machine:
//
//	mpirun -np 2 bundle/gpu.test -test.v -gccl.fatbin-dir kernels/fatbin
//
// -gccl.fatbin-dir loads a fatbin built by kernels/build.sh on that machine
// (for binaries built before the fatbin was committed); -gccl.full runs the
// largest count (64 MiB) for every type and operator instead of a subset.
package gpu
