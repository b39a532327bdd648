// Package harness holds what gccl's test suites share: test/mpi (the host or
// default backend), test/gpu (device buffers on GPUs), test/random (seeded
// random sequences) and test/soak.
//
// RunUnderMPI is the body of their TestMain (mpiboot.Init, the MPI deadline,
// the tests, mpiboot.Finalize). Agree makes every process fail together when
// any process recorded a failure, so that all of them make the same calls in
// the same order. Input and Inputs are the random, per-(seed, rank) inputs
// every process can recompute; Buffers allocates device memory filled with
// content and then Poison, and frees it after the test.
//
// Case is one collective call (kind, type, operator, count, root, placement,
// seed), or a point-to-point pattern (P2PKinds: a Send/Recv pair, shift,
// all-to-all, all-to-allv, neighbour exchange, scatter, gather, described by
// Transfers). Sizes and Expected give its buffers and result for any rank,
// InPlaceOffsets where NCCL puts sendbuff in place; Launch enqueues it in
// fresh Buffers, Run waits with MPI progress and checks every element of
// recvbuff against internal/reduce's reference. A Call is a Case placed in
// buffers a suite laid out itself, launched alone or added to a group.
//
// For a matrix of collectives, Prepare computes every rank's input and the
// reference once (Data); Data.Launch enqueues it on buffers of a Scratch
// (device memory reused from case to case, recvbuff poisoned on the device).
// Each suite builds its own matrix or sequence of cases.
package harness
