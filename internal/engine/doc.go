// Package engine is the core of the per-communicator engine: it validates
// operations, keeps the communicator's issue order, and hands each launch
// to a backend through one exported, one-way seam. It knows no backend.
//
// Launch submits one communicator's ops; LaunchGroup submits a group over
// several communicators, one launch per engine. Every op is validated
// before anything is submitted, with *gccl.Error values that name the
// argument at fault, and every buffer it touches on this rank is checked
// to lie inside one live allocation of the device (device.CheckRange:
// always on the host, on GPUs when GCCL_CHECK_POINTERS=1, the default
// being DefaultGPUCheckPointers), so that a count too large for its
// buffer, a freed or never-allocated pointer is an InvalidArgument and
// not a crash or a neighbour overwritten. An op with a CreatePreMulSum
// operator captures it then (Op.Scalar), so DestroyRedOp may follow at
// once. Within a launch
// the collectives come first in issue order, then the point-to-point ops,
// which the backends run concurrently so that all-to-all patterns cannot
// deadlock.
//
// A launch takes a turn in the engine's issue order (a ticket lock), and
// the backend runs it only in its turn, so operations run in the same
// order on every rank even when they are spread over several streams.
// A launch's ops may use several streams (NCCL >= 2.20): every backend
// joins them, so the launch starts when every stream has run what was
// enqueued before it, and later work on any of them waits for it: the GPU
// backends link them with CUDA events (package streamjoin), the host
// backend with host-stream events.
//
// # Groups
//
// As in NCCL a group is one call: only each communicator's order must
// match across ranks, not the order in which a rank adds the
// communicators, even when they share a stream. The host backend (a
// Joiner) makes the launches that share a stream one task, which runs
// them concurrently. The GPU backends enqueue each launch on its stream
// as work of its own (kernels, or copies around a wait for the host), so
// two communicators on one stream run one after the other, and a rank
// that queued A then B and a peer that queued B then A would wait for
// each other for ever (A's kernel waits for the peer's A, queued behind
// its B, which waits for this rank's B). LaunchGroup therefore submits
// those launches in a canonical order: by Config.ID, which every rank of
// a communicator shares (comm hashes its unique IDs' rendezvous keys),
// ties kept in the group's order. Every shared stream then gets the
// group's communicators in the same order on every rank, and no wait-for
// cycle can form, as with locks taken in one global order. NCCL instead
// runs each communicator's kernels on an internal stream joined to the
// user's with events, so that a group's communicators run concurrently;
// here that would need a rank's kernels of every communicator of a
// group resident on the GPU at once, which ranks sharing one GPU in one
// process cannot afford (docs/gpu.md), for two events per launch. The
// canonical order costs a sort of a group's launches and keeps exactly
// the kernels that ran at once before. When a backend meets its peers
// in Submit (Meeter), the launches are submitted concurrently, except
// that those sharing a stream are submitted one after the other by one
// goroutine, in the canonical order.
//
// # The seam
//
// New calls Config.Backend (an engine.NewBackend, which package choose
// makes for the device and the peers) with the communicator's Setup. The
// core then hands the Backend one *Launch per call: the ops, the
// streams, and the calls that belong to the launch: WaitTurn, Context
// (the engine's timeout and Abort), Fail (the async error) and Done (the
// end of the launch: the next may run). A backend never sees the Engine.
// Three optional interfaces say what a backend can do beyond Submit and
// Close: a Joiner submits the launches of a group that share a stream
// together (the host backend), a Meeter waits for its peers inside Submit
// so a group must submit concurrently (the GPU backend capturing with
// graph registration), a Reporter reports Stats and the last GPU path.
//
// A failed launch records the engine's async error (AsyncError), after
// which launches fail at once. Every wait is bounded by Config.Timeout and
// cut short by Abort, whose cause replaces the error of what it cut short.
// Drain waits for every launched operation and returns the async error;
// comm.Finalize calls it, then Quiesce (a Quiescer backend stops
// watching its peers), before its closing barrier.
//
// # Words
//
// One meaning each, in every package of the engine:
//
//   - launch: one engine's share of a Launch call or group; turn: its
//     place in the engine's issue order.
//   - backend: what runs launches. host: host memory and host streams
//     (package host); GPU: kernels on CUDA streams over peer-mapped
//     device memory (package gpu); GPU network: a GPU communicator with a
//     peer on another host or more ranks than the peer-memory kernels
//     address, one ring kernel per operation over FIFOs in pinned host
//     memory that the proxy moves over the network (package gpunet,
//     docs/gpunet.md); via host: a GPU communicator on one host with
//     GCCL_P2P_DISABLE, run through pinned host memory on the host
//     backend (package viahost).
//   - p2p: point-to-point operations (Send, Recv), and the GPU kernel that
//     runs them (kernels.P2P). (transport/p2p, which maps peers' device
//     memory, is named by the transport.)
//   - zero-copy: peers load and store a rank's user buffers directly,
//     with no copy through communication buffers: the host ZeroCopy
//     algorithm over mapped host memory, the GPU kernels over registered
//     buffers. copy-in: the host ZeroCopy algorithm's small operations,
//     where each rank copies its input into its control block and every
//     rank reads them there.
//   - staged: moved through the GPU backend's communication buffers (the
//     kernels.*Staged kernels, Stats.StagedBytes), on unregistered buffers.
package engine
