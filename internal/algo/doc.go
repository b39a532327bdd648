// Package algo holds gccl's one algorithm vocabulary and the host
// backend's schedules and choice: the operations (Kind), the algorithms
// and protocols that GCCL_ALGO and GCCL_PROTO name, the step plans and the
// cost model; the GPU backend's kernel choice, in the same vocabulary, is
// its sub-package gpuplan. Everything here is pure (no I/O, no clock), so
// the choices are golden-tested under testdata/ and both backends and the
// tests share them.
//
// # Vocabulary
//
// Kind is the only operation enum: the five collectives and the
// point-to-point P2PSend and P2PRecv. An Algorithm is a way of moving a
// collective's data; each backend implements some:
//
//	algorithm  host                              GPU
//	ring       schedule (Build)                  -
//	tree       schedule (Build)                  -
//	direct     schedule (Build)                  one-shot kernels (LL), push all-reduce (Simple)
//	zerocopy   mapped user buffers (the engine)  registered user buffers
//	pipelined  -                                 bulk-area kernels, segment by segment
//
// A Protocol is how a reader learns that data arrived: Simple (separate
// flags or barriers; every host schedule, every GPU kernel but the
// one-shots) or LL (a flag in every 16-byte store; the GPU one-shots).
// LL128 is NCCL's, accepted and unused.
//
// GCCL_ALGO and GCCL_PROTO are allow lists in NCCL's syntax (ParseAllowed,
// ParseProtocols; package env parses them once) with the same meaning on
// both backends: a backend picks among the allowed algorithms and
// protocols it implements, and whatever none of them can run takes its
// general path, which a list cannot turn off: ring on the host, pipelined
// on the GPU, Simple on both. A list that keeps LL and leaves out Simple
// sends every GPU collective whose copies fit the direct area through a
// one-shot kernel, whatever its size; the host has no LL and runs Simple.
//
// # Host schedules
//
// A Plan is one rank's ordered list of Steps. A step moves a byte range
// between the rank's buffers (its send buffer, its receive buffer and a
// scratch area the engine allocates with Plan.ScratchBytes) and its peers:
// send, receive, receive-and-reduce, receive-reduce-and-forward,
// receive-and-forward, local copy, local reduce. Plans assume the execution
// model of the engine: sends are posted asynchronously (they complete when
// the peer consumed them), receives block, and a step that writes a range
// first waits for the posted sends that still read it. Every rank walks the
// same global sequence of phases and each phase's messages form an acyclic
// graph, so the schedules cannot deadlock.
//
//   - Ring: reduce-scatter then all-gather around the ring for AllReduce,
//     the two halves alone for ReduceScatter and AllGather, and a pipelined
//     chain for Broadcast and Reduce. Data is cut into pieces of at most
//     ChunkBytes per block so consecutive pieces overlap.
//   - Tree: a double binary tree for AllReduce (two trees, one per half of
//     the data; a rank that is a leaf in one tree is inner in the other) and
//     a binary tree rooted at the root for Broadcast and Reduce.
//   - Direct: every rank exchanges with every other rank in one step.
//   - ZeroCopy has no steps: ranks on one host map each other's buffers and
//     each rank reduces or copies its own slice (Slices) in cache-sized
//     Blocks. The host engine tries it first where the ranks can map each
//     other and the list allows it, and falls back to Choose's pick.
//
// Channels, as NCCL's: Params.Channels cuts a collective into parts
// (ChannelPart: consecutive and aligned, within each rank's block for
// AllGather and ReduceScatter) that run at once, each channel its own plan
// over its own connections with its own scratch, so that several messages
// are in flight per peer and several cores reduce. A channel's plan is the
// schedule of its part, its refs moved into the whole buffers. NumChannels
// is how many a collective uses: one per ChannelBytes (64 KiB) per rank of data,
// at most the backend's setting (the host backend's GCCL_NET_NCHANNELS, on
// communicators that span hosts).
//
// Choose picks the allowed schedule of least modelled cost (an alpha-beta
// model per transport), Ring when the list allows none that has a schedule
// for the kind.
//
// # GPU kernels
//
// The GPU backend's choice (which kernel, grid and area for one
// operation) is package gpuplan, in this package's vocabulary.
package algo
