// Package device is the device a rank runs on: a GPU, or the host.
//
// Open returns a Device of a Kind. Host is always available: its memory is
// host shared memory and its streams are host streams (package
// internal/hoststream) named by gccl.Stream handles; the handle 0 names the
// device's default stream, one per ordinal as CUDA's legacy default stream
// is one per device. CUDA is provided by an
// opener that the CUDA backend registers with RegisterOpener, so this
// package itself links no cgo. Auto picks CUDA when a CUDA opener is
// registered, a driver is present and GCCL_DEVICE (NCCL has no equivalent)
// is not "host"; otherwise the host device. GCCL_DEVICE=cuda makes Auto
// insist on a GPU.
//
// # Host memory
//
// The host device's Alloc returns memory that lives outside the Go heap: a
// shared-memory file (a memfd, or a /dev/shm file where memfd is missing)
// mapped MAP_SHARED. The garbage collector never moves or frees it, so the
// uintptr is a stable address until Free. HostRegionOf tells which file and
// offset a pointer lies in; a process on the same node passes the region's
// Name and Size to MapHostRegion to map the same bytes. This is how the
// shared-memory transport reaches a peer's buffer without copies.
//
// Host buffers need not come from Alloc: any host address works, for
// example &slice[0] of a Go slice that the caller keeps alive (and pinned
// with runtime.Pinner) until the operations using it have finished.
//
// HostBytes views host memory as a []byte. It is for the host backend only:
// on a GPU a device pointer is not a host address.
//
// # Errors
//
// Every failure a caller can cause is a *gccl.Error naming the argument:
// Free of a pointer that Alloc did not return is gccl.ErrInvalidArgument,
// Free of one already freed is gccl.ErrInvalidUsage, an unknown stream is
// gccl.ErrInvalidArgument, and Synchronize gives gccl.ErrTimeout after the
// deadline (GCCL_TIMEOUT, 5 minutes by default). CheckRange tells whether a
// range lies inside one live allocation (the host's own table; on a GPU the
// driver's, cached per allocation); CopyIn, CopyOut and Memset refuse a
// range that overruns its allocation, and the engine checks every
// operation's buffers with it.
package device
