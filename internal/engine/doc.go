// Package engine is the per-communicator engine: it turns operations into
// plans (package algo), connects to peers through the transports, and runs
// the plans on a backend.
//
// New exchanges every rank's transport address over the communicator's
// bootstrap; connections are made on first use, all the peers an operation
// needs at once (each Connect waits for the peer's, so one-by-one could wait
// in a cycle). Launch submits one communicator's ops; LaunchGroup submits a
// group over several communicators, one launch per engine. Every op is
// validated before anything is submitted, with *gccl.Error values that name
// the argument at fault.
//
// A launch takes a ticket in the engine's issue order and its task waits for
// its turn, so operations run in the same order on every rank even when they
// are spread over several streams. Within a launch the collectives run in
// issue order, then the point-to-point ops run concurrently, one goroutine
// per peer and direction, so all-to-all patterns cannot deadlock.
//
// A launch's ops may use several streams; the launch joins them (NCCL >=
// 2.20): it starts when every stream has run what was enqueued before it,
// and later work on any of them waits for it. The GPU backend takes one
// stream per launch.
//
// The host backend (HostBackend) enqueues one task per launch on the host
// stream, its other streams joined to it by events. In a group, the
// launches of several engines that share a stream become one task that
// runs them concurrently (hosttask.go): run one after the other, two
// communicators' launches could each wait for peers that another rank
// queued in the other order, and NCCL treats a group as one call, so only
// each communicator's own order must match across ranks. The task executes
// each plan with a runner: sends are posted to a
// goroutine per peer and complete when the peer took the bytes, receives
// reduce straight out of the transport's pieces, and a step that writes a
// range first waits for the posted sends still reading it. A failed task
// records the engine's async error (AsyncError) and the stream's Synchronize
// returns it. Every wait is bounded by Config.Timeout and cut short by Abort.
//
// Zero-copy: when every rank is on one host (all peers reached through
// SHM) New also sets up a control block per rank (one page of host shared
// memory that every peer maps) and the collectives first try the ZeroCopy
// algorithm (GCCL_ALGO can exclude it: "^zerocopy"). Each rank publishes
// where its buffers lie (region name, inode, offset) and arrives at a
// barrier; if every buffer the kind needs is in memory from a host device's
// Alloc, every rank maps its peers' regions (cached per peer, at most 16,
// keyed by name and inode so a reused name is remapped) and works on its own
// slice: AllReduce and Reduce reduce slice r of every input, block by block
// in a private accumulator, and store it into every output (or the root's);
// ReduceScatter reduces block r into the rank's own output; AllGather and
// Broadcast copy the peers' inputs into the rank's own output. A second
// barrier ends the operation. Operations whose input is at most 64 KiB are
// staged instead: each rank copies its input into its control block's
// staging area, one barrier, and each rank computes its own output from
// every area (any host memory works; nothing of the user's is mapped).
// Otherwise every rank reaches the same verdict
// from the same published descriptors and runs the step schedule instead.
// The barriers are sequence words in the control blocks: a waiter spins
// briefly, yields, then sleeps on a futex that the last arrival wakes; every
// wait checks the deadline, Abort, the peer's failure flag and whether the
// peer's process still runs. Descriptors alternate between two sets by
// barrier parity, so a rank that runs ahead never overwrites what a slower
// peer still reads.
//
// Avg reduces as Sum then divides by the rank count. An operator made by
// CreatePreMulSum is NCCL's Σ_r s_r·x_r: each rank scales a copy of its own
// input by its own scalar, then the ranks reduce as Sum; an operation
// captures its operator when it is enqueued, so DestroyRedOp may follow at
// once. The GPU backend passes the scalar (its bits, or its device pointer
// for ScalarDevice) to the kernels, which read it when they run, and never
// takes zero-copy for PreMulSum (those kernels read peers' raw inputs). The arithmetic
// is DefaultReducer (package internal/reduce: every data type and operator)
// unless Config.Reducer replaces it.
//
// Drain waits for every launched operation and returns the async error;
// comm.Finalize calls it before its closing barrier.
//
// The Backend interface is the seam for the GPU backend, which launches
// kernels instead of host tasks.
package engine
