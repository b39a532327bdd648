// Package bufreg is user buffer registration: the allocator for
// registrable buffers and the registration of buffers with a
// communicator, NCCL's ncclMemAlloc/ncclMemFree and
// ncclCommRegister/ncclCommDeregister.
//
// # What to use
//
// An application allocates with MemAlloc and frees with MemFree,
// registers with Register (given a *comm.Comm) and deregisters the Handle
// it returned with Deregister; see the example. That is the whole API.
//
// # Allocation
//
// MemAlloc and MemFree play ncclMemAlloc and ncclMemFree. On a GPU the
// memory comes from the CUDA virtual memory API (cuMemCreate with the
// POSIX file descriptor handle type, plus the fabric handle type where the
// device supports it), its size rounded up to the recommended allocation
// granularity and its address aligned to the minimum granularity, mapped
// for the device and every peer that can reach it; a peer process imports
// the exported file descriptor and maps the same physical memory. On the
// host backend MemAlloc is the host device's shared memory. MemFree of
// memory that is still registered is gccl.ErrInvalidUsage.
//
// # Registration
//
// Register(comm, ptr, size) and Deregister(handle) play ncclCommRegister
// and ncclCommDeregister. Register is collective: every rank calls it with
// its own buffer, in the same order, and each rank maps every peer's
// buffer once, so that operations on sub-buffers of registered memory let
// kernels load and store peers' buffers with no staging copy. One large
// registered chunk serves every sub-buffer inside it; registering the same
// range twice shares one registration with two handles. cuMem memory
// (MemAlloc) reaches a peer in another process of the same host as a file
// descriptor passed over an abstract Unix socket, guarded by a random
// token. Ranks on different hosts, or ranks that cannot fetch each other's
// descriptors (different network namespaces), keep their registrations
// but stage; a buffer that cannot be registered on one rank fails the call
// on every rank. GCCL_LOCAL_REGISTER=0 (NCCL_LOCAL_REGISTER=0) turns
// Register into a no-op.
//
// NCCL requires that either every rank passes registered buffers to an
// operation or none does, and that the buffers lie at the same offset of
// their registrations on every rank. gccl checks it: ranks that disagree
// get gccl.ErrInvalidUsage, never wrong data.
//
// An operation that uses a registration holds it until its stream passes
// the operation or, when captured in a CUDA graph, until the graph is
// destroyed. Deregistering the last handle of a registration that is held
// is gccl.ErrInvalidUsage (synchronize the streams and destroy the graphs
// first), as is deregistering a handle twice.
//
// The registrations belong to the communicator: its Close and Abort
// release them, their handles are deregistered then, and the memory may be
// freed.
//
// # Graph registration
//
// Buffers of collectives captured into a CUDA graph are registered for
// the graph's lifetime when they are not registered already
// (GCCL_GRAPH_REGISTER, NCCL_GRAPH_REGISTER; on by default); see package
// graph. No call is needed.
//
// gccl keeps each communicator's registrations in a cache the
// communicator owns (internal/regcache); the allocator is
// internal/memalloc.
package bufreg
