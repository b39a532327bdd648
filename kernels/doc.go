// Package kernels holds gccl's CUDA kernels: the C++ sources (*.cu, *.cuh),
// the script that builds them (build.sh, nvcc 13: SASS for sm_80 and sm_90,
// PTX for compute_90) and the built modules, embedded from fatbin/: Main
// (gccl.fatbin, the peer-memory kernels) and Ring (ring.fatbin, from ring/).
//
// The kernels move and reduce data over NVLink-mapped peer buffers: one-shot
// (LL flag-in-data), two-shot and pipelined all-reduce, reduce-scatter,
// reduce, all-gather, broadcast, point-to-point copies and barriers, for
// every gccl data type and operator. Each takes a Comm (struct gcclComm) by
// value: up to MaxRanks peers' input, output, scratch and flag pointers.
// docs/gpu.md documents every entry point and its parameters.
//
// The ring kernels (ring/ring.cu, module Ring) serve communicators whose
// ranks cannot all map each other's memory (a peer on another host): one
// kernel per collective over FIFOs in pinned host memory that a proxy
// goroutine moves over the network (RingDesc, NetP2PDesc, FIFO;
// docs/gpunet.md is their contract).
//
// Nobody who builds gccl needs nvcc: each fatbin is built once on a GPU
// machine and committed with a record of its sources' hash. Module.Image checks
// that record, and the package's test fails in CI when a .cu file changed
// after the fatbin was built, so a stale fatbin is never shipped.
package kernels
