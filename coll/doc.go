// Package coll is the public collective API: AllReduce, Broadcast, Reduce,
// AllGather and ReduceScatter, with NCCL's argument order and semantics.
//
// Every call validates its arguments (a *gccl.Error naming the argument:
// nil or closed communicator, nil buffers with a count, negative or
// overflowing counts, unknown types and operators, roots out of range,
// overlapping buffers that are not NCCL's in-place layout), then enqueues the
// operation on stream and returns at once; Synchronize the stream (or use
// mpiboot.Wait) to wait for it. In place means sendbuff == recvbuff for
// AllReduce, Broadcast and Reduce, sendbuff == recvbuff + rank*count*size for
// AllGather and recvbuff == sendbuff + rank*recvcount*size for ReduceScatter.
//
// CreatePreMulSum and DestroyRedOp make and forget per-communicator
// operators that scale this rank's input by its scalar before summing, so
// an operation computes Σ_r s_r·x_r with every rank's own scalar (in host
// memory, copied at creation, or in device memory, read by each operation
// when it runs), as NCCL's ncclRedOpCreatePreMulSum. Integer scalars
// multiply in their type, modulo 2^bits. An operator may be destroyed as
// soon as the last call given it returns.
//
// Ranks must agree (NCCL's rule): every rank calls a communicator's
// collectives in the same order with the same count, type, operator and
// root. On the host backend (and the GPU-via-host one) ranks that disagree
// get gccl.ErrInvalidUsage naming both sides ("rank 1 received
// AllGather(512 int32) op #17 from rank 0 while running AllReduce(1024
// float32, sum) op #17"), the communicator fails (AsyncError) and no later
// operation sees stale bytes: every message carries a descriptor of its
// operation that the receiver checks first (docs/reliability.md says what
// is checked and what it costs). The GPU backend's direct path (kernels on
// mapped peer memory) does not check. A communicator must be driven by one
// goroutine at a time, or by several that agree on the order (a mutex is
// not enough: the order must be the same on every rank): two goroutines
// whose operations interleave differently on two ranks are reported as a
// disagreement when the operations differ, but two operations of the same
// kind, count, type, operator and root cannot be told apart and silently
// pair the wrong buffers. Use one communicator per goroutine (Split).
//
// How an operation runs is chosen by package internal/algo: on the host
// backend a schedule (ring, double binary tree, direct, or zero-copy over
// mapped buffers) from a cost model, on GPUs a kernel (one-shot, push,
// pipelined, zero-copy on registered buffers) from size limits; GCCL_ALGO /
// NCCL_ALGO and GCCL_PROTO / NCCL_PROTO restrict both with one vocabulary.
package coll
