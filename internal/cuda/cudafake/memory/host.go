package memory

import (
	"syscall"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
)

func (m *Space) MemHostAlloc(size int, flags uint32) (uintptr, error) {
	if size <= 0 {
		return 0, gccl.Errorf(gccl.InvalidArgument, "size", "cannot allocate %d bytes; pass a size > 0", size)
	}
	data, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_SHARED)
	if err != nil {
		return 0, Fail("cuMemHostAlloc", cuda.ErrorOutOfMemory)
	}
	p := uintptr(unsafe.Pointer(&data[0]))
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hosts[p] = hostRange{data: data}
	live.Add(1)
	return p, nil
}

func (m *Space) MemFreeHost(p uintptr) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.hosts[p]
	if !ok || h.registered {
		return Fail("cuMemFreeHost", cuda.ErrorInvalidValue)
	}
	delete(m.hosts, p)
	live.Add(-1)
	return syscall.Munmap(h.data)
}

// hostSlice views caller-owned host memory; the caller guarantees p is
// valid for size bytes while registered (as with cuMemHostRegister).
func hostSlice(p uintptr, size int) []byte {
	ptr := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	return unsafe.Slice((*byte)(ptr), size)
}

func (m *Space) MemHostRegister(p uintptr, size int, flags uint32) error {
	if size <= 0 || p == 0 {
		return gccl.Errorf(gccl.InvalidArgument, "size", "cannot register %d bytes at %#x", size, p)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for base, h := range m.hosts {
		if p < base+uintptr(len(h.data)) && base < p+uintptr(size) {
			return Fail("cuMemHostRegister", cuda.ErrorHostMemoryAlreadyRegistered)
		}
	}
	m.hosts[p] = hostRange{data: hostSlice(p, size), registered: true}
	return nil
}

func (m *Space) MemHostUnregister(p uintptr) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h, ok := m.hosts[p]; !ok || !h.registered {
		return Fail("cuMemHostUnregister", cuda.ErrorHostMemoryNotRegistered)
	}
	delete(m.hosts, p)
	return nil
}

// MemHostGetDevicePointer: with unified addressing the device sees pinned
// memory at its host address.
func (m *Space) MemHostGetDevicePointer(p uintptr) (uintptr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.bytes("cuMemHostGetDevicePointer", p, 1); err != nil {
		return 0, err
	}
	return p, nil
}
