package memalloc

import (
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/devlink"
)

// Handle types and device attributes the CUDA shim does not name yet
// (values of CUmemAllocationHandleType and CUdevice_attribute).
const (
	handleFabric            cuda.HandleType = 0x8 // CU_MEM_HANDLE_TYPE_FABRIC
	attrHandleTypeFabricSup cuda.DeviceAttr = 128 // CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED
)

// GPU is a CUDA device as registration drives it: the device (Do runs
// driver calls with its context current) and the driver it calls.
type GPU struct {
	*device.CUDADevice
	drv cuda.Driver
}

// Driver is the driver g calls.
func (g GPU) Driver() cuda.Driver { return g.drv }

// AsGPU returns d as a GPU; ok is false when d is not a GPU.
func AsGPU(d device.Device) (g GPU, ok bool) {
	if g, ok := d.(GPU); ok {
		return g, true
	}
	cd, ok := d.(*device.CUDADevice)
	if !ok || cd == nil {
		return GPU{}, false
	}
	drv, ok := devlink.Driver(cd)
	return GPU{cd, drv}, ok
}

// allocation is one Alloc.
type allocation struct {
	dev  device.Device
	size int            // bytes mapped (the rounded size) on a GPU; the requested size on the host
	mem  cuda.MemHandle // the physical allocation, on a GPU
	gpu  bool
	regs int // live registrations that overlap it (of any communicator)
}

// CountRegistered adds d to the registration count of the allocations
// that [base, base+size) overlaps, which Free checks: a registration
// counts itself (+1) when it is made and (-1) when it is released.
func CountRegistered(base uintptr, size int, d int) {
	end := base + uintptr(size)
	allocs.Lock()
	defer allocs.Unlock()
	for p, a := range allocs.live {
		if base < p+uintptr(a.size) && p < end {
			a.regs += d
		}
	}
}

// freedMemory bounds how many freed addresses are remembered to tell a
// double Free from a foreign pointer.
const freedMemory = 4096

var allocs = struct {
	sync.Mutex
	live  map[uintptr]*allocation
	freed map[uintptr]bool
	ring  []uintptr
}{live: map[uintptr]*allocation{}, freed: map[uintptr]bool{}}

// Alloc allocates size bytes that can be registered and shared with peers
// without copies, as ncclMemAlloc does (bufreg.MemAlloc).
//
// On a GPU it uses the CUDA virtual memory API: physical memory from
// cuMemCreate shareable as a POSIX file descriptor (and as a fabric handle
// where the device supports it; if the fabric request is refused, for
// example on a host that is not an IMEX domain, POSIX alone is used), the
// size rounded up to the recommended allocation granularity, an address
// range aligned to the minimum granularity, mapped readable and writable
// by this device and by every device that can access it as a peer. On the
// host device it is Device.Alloc's shared memory, which peers on the node
// map by name. Free it with Free.
func Alloc(d device.Device, size int) (uintptr, error) {
	if d == nil {
		return 0, gccl.Errorf(gccl.InvalidArgument, "device", "nil device; pass the communicator's Device()")
	}
	if size < 0 {
		return 0, gccl.Errorf(gccl.InvalidArgument, "size", "cannot allocate %d bytes; pass a size >= 0", size)
	}
	a := &allocation{dev: d, size: size}
	var p uintptr
	var err error
	if g, ok := AsGPU(d); ok {
		a.gpu = true
		err = g.Do(func() error { p, a.size, a.mem, err = vmmAlloc(g, size); return err })
	} else {
		p, err = d.Alloc(size)
	}
	if err != nil {
		return 0, err
	}
	allocs.Lock()
	allocs.live[p] = a
	delete(allocs.freed, p)
	allocs.Unlock()
	return p, nil
}

// Size returns the number of usable bytes at p, an address Alloc
// returned: on a GPU the size rounded up to the allocation granularity.
func Size(p uintptr) (int, bool) {
	allocs.Lock()
	defer allocs.Unlock()
	a, ok := allocs.live[p]
	if !ok {
		return 0, false
	}
	return a.size, true
}

// Granularity returns the recommended (for sizes) and minimum (for
// addresses) allocation granularities of dev for the handle types.
func Granularity(drv cuda.Driver, dev cuda.Device, handles cuda.HandleType) (rec, minimum int, err error) {
	if rec, err = drv.MemGetAllocationGranularity(dev, handles, true); err != nil {
		return 0, 0, err
	}
	if minimum, err = drv.MemGetAllocationGranularity(dev, handles, false); err != nil {
		return 0, 0, err
	}
	if rec <= 0 || minimum <= 0 || rec%minimum != 0 {
		return 0, 0, gccl.Errorf(gccl.InternalError, "granularity",
			"driver reported granularities %d (recommended) and %d (minimum)", rec, minimum)
	}
	return rec, minimum, nil
}

// roundUp rounds n (>= 0) up to a multiple of g; an empty request gets g.
func roundUp(n, g int) (int, error) {
	if n == 0 {
		return g, nil
	}
	r := (n + g - 1) / g * g
	if r < n {
		return 0, gccl.Errorf(gccl.InvalidArgument, "size", "%d bytes overflow when rounded to the %d-byte granularity", n, g)
	}
	return r, nil
}

// Owned returns the handle of the GPU allocation Alloc made at base.
func Owned(base uintptr) (cuda.MemHandle, bool) {
	allocs.Lock()
	defer allocs.Unlock()
	a, ok := allocs.live[base]
	if !ok || !a.gpu {
		return 0, false
	}
	return a.mem, true
}
