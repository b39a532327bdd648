// Package harness holds what gccl's MPI-launched test suites share: test/mpi
// (the host or default backend) and test/gpu (device buffers on GPUs).
//
// RunUnderMPI is the body of their TestMain (mpiboot.Init, the MPI deadline,
// the tests, mpiboot.Finalize). Agree makes every process fail together when
// any process recorded a failure, so that all of them make the same calls in
// the same order. Input and Inputs are the random, per-(seed, rank) inputs
// every process can recompute; Buffers allocates device memory filled with
// content and then Poison, and frees it after the test.
//
// Case is one collective call (kind, type, operator, count, root, placement,
// seed); Prepare computes every rank's input and the reference once (Data).
// Data.Launch enqueues it on buffers of a Scratch (device memory reused from
// case to case, recvbuff poisoned on the device) with sendbuff where NCCL
// puts it in place, Run waits with MPI progress and checks every element of
// recvbuff against internal/reduce's reference. Each suite builds its own
// matrix of cases.
package harness
