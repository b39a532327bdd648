package bufreg

import (
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/memalloc"
)

// MemAlloc allocates size bytes that can be registered with Register and
// shared with peers without copies, as ncclMemAlloc does.
//
// On a GPU it uses the CUDA virtual memory API: physical memory from
// cuMemCreate shareable as a POSIX file descriptor (and as a fabric handle
// where the device supports it; if the fabric request is refused, for
// example on a host that is not an IMEX domain, POSIX alone is used), the
// size rounded up to the recommended allocation granularity, an address
// range aligned to the minimum granularity, mapped readable and writable
// by this device and by every device that can access it as a peer. On the
// host device it is Device.Alloc's shared memory, which peers on the node
// map by name. Free it with MemFree.
func MemAlloc(d device.Device, size int) (uintptr, error) { return memalloc.Alloc(d, size) }

// MemFree releases memory from MemAlloc, as ncclMemFree does. Freeing
// memory that is still registered with a communicator is
// gccl.ErrInvalidUsage (deregister it, or close the communicator, first),
// as is freeing it twice; a pointer MemAlloc did not return is
// gccl.ErrInvalidArgument. MemFree(0) does nothing.
func MemFree(p uintptr) error { return memalloc.Free(p) }
