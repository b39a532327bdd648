// Package peermem maps GPU memory between the ranks of one node so that
// kernels can load and store a peer's buffer directly over NVLink (or PCIe):
// the GPU backend's way to reach a peer. (The name says what it does; "p2p"
// is the Send/Recv API.)
//
// Each rank describes one device allocation in an Offer: its process id,
// host hash, device ordinal, the raw device pointer and a CUDA IPC handle
// (cuIpcGetMemHandle). The offers travel through the communicator's
// bootstrap all-gather (the engine does that) and Open maps them:
//
//   - a peer in another process on this host: cuIpcOpenMemHandle with lazy
//     peer access, closed again by Mapping.Close;
//   - a peer in this process (several GPUs per process, comm.InitAll): a
//     process cannot open its own IPC handles, so Open retains the peer
//     device's primary context, enables peer access to it from the current
//     context (cuCtxEnablePeerAccess) and uses the raw pointer;
//   - this rank, or a peer on the same GPU in this process: the raw pointer.
//
// Peers on another host cannot be mapped; SameHost tells the engine so it can
// fall back to the host transports (package transport's table). Peer memory
// is not a row of that table: a row carries bytes through Conns, while a
// Mapping gives kernels pointers; the engine's GPU backend chooses between
// the two. Every function acts on the CUDA context
// current on the calling OS thread, as the driver API does.
//
// NVLink multicast (NVLS) is never used here.
package peermem
