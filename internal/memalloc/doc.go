// Package memalloc is the allocator behind bufreg.MemAlloc and
// bufreg.MemFree (ncclMemAlloc, ncclMemFree): memory that registration
// can share with peers without copies.
//
// On a GPU an allocation is cuMem VMM memory: physical memory from
// cuMemCreate shareable as a POSIX file descriptor (and as a fabric handle
// where the device supports it), its size rounded up to the recommended
// allocation granularity, its address aligned to the minimum granularity,
// mapped for the device and every peer that can reach it. On the host
// device it is the device's shared memory, which peers map by name.
//
// The package keeps the process's live allocations (Size, Owned) and how
// many registrations overlap each (CountRegistered, kept by
// internal/regcache), so that Free refuses memory that is still
// registered and tells a double Free from a foreign pointer. The table is
// per process, as the memory is; registrations themselves belong to their
// communicator (internal/regcache).
package memalloc
