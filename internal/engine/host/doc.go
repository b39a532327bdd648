// Package host is the engine's host backend: the same operations over host
// memory and host streams (package hoststream), SHM between the ranks of a
// host and sockets across hosts (package transport). It is what runs on a
// machine without a GPU, and what the GPU-via-host backend runs its host
// copies on.
//
// Open opens the transport endpoint and exchanges every rank's address
// over the bootstrap; connections are made on first use, all the peers an
// operation needs at once (each Connect waits for the peer's, so
// one-by-one could wait in a cycle).
//
// Submit enqueues one task per launch on its host stream, its other
// streams joined to it by events. The backend is an engine.Joiner: in a
// group, the launches of several engines that share a stream become one
// task that runs them concurrently (task.go): run one after the other, two
// communicators' launches could each wait for peers that another rank
// queued in the other order, and NCCL treats a group as one call, so only
// each communicator's own order must match across ranks. A task waits for
// each launch's turn, runs its collectives in order with the plans of
// package algo, then its point-to-point ops, one goroutine per peer and
// direction. A plan runs on a runner: sends are posted to a goroutine per
// peer and complete when the peer took the bytes, receives reduce straight
// out of the transport's pieces, and a step that writes a range first
// waits for the posted sends still reading it. A failed launch records the
// engine's async error and the stream's Synchronize returns it.
//
// Zero-copy: when every rank is on one host (all peers reached through
// SHM) Open also sets up a control block per rank (one page of host shared
// memory that every peer maps, and two copy-in areas) and the collectives
// first try the ZeroCopy algorithm (GCCL_ALGO can exclude it:
// "^zerocopy"). Each rank publishes where its buffers lie (region name,
// inode, offset) and arrives at a barrier; if every buffer the kind needs
// is in memory from a host device's Alloc, every rank maps its peers'
// regions (cached per peer, at most 16, keyed by name and inode so a
// reused name is remapped) and works on its own slice: AllReduce and
// Reduce reduce slice r of every input, block by block in a private
// accumulator, and store it into every output (or the root's);
// ReduceScatter reduces block r into the rank's own output; AllGather and
// Broadcast copy the peers' inputs into the rank's own output. A second
// barrier ends the operation. Operations whose input is at most 64 KiB
// are copy-in operations instead: each rank copies its input into its
// control block's copy-in area, one barrier, and each rank computes its
// own output from every area (any host memory works; nothing of the
// user's is mapped). Otherwise every rank reaches the same verdict from
// the same published descriptors and runs the step schedule instead. The
// barriers are sequence words in the control blocks (package futex): a
// waiter spins briefly, yields, then sleeps on a futex that the last
// arrival wakes; every wait checks the deadline, Abort, the peer's failure
// flag and whether the peer's process still runs. Descriptors alternate
// between two sets by barrier parity, so a rank that runs ahead never
// overwrites what a slower peer still reads.
//
// Ranks that disagree (desc.go): every message on a transport carries a
// 24-byte descriptor of its operation (the collective's number, or the
// Send's number with that peer after how many collectives; kind, count,
// type, operator, root or sender), and the transport adds its length, once
// per message. The receiver checks both before it uses a byte; zero-copy
// and copy-in ranks publish the same descriptor in their control block and
// compare at the first barrier. A mismatch is gccl.ErrInvalidUsage naming
// both ranks; the refusing rank tells the sender (transport.Conn.Fail), and
// any failed operation tells every connected peer, so that peers waiting
// for this rank fail at once with its error instead of waiting for the
// deadline, and the communicator (its async error) is failed.
//
// Avg reduces as Sum then divides by the rank count. A CreatePreMulSum
// operator is NCCL's Σ_r s_r·x_r: each rank scales a copy of its own input
// by its own scalar, then the ranks reduce as Sum. The arithmetic is
// DefaultReducer (package internal/reduce: every data type and operator)
// unless Config.Reducer replaces it.
package host
