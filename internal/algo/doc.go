// Package algo computes the schedules of gccl's collectives: pure functions
// of (operation, rank count, rank, element count, element size, root) with no
// I/O and no clock, so the same plans drive the host backend, the GPU backend
// and the tests.
//
// A Plan is one rank's ordered list of Steps. A step moves a byte range
// between the rank's buffers (its send buffer, its receive buffer and a
// scratch area the engine allocates with Plan.ScratchBytes) and its peers:
// send, receive, receive-and-reduce, receive-reduce-and-forward,
// receive-and-forward, local copy, local reduce. Plans assume the execution
// model of the engine: sends are posted asynchronously (they complete when the
// peer consumed them), receives block, and a step that writes a range first
// waits for the posted sends that still read it. Every rank walks the same
// global sequence of phases and each phase's messages form an acyclic graph,
// so the schedules cannot deadlock.
//
// Three message-passing algorithms are provided, and a fourth without steps:
//
//   - Ring: reduce-scatter then all-gather around the ring for AllReduce,
//     the two halves alone for ReduceScatter and AllGather, and a pipelined
//     chain for Broadcast and Reduce. Data is cut into pieces of at most
//     ChunkBytes per block so consecutive pieces overlap.
//   - Tree: a double binary tree for AllReduce (two trees, one per half of
//     the data; a rank that is a leaf in one tree is inner in the other) and a
//     binary tree rooted at the root for Broadcast and Reduce.
//   - Direct: every rank exchanges with every other rank in one step: lowest
//     latency for small counts, and the shape of all-to-all patterns.
//   - ZeroCopy: ranks on one host map each other's buffers and each rank
//     reduces or copies its own slice (Slices) directly, in cache-sized
//     Blocks. It has no step schedule (Build rejects it) and Choose never
//     picks it; the engine tries it first where it can and falls back to
//     Choose's pick. GCCL_ALGO=^zerocopy turns it off.
//
// Choose picks an algorithm from an alpha-beta cost model per transport,
// restricted by the GCCL_ALGO / NCCL_ALGO allow list (see ParseAllowed).
package algo
