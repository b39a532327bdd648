// Package memory is the memory of the fake CUDA driver (package cudafake):
// device allocations addressed by synthetic device pointers (far above any
// host address) and backed by shared-memory files, the VMM calls
// (reservations, physical handles, mappings, access, POSIX-FD export and
// import), CUDA IPC handles that name the backing files (so they open in
// other processes too), pinned and registered host memory, and pointer
// attributes. A Space is one fake machine's memory; cudafake.Fake embeds
// it, so its methods are the memory part of the fake's cuda.Driver, and
// Bytes is how the fake's streams and kernels reach the memory.
//
// Live counts the allocations of every Space of the process not yet
// freed, for internal/leakcheck (through cudafake.Live).
package memory
