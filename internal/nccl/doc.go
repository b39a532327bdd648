// Package nccl is gccl's binding of NVIDIA's NCCL, used only as the
// baseline gccl-perf measures gccl against (gccl-perf -baseline nccl). It
// is never a dependency of the library: nothing outside cmd/gccl-perf
// imports it.
//
// Like package internal/cuda for libcuda, it is the one package that
// touches its C library, and it needs nothing of it at build time: shim.h
// holds our own declarations of the subset of nccl.h the baseline calls (no
// nccl.h, no -lnccl, no CUDA toolkit), and Load opens libnccl.so.2 with
// dlopen on first use and finds every entry point with dlsym. Entry points
// newer than NCCL 2.7 are optional: a library without them loads, and
// calling one returns an error naming the release that added it.
//
//	lib, err := nccl.Load()
//	if errors.Is(err, nccl.ErrNoLibrary) { ... no NCCL on this machine ... }
//	id, _ := lib.UniqueID()                   // on one rank; share it
//	c, err := lib.InitRank(n, id, rank, time.Minute)
//	defer c.Close()
//	err = c.AllReduce(send, recv, count, gccl.Float32, gccl.Sum, stream)
//
// Every call returns an error, never a bare ncclResult_t: a failed call's
// error is a *gccl.Error whose code matches NCCL's result (the numbering is
// the same), whose Arg names the entry point, and whose cause is the
// Result. Waits have deadlines: InitRank creates the communicator
// nonblocking and polls it ready within the timeout it is given, aborting
// it on expiry, so a rank that never comes turns into gccl.ErrTimeout.
//
// Like NCCL's C functions, the methods act on the CUDA device current on
// the calling OS thread; callers pin their goroutine and make the device's
// context current first (device.CUDADevice.Do does both). Streams and
// buffers are raw handles (gccl.Stream, uintptr), so any CUDA binding's
// values can be passed.
package nccl
