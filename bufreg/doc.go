// Package bufreg is gccl's user buffer registration: the memory
// allocator for registrable buffers, the per-communicator registration
// cache, and the collective check that ranks agree on registration.
//
// # What to use
//
// An application uses MemAlloc and MemFree (ncclMemAlloc, ncclMemFree),
// Register and Deregister (ncclCommRegister, ncclCommDeregister) with a
// *comm.Comm, and the Handle that Register returns; see the example. The
// registrations belong to the communicator: its Close and Abort release
// them (their handles are then deregistered, and the memory may be freed).
// The rest of the exported API (RegisterOn, RegisterGraph, LookupNet,
// Collective, DeregisterNet, Lookup, ForGraph, Agree, the
// Registration's holds) is how gccl's engine uses registrations; it stays
// exported only until the engine takes its communicator's registrations
// from its configuration (issue #14), and applications should not call it.
//
// # Allocation
//
// MemAlloc and MemFree play ncclMemAlloc and ncclMemFree. On a GPU the
// memory comes from the CUDA virtual memory API (cuMemCreate with the
// POSIX file descriptor handle type, plus the fabric handle type where the
// device supports it), its size rounded up to the recommended allocation
// granularity and its address aligned to the minimum granularity, mapped
// for the device and every peer that can reach it. A peer process imports
// the exported file descriptor and maps the same physical memory. On the
// host backend MemAlloc is the host device's shared memory.
//
// # Local registration
//
// Register(comm, ptr, size) and Deregister(handle) play ncclCommRegister
// and ncclCommDeregister. On a communicator with a bootstrap network
// Register is collective (RegisterOn): every rank calls it with its own
// buffer, in the same order, and each maps every peer's buffer once
// (Registration.Peers), so the GPU engine can let kernels load and store
// peers' registered buffers with no staging copy; LookupNet finds them by
// the communicator's bootstrap. cuMem (MemAlloc) memory is shared as a
// POSIX file descriptor, which means something only in its own process.
// While a registration is exchanged, each rank with cuMem memory serves
// its descriptor on an abstract Unix socket (Linux's abstract namespace:
// nothing is created on the file system) whose name and a random 128-bit
// token travel in the rank's entry; a peer in another process of the same
// host connects, presents the token and receives the descriptor
// (SCM_RIGHTS), imports it and closes it. A wrong token gets nothing; the
// server stops once every peer that needs it has fetched, or at the
// exchange's deadline (GCCL_TIMEOUT). Ranks compare host hashes
// (transport/topo.HostHash): ranks on different hosts do not map each
// other's memory, and such a registration has no Peers and its operations
// stage. If a descriptor cannot be fetched (the ranks run in different
// network namespaces, say), every rank stages too; if one arrives but
// cannot be mapped, Register fails on every rank.
// A registration records what the memory is (host
// shared memory, a cuMem allocation, or cudaMalloc memory shared through
// a CUDA IPC handle) so that peers can be handed it, which map
// it and read or write it directly: registered buffers skip the staging
// copy. One large registered chunk serves every sub-buffer inside it:
// Lookup(comm, ptr, n) finds the registration holding [ptr, ptr+n) and the
// offset of ptr in it. Registering the same range twice shares one
// registration with two handles. GCCL_LOCAL_REGISTER=0
// (NCCL_LOCAL_REGISTER=0) turns Register into a no-op.
//
// An operation that uses a registration holds it until it completes, or,
// when captured, until its graph is destroyed. Registration.Acquire is a
// plain hold that its release function ends. Registration.AcquireUntil is
// a pending hold that ends by itself once its Completion reports done:
// the GPU engine records a CUDA event after each eager zero-copy kernel
// and holds the registrations until the event completed, so no host
// function stalls the stream. Pending holds are polled (cuEventQuery, never
// blocking, and never under bufreg's lock) when Deregister checks whether
// the registration is in use, by Uses, and when a new pending hold would
// not fit; a poll that fails counts as done. Holds taken with the same
// order key (one stream) finish in order, so a registration keeps only
// the latest per key, and at most 64 in all (past that the engine falls
// back to a host function). A caller that synchronized its streams may
// therefore deregister at once. Deregistering the last handle of a
// registration that is held, and deregistering a handle twice, are
// gccl.ErrInvalidUsage; so is MemFree of memory that is still registered.
//
// # Graph registration
//
// ForGraph registers the buffers of a captured operation for the lifetime
// of the graph (package graph, GCCL_GRAPH_REGISTER / NCCL_GRAPH_REGISTER)
// and releases them when the graph is destroyed; buffers already
// registered locally are held for the graph's lifetime instead.
// RegisterGraph is its collective form, which the GPU engine uses: while
// every rank captures a large collective, the ranks agree which buffers
// need a registration and register them together, mapping the peers'
// buffers, so that the captured kernels run zero-copy; the registrations
// have no handle and go with the last graph that holds them. Eager
// operations ignore them and Collective does not count them.
//
// # Agreement
//
// NCCL requires that either every rank passes registered buffers to an
// operation or none does, and, on paths where peers address the buffer by
// offset, that the offset from the registration's start is the same on
// every rank; otherwise its behaviour is undefined. gccl checks: each rank
// describes its buffers in a Desc and Agree all-gathers them and returns
// the same verdict on every rank — zero-copy, staging, or
// gccl.ErrInvalidUsage naming the buffer and the ranks that disagree.
//
// bufreg does not import the engine: the engine calls Lookup, Acquire,
// AcquireUntil, ForGraph and Agree; registration maps the peers' buffers
// itself (share and mapShared).
package bufreg
