// Package choose picks an engine's backend from the device and the peers'
// reachability: the host backend for a host device, the GPU backend for a
// GPU whose peers map each other's memory, the GPU network backend
// (package gpunet) for a GPU communicator with a peer on another host or
// more ranks than the peer-memory kernels address, and the GPU-via-host
// backend only for GCCL_P2P_DISABLE on one host. It is the one place that
// knows every backend; the engine's core knows none of them (it takes the
// engine.NewBackend this package returns), and no backend knows another
// but the GPU-via-host backend, which runs its ops on the host backend.
package choose
