// Package cuda is gccl's only door to the CUDA driver.
//
// It declares the subset of the driver ABI gccl needs itself (shim.h; no
// cuda.h, no -lcuda, no CUDA toolkit at build time), opens libcuda.so.1
// with dlopen when Load is first called, finds cuGetProcAddress_v2 (or
// cuGetProcAddress on drivers before CUDA 12) with dlsym, and resolves every
// other entry point through it at a pinned ABI version, as NCCL's cudawrap
// does: cuMemAlloc at 3020 (the _v2 ABI), cuMemCreate at 10020,
// cuStreamGetCaptureInfo at 12030 (v3, with a fallback to v2 at 11030), and
// so on. An entry point the driver lacks does not stop Load; calling it
// returns an error with ErrorSymbolMissing. With no driver at all, Load
// returns an error wrapping ErrNoDriver (and gccl.ErrSystem), and the rest
// of gccl falls back to the host backend.
//
// The API is the Driver interface, in Go terms: device pointers and
// handles are uintptr-based values (so programs using another CUDA binding
// can pass their own), sizes are ints, every call returns an error, and a
// failed call's error is a *gccl.Error with code gccl.UnhandledCudaError,
// the entry point's name as its Arg, the driver's cuGetErrorName and
// cuGetErrorString text, and the Result as its cause:
//
//	d, err := cuda.Load()
//	if errors.Is(err, cuda.ErrNoDriver) { ... use the host backend ... }
//	p, err := d.MemAlloc(1 << 20)
//	if errors.Is(err, cuda.ErrorOutOfMemory) { ... }
//
// Kernel arguments are packed with Args; host functions and user-object
// destructors are Go closures called through one exported trampoline and a
// handle table. NVLink multicast (cuMulticast*) is deliberately absent.
//
// Package cudafake implements Driver on host memory (streams as ordered
// queues, kernels as registered Go functions) so the packages above test
// without a GPU; package cudatest has RequireGPU for tests that need one.
package cuda
