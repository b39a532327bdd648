package memory

import (
	"encoding/binary"
	"fmt"
	"os"
	"syscall"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
)

var ipcMagic = [8]byte{'g', 'c', 'c', 'l', 'f', 'a', 'k', 'e'}

// IpcGetMemHandle encodes the allocation's backing file as (pid, fd, size,
// device), which any process of the same user can open through /proc.
func (m *Space) IpcGetMemHandle(p uintptr) (cuda.IpcMemHandle, error) {
	var h cuda.IpcMemHandle
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.find(p)
	if r == nil || r.kind != kindAlloc {
		return h, Fail("cuIpcGetMemHandle", cuda.ErrorInvalidValue)
	}
	copy(h[:8], ipcMagic[:])
	le := binary.LittleEndian
	le.PutUint32(h[8:], uint32(os.Getpid()))
	le.PutUint32(h[12:], uint32(r.p.file.Fd()))
	le.PutUint64(h[16:], uint64(len(r.p.data)))
	le.PutUint32(h[24:], uint32(r.p.dev))
	return h, nil
}

func (m *Space) IpcOpenMemHandle(h cuda.IpcMemHandle, flags uint32) (uintptr, error) {
	if [8]byte(h[:8]) != ipcMagic {
		return 0, Fail("cuIpcOpenMemHandle", cuda.ErrorInvalidValue)
	}
	le := binary.LittleEndian
	pid, fd, size, dev := le.Uint32(h[8:]), le.Uint32(h[12:]), int(le.Uint64(h[16:])), int(le.Uint32(h[24:]))
	file, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/%d", pid, fd), os.O_RDWR, 0)
	if err != nil {
		return 0, Fail("cuIpcOpenMemHandle", cuda.ErrorInvalidHandle)
	}
	p, err := mapFile(file, size, dev)
	if err != nil {
		return 0, err
	}
	p.handle = cuda.MemHandle(^uint64(0)) // not counted in this process's usage
	m.mu.Lock()
	defer m.mu.Unlock()
	va := m.newVA(size)
	m.addRegion(&region{start: va, size: size, p: p, kind: kindIPC})
	return va, nil
}

func (m *Space) IpcCloseMemHandle(p uintptr) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.find(p)
	if r == nil || r.start != p || r.kind != kindIPC {
		return Fail("cuIpcCloseMemHandle", cuda.ErrorInvalidValue)
	}
	m.removeRegion(r)
	return nil
}

func (m *Space) MemCreate(size int, dev cuda.Device, handles cuda.HandleType) (cuda.MemHandle, error) {
	if err := m.checkDev("cuMemCreate", dev); err != nil {
		return 0, err
	}
	if size <= 0 || size%Granularity != 0 {
		return 0, Fail("cuMemCreate", cuda.ErrorInvalidValue)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.used[int(dev)]+size > m.cfg.MemBytes {
		return 0, Fail("cuMemCreate", cuda.ErrorOutOfMemory)
	}
	p, err := newPhys(size, int(dev))
	if err != nil {
		return 0, err
	}
	m.used[int(dev)] += size // physical memory counts in MemGetInfo, as on the driver
	p.counted = true
	return m.addHandleLocked(p, handles&cuda.HandlePosixFD != 0), nil
}

func (m *Space) addHandle(p *phys, posix bool) cuda.MemHandle {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.addHandleLocked(p, posix)
}

// addHandleLocked is addHandle for callers that hold m.mu.
func (m *Space) addHandleLocked(p *phys, posix bool) cuda.MemHandle {
	p.handle, p.posix, p.refs = cuda.MemHandle(m.cfg.Handle()), posix, 1
	m.phys[p.handle] = p
	return p.handle
}

func (m *Space) physOf(fn string, h cuda.MemHandle) (*phys, error) {
	if p, ok := m.phys[h]; ok {
		return p, nil
	}
	return nil, Fail(fn, cuda.ErrorInvalidHandle)
}

// MemRelease drops the handle's reference; mappings keep the memory alive.
func (m *Space) MemRelease(h cuda.MemHandle) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.physOf("cuMemRelease", h)
	if err != nil {
		return err
	}
	delete(m.phys, h)
	m.unref(p)
	return nil
}

func (m *Space) MemAddressReserve(size, align int) (uintptr, error) {
	if size <= 0 || size%Granularity != 0 {
		return 0, Fail("cuMemAddressReserve", cuda.ErrorInvalidValue)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	va := m.newVA(size)
	m.reserved[va] = size
	return va, nil
}

func (m *Space) MemAddressFree(p uintptr, size int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reserved[p] != size {
		return Fail("cuMemAddressFree", cuda.ErrorInvalidValue)
	}
	for _, r := range m.regions {
		if r.start >= p && r.start < p+uintptr(size) {
			return Fail("cuMemAddressFree", cuda.ErrorInvalidValue) // still mapped
		}
	}
	delete(m.reserved, p)
	return nil
}

func (m *Space) inReservation(p uintptr, size int) bool {
	for base, n := range m.reserved {
		if p >= base && p+uintptr(size) <= base+uintptr(n) {
			return true
		}
	}
	return false
}

func (m *Space) MemMap(p uintptr, size, offset int, h cuda.MemHandle) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ph, err := m.physOf("cuMemMap", h)
	if err != nil {
		return err
	}
	if size <= 0 || offset < 0 || offset+size > len(ph.data) || !m.inReservation(p, size) {
		return Fail("cuMemMap", cuda.ErrorInvalidValue)
	}
	for _, r := range m.regions {
		if r.start < p+uintptr(size) && p < r.start+uintptr(r.size) {
			return Fail("cuMemMap", cuda.ErrorAlreadyMapped)
		}
	}
	m.addRegion(&region{start: p, size: size, p: ph, off: offset, kind: kindVMM})
	return nil
}

func (m *Space) MemUnmap(p uintptr, size int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.find(p)
	if r == nil || r.kind != kindVMM || r.start != p || r.size != size {
		return Fail("cuMemUnmap", cuda.ErrorInvalidValue)
	}
	m.removeRegion(r)
	return nil
}

func (m *Space) MemSetAccess(p uintptr, size int, dev cuda.Device, access cuda.Access) error {
	if err := m.checkDev("cuMemSetAccess", dev); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	covered := 0
	for _, r := range m.regions {
		if r.kind == kindVMM && r.start >= p && r.start+uintptr(r.size) <= p+uintptr(size) {
			r.access = access != cuda.AccessNone
			covered += r.size
		}
	}
	if covered != size {
		return Fail("cuMemSetAccess", cuda.ErrorInvalidValue)
	}
	return nil
}

func (m *Space) MemGetAllocationGranularity(dev cuda.Device, handles cuda.HandleType, recommended bool) (int, error) {
	if err := m.checkDev("cuMemGetAllocationGranularity", dev); err != nil {
		return 0, err
	}
	return Granularity, nil
}

func (m *Space) MemExportToShareableHandle(h cuda.MemHandle) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.physOf("cuMemExportToShareableHandle", h)
	if err != nil {
		return -1, err
	}
	if !p.posix {
		return -1, Fail("cuMemExportToShareableHandle", cuda.ErrorInvalidValue)
	}
	fd, err := syscall.Dup(int(p.file.Fd()))
	if err != nil {
		return -1, gccl.Wrap(gccl.SystemError, "dup", err)
	}
	return fd, nil
}

func (m *Space) MemImportFromShareableHandle(fd int) (cuda.MemHandle, error) {
	var st syscall.Stat_t
	if fd < 0 || syscall.Fstat(fd, &st) != nil || st.Size <= 0 {
		return 0, Fail("cuMemImportFromShareableHandle", cuda.ErrorInvalidValue)
	}
	nfd, err := syscall.Dup(fd)
	if err != nil {
		return 0, gccl.Wrap(gccl.SystemError, "dup", err)
	}
	p, err := mapFile(os.NewFile(uintptr(nfd), "gccl-cudafake-import"), int(st.Size), 0)
	if err != nil {
		return 0, err
	}
	return m.addHandle(p, true), nil
}

func (m *Space) MemRetainAllocationHandle(p uintptr) (cuda.MemHandle, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.find(p)
	if r == nil || r.kind != kindVMM {
		return 0, Fail("cuMemRetainAllocationHandle", cuda.ErrorInvalidValue)
	}
	r.p.refs++
	m.phys[r.p.handle] = r.p
	return r.p.handle, nil
}

func (m *Space) PointerGetAttribute(attr cuda.PointerAttr, p uintptr) (uint64, error) {
	v, err := m.PointerGetAttributes([]cuda.PointerAttr{attr}, p)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

func (m *Space) PointerGetAttributes(attrs []cuda.PointerAttr, p uintptr) ([]uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.find(p)
	var host bool
	if r == nil {
		if _, err := m.bytes("cuPointerGetAttributes", p, 1); err != nil {
			return nil, err
		}
		host = true
	}
	out := make([]uint64, len(attrs))
	for i, a := range attrs {
		switch {
		case a == cuda.PointerMemoryType && host:
			out[i] = cuda.MemoryTypeHost
		case a == cuda.PointerMemoryType:
			out[i] = cuda.MemoryTypeDevice
		case a == cuda.PointerDevicePointer, a == cuda.PointerHostPointer && host:
			out[i] = uint64(p)
		case host:
		case a == cuda.PointerDeviceOrdinal:
			out[i] = uint64(r.p.dev)
		case a == cuda.PointerContext:
			out[i] = uint64(r.p.dev + 1)
		case a == cuda.PointerRangeStart, a == cuda.PointerBufferID:
			out[i] = uint64(r.start)
		case a == cuda.PointerRangeSize:
			out[i] = uint64(r.size)
		case a == cuda.PointerMapped:
			out[i] = 1
		case a == cuda.PointerAllowedHandle && r.p.posix:
			out[i] = uint64(cuda.HandlePosixFD)
		}
	}
	return out, nil
}
