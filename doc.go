// Package gccl holds the vocabulary shared by every gccl package: data types,
// reduction operators, streams, device pointers and the typed errors that
// mirror NCCL's result codes.
//
// gccl is a library for collective communication between GPUs (and, with the
// host backend, CPUs) in the NCCL model. The packages a program uses are:
//
//   - comm: communicators (InitRank, InitAll, Split, Finalize, Close, Abort).
//   - mpiboot: creating communicators from an MPI job.
//   - coll: AllReduce, Broadcast, Reduce, AllGather, ReduceScatter.
//   - p2p: Send, Recv and the patterns built from them.
//   - group: fusing many operations into one launch.
//   - device: the device a rank runs on (a GPU, or the host), its memory and streams.
//
// Buffers are device pointers (uintptr): CUdeviceptr values on a GPU, host
// addresses from device.Device.Alloc on the host backend. Streams are
// gccl.Stream values: a CUstream on a GPU, a host stream handle on the host.
package gccl
