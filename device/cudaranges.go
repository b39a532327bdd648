package device

import (
	"sync"

	"github.com/gccl/gccl/internal/cuda"
)

// maxCachedRanges bounds a GPU's cache of allocations: past it the cache
// starts again empty (a program that allocates and frees through another
// binding would otherwise grow it without end).
const maxCachedRanges = 4096

// rangeCache is the allocations that the driver reported for a GPU's
// CheckRange, so that each costs one driver call, then a lookup.
// Allocations freed through gccl (Device.Free, bufreg.MemFree) are
// forgotten; one freed through another binding is not, until a check that
// it fails asks the driver again.
type rangeCache struct {
	mu sync.RWMutex
	ss spans
}

func (c *rangeCache) lookup(p uintptr) (span, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ss.at(p)
}

func (c *rangeCache) remember(s span) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ss) >= maxCachedRanges {
		c.ss = c.ss[:0]
	}
	c.ss.add(s)
}

// forget drops the allocation holding p.
func (c *rangeCache) forget(p uintptr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.ss.at(p); ok {
		c.ss.remove(s.base, s.size)
	}
}

func (c *rangeCache) reset() {
	c.mu.Lock()
	c.ss = nil
	c.mu.Unlock()
}

// checkLive is CheckRange on a GPU: the allocation holding p, as the
// driver reports it (cuMemGetAddressRange) and the cache remembers it,
// must hold the whole range and belong to this GPU.
func (d *CUDADevice) checkLive(arg string, p uintptr, n int) error {
	if done, err := outside(arg, p, n); done {
		return err
	}
	if s, ok := d.ranges.lookup(p); ok && int(p-s.base)+n <= s.size {
		return nil
	}
	// Not known, or known too small: ask the driver (the allocation may
	// have been freed and made again, larger, through another binding).
	s, owner, err := d.allocationOf(p)
	if err != nil {
		d.ranges.forget(p)
		return rangeError(arg, p, n, "is not inside any allocation of GPU %d (the driver says: %v); "+
			"pass live memory from Device.Alloc, bufreg.MemAlloc or cudaMalloc", d.ordinal, err)
	}
	if owner != d.ordinal {
		return rangeError(arg, p, n, "is memory of GPU %d, but this communicator runs on GPU %d; pass a buffer of GPU %d",
			owner, d.ordinal, d.ordinal)
	}
	d.ranges.remember(s)
	if int(p-s.base)+n > s.size {
		return overrun(arg, p, n, s.base, s.size)
	}
	return nil
}

// allocationOf asks the driver for the allocation holding p and the GPU
// it belongs to (this GPU's ordinal when the driver does not say).
func (d *CUDADevice) allocationOf(p uintptr) (s span, owner int, err error) {
	owner = d.ordinal
	err = d.Do(func() error {
		base, size, err := d.drv.MemGetAddressRange(p)
		if err != nil {
			return err
		}
		s = span{base: base, size: size, asked: size}
		attrs, err := d.drv.PointerGetAttributes([]cuda.PointerAttr{cuda.PointerMemoryType, cuda.PointerDeviceOrdinal}, p)
		if err == nil && attrs[0] == cuda.MemoryTypeDevice {
			owner = int(attrs[1])
		}
		return nil
	})
	return s, owner, err
}
