// Package regcache is a communicator's buffer registrations: the cache
// that package comm makes for each communicator (New), hands to its
// engine in the engine's configuration, and closes with the communicator
// (Close), and through which package bufreg registers (Cache.Register,
// Deregister). There is no package-level registry: whoever registers or
// looks up holds the Cache.
//
// # Local registration
//
// On a Cache whose Owner has a Net (the communicator's bootstrap) Register
// is collective: every rank calls it with its own buffer, in the same
// order, and each maps every peer's buffer once (Registration.Peers), so
// the GPU engine can let kernels load and store peers' registered buffers
// with no staging copy; the engine finds them with Cache.Lookup. cuMem
// (internal/memalloc) memory is shared as a POSIX file descriptor, which
// means something only in its own process. While a registration is
// exchanged, each rank with cuMem memory serves its descriptor on an
// abstract Unix socket (Linux's abstract namespace: nothing is created on
// the file system) whose name and a random 128-bit token travel in the
// rank's entry; a peer in another process of the same host connects,
// presents the token and receives the descriptor (SCM_RIGHTS), imports it
// and closes it. A wrong token gets nothing; the server stops once every
// peer that needs it has fetched, or at the exchange's deadline
// (GCCL_TIMEOUT). Ranks compare host hashes (transport/topo.HostHash):
// ranks on different hosts do not map each other's memory, and such a
// registration has no Peers and its operations stage. If a descriptor
// cannot be fetched (the ranks run in different network namespaces, say),
// every rank stages too; if one arrives but cannot be mapped, Register
// fails on every rank. Without a Net, Register is local to the rank.
//
// A registration records what the memory is (host shared memory, a cuMem
// allocation, or cudaMalloc memory shared through a CUDA IPC handle) so
// that peers can be handed it. One large registered chunk serves every
// sub-buffer inside it: Lookup(ptr, n) finds the registration holding
// [ptr, ptr+n) and the offset of ptr in it. Registering the same range
// twice shares one registration with two handles. GCCL_LOCAL_REGISTER=0
// (NCCL_LOCAL_REGISTER=0) turns Register into a no-op. Collective counts
// the collective Register calls, which the GPU engine uses to pick kernels
// that check the ranks' registration key.
//
// # Holds
//
// An operation that uses a registration holds it until it completes, or,
// when captured, until its graph is destroyed. Registration.Acquire is a
// plain hold that its release function ends. Registration.AcquireUntil is
// a pending hold that ends by itself once its Completion reports done:
// the GPU engine records a CUDA event after each eager zero-copy kernel
// and holds the registrations until the event completed, so no host
// function stalls the stream. Pending holds are polled (cuEventQuery,
// never blocking, and never under the cache's lock) when Deregister checks
// whether the registration is in use, by Uses, and when a new pending hold
// would not fit; a poll that fails counts as done. Holds taken with the
// same order key (one stream) finish in order, so a registration keeps
// only the latest per key, and at most 64 in all (past that the engine
// falls back to a host function). A caller that synchronized its streams
// may therefore deregister at once. Deregistering the last handle of a
// registration that is held, and deregistering a handle twice, are
// gccl.ErrInvalidUsage; so is freeing memory that is still registered
// (internal/memalloc counts the registrations over each allocation).
//
// # Graph registration
//
// RegisterGraph is NCCL's graph registration, which the GPU engine uses:
// while every rank captures a large collective, the ranks agree which
// buffers need a registration and register them together, mapping the
// peers' buffers, so that the captured kernels run zero-copy; the
// registrations have no handle and go with the last graph that holds
// them. Eager operations ignore them and Collective does not count them.
//
// Close releases every registration, in use or not; the communicator
// calls it when it is destroyed or aborted, after its engine stopped.
package regcache
