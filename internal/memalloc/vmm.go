package memalloc

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/devlink"
)

// vmmAlloc makes, maps and opens access to a cuMem allocation of at least
// size bytes. It runs with g's context current and undoes every step when
// a later one fails.
func vmmAlloc(g GPU, size int) (p uintptr, rounded int, h cuda.MemHandle, err error) {
	drv := g.Driver()
	dev, err := drv.DeviceGet(g.Ordinal())
	if err != nil {
		return 0, 0, 0, err
	}
	if v, err := drv.DeviceAttribute(cuda.AttrVirtualMemoryManagement, dev); err != nil || v == 0 {
		return 0, 0, 0, gccl.Errorf(gccl.InvalidUsage, "device",
			"GPU %d does not support CUDA virtual memory management (%v); allocate with Device.Alloc instead", g.Ordinal(), err)
	}
	handles := cuda.HandlePosixFD
	if v, err := drv.DeviceAttribute(cuda.AttrHandleTypePosixFD, dev); err != nil || v == 0 {
		return 0, 0, 0, gccl.Errorf(gccl.InvalidUsage, "device",
			"GPU %d cannot share memory as POSIX file descriptors (%v); allocate with Device.Alloc instead", g.Ordinal(), err)
	}
	if v, err := drv.DeviceAttribute(attrHandleTypeFabricSup, dev); err == nil && v != 0 {
		handles |= handleFabric
	}
	rec, minimum, err := Granularity(drv, dev, handles)
	if err != nil {
		return 0, 0, 0, err
	}
	if rounded, err = roundUp(size, rec); err != nil {
		return 0, 0, 0, err
	}
	h, err = drv.MemCreate(rounded, dev, handles)
	if err != nil && handles&handleFabric != 0 {
		// Fabric handles need an IMEX domain; without one the driver refuses
		// them (CUDA_ERROR_NOT_PERMITTED / NOT_SUPPORTED). POSIX FDs suffice
		// within a node.
		h, err = drv.MemCreate(rounded, dev, cuda.HandlePosixFD)
	}
	if err != nil {
		return 0, 0, 0, gccl.Errorf(gccl.Code(err), "size", "cuMemCreate of %d bytes on GPU %d: %w", rounded, g.Ordinal(), err)
	}
	if p, err = mapAllocation(drv, dev, h, rounded, minimum); err != nil {
		_ = drv.MemRelease(h)
		return 0, 0, 0, err
	}
	return p, rounded, h, nil
}

// mapAllocation reserves an address range aligned to align, maps h there
// and grants read/write access to dev and to every device that can reach
// dev as a peer.
func mapAllocation(drv cuda.Driver, dev cuda.Device, h cuda.MemHandle, size, align int) (uintptr, error) {
	p, err := drv.MemAddressReserve(size, align)
	if err != nil {
		return 0, err
	}
	if err := drv.MemMap(p, size, 0, h); err != nil {
		_ = drv.MemAddressFree(p, size)
		return 0, err
	}
	if err := grantAccess(drv, dev, p, size); err != nil {
		_ = drv.MemUnmap(p, size)
		_ = drv.MemAddressFree(p, size)
		return 0, err
	}
	return p, nil
}

// grantAccess makes [p, p+size) readable and writable by dev and by the
// devices that can access dev's memory.
func grantAccess(drv cuda.Driver, dev cuda.Device, p uintptr, size int) error {
	if err := drv.MemSetAccess(p, size, dev, cuda.AccessReadWrite); err != nil {
		return err
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return err
	}
	for i := range n {
		peer, err := drv.DeviceGet(i)
		if err != nil {
			return err
		}
		if peer == dev {
			continue
		}
		if ok, err := drv.DeviceCanAccessPeer(peer, dev); err != nil || !ok {
			continue // no peer path: that device simply gets no mapping
		}
		if err := drv.MemSetAccess(p, size, peer, cuda.AccessReadWrite); err != nil {
			return err
		}
	}
	return nil
}

// vmmFree unmaps and releases an allocation made by vmmAlloc.
func vmmFree(drv cuda.Driver, p uintptr, a *allocation) error {
	if err := drv.MemUnmap(p, a.size); err != nil {
		return err
	}
	err := drv.MemRelease(a.mem)
	if ferr := drv.MemAddressFree(p, a.size); err == nil {
		err = ferr
	}
	return err
}

// Free releases memory from Alloc (bufreg.MemFree). Freeing memory that
// is still registered with a communicator is gccl.ErrInvalidUsage
// (deregister it first), as is freeing it twice; a pointer Alloc did not
// return is gccl.ErrInvalidArgument. Free(0) does nothing.
func Free(p uintptr) error {
	if p == 0 {
		return nil
	}
	allocs.Lock()
	a, ok := allocs.live[p]
	if !ok {
		twice := allocs.freed[p]
		allocs.Unlock()
		if _, live := device.HostRegionOf(p); live {
			twice = false // freed by MemFree once, since handed out again by Device.Alloc
		}
		if twice {
			return gccl.Errorf(gccl.InvalidUsage, "ptr", "%#x was already freed by MemFree", p)
		}
		return gccl.Errorf(gccl.InvalidArgument, "ptr", "%#x was not returned by bufreg.MemAlloc", p)
	}
	if n := a.regs; n > 0 {
		allocs.Unlock()
		return gccl.Errorf(gccl.InvalidUsage, "ptr",
			"%#x is still registered (%d registrations); Deregister it (and destroy graphs that use it) before MemFree", p, n)
	}
	delete(allocs.live, p)
	allocs.freed[p] = true
	allocs.ring = append(allocs.ring, p)
	if len(allocs.ring) > freedMemory {
		delete(allocs.freed, allocs.ring[0])
		allocs.ring = allocs.ring[1:]
	}
	allocs.Unlock()
	if !a.gpu {
		return a.dev.Free(p)
	}
	g, _ := AsGPU(a.dev)
	devlink.Forget(g.CUDADevice, p) // the pointer check must stop accepting it
	return g.Do(func() error { return vmmFree(g.Driver(), p, a) })
}

// Import maps size bytes of a peer's cuMem allocation, shared as the POSIX
// file descriptor fd (which the caller keeps and closes), readable and
// writable by g's device; it runs with g's context current. The mapping
// holds the peer's physical memory: the driver frees it only once the
// owner has released it and every importer has unmapped it, so the owner
// may free its side whenever it likes. unmap (g's context made current)
// undoes the mapping.
func Import(g GPU, fd, size int) (p uintptr, unmap func() error, err error) {
	drv := g.Driver()
	dev, err := drv.DeviceGet(g.Ordinal())
	if err != nil {
		return 0, nil, err
	}
	_, minimum, err := Granularity(drv, dev, cuda.HandlePosixFD)
	if err != nil {
		return 0, nil, err
	}
	h, err := drv.MemImportFromShareableHandle(fd)
	if err != nil {
		return 0, nil, err
	}
	p, err = drv.MemAddressReserve(size, minimum)
	if err == nil {
		if err = drv.MemMap(p, size, 0, h); err != nil {
			_ = drv.MemAddressFree(p, size)
		}
	}
	_ = drv.MemRelease(h) // the mapping keeps the memory
	if err != nil {
		return 0, nil, err
	}
	if err := drv.MemSetAccess(p, size, dev, cuda.AccessReadWrite); err != nil {
		_ = drv.MemUnmap(p, size)
		_ = drv.MemAddressFree(p, size)
		return 0, nil, err
	}
	unmap = func() error {
		return g.Do(func() error {
			if err := drv.MemUnmap(p, size); err != nil {
				return err
			}
			return drv.MemAddressFree(p, size)
		})
	}
	return p, unmap, nil
}
