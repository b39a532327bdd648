// Package viahost is the engine's GPU-via-host backend: a GPU
// communicator whose peers cannot map each other's device memory
// (GCCL_P2P_DISABLE, a peer on another host, more ranks than the kernels
// address) runs its operations on the host backend, through pinned host
// memory. On the caller's stream each launch copies its inputs into a
// pinned block, raises a host-mapped "ready" word and waits
// (cuStreamWaitValue32) for a "done" word that a goroutine raises after
// running the ops on the host copies in the launch's turn; then the
// stream copies the results back. The stream waits, not the caller. It
// cannot be captured in a CUDA graph: a replay would not wake the
// goroutine.
package viahost
