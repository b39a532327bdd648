package cudafake

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
func (f *Fake) IpcGetMemHandle(p uintptr) (cuda.IpcMemHandle, error) {
	var h cuda.IpcMemHandle
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.find(p)
	if r == nil || r.kind != kindAlloc {
		return h, fail("cuIpcGetMemHandle", cuda.ErrorInvalidValue)
	}
	copy(h[:8], ipcMagic[:])
	le := binary.LittleEndian
	le.PutUint32(h[8:], uint32(os.Getpid()))
	le.PutUint32(h[12:], uint32(r.p.file.Fd()))
	le.PutUint64(h[16:], uint64(len(r.p.data)))
	le.PutUint32(h[24:], uint32(r.p.dev))
	return h, nil
}

func (f *Fake) IpcOpenMemHandle(h cuda.IpcMemHandle, flags uint32) (uintptr, error) {
	if [8]byte(h[:8]) != ipcMagic {
		return 0, fail("cuIpcOpenMemHandle", cuda.ErrorInvalidValue)
	}
	le := binary.LittleEndian
	pid, fd, size, dev := le.Uint32(h[8:]), le.Uint32(h[12:]), int(le.Uint64(h[16:])), int(le.Uint32(h[24:]))
	file, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/%d", pid, fd), os.O_RDWR, 0)
	if err != nil {
		return 0, fail("cuIpcOpenMemHandle", cuda.ErrorInvalidHandle)
	}
	p, err := mapFile(file, size, dev)
	if err != nil {
		return 0, err
	}
	p.handle = cuda.MemHandle(^uint64(0)) // not counted in this process's usage
	f.mu.Lock()
	defer f.mu.Unlock()
	va := f.newVA(size)
	f.addRegion(&region{start: va, size: size, p: p, kind: kindIPC})
	return va, nil
}

func (f *Fake) IpcCloseMemHandle(p uintptr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.find(p)
	if r == nil || r.start != p || r.kind != kindIPC {
		return fail("cuIpcCloseMemHandle", cuda.ErrorInvalidValue)
	}
	f.removeRegion(r)
	return nil
}

func (f *Fake) MemCreate(size int, dev cuda.Device, handles cuda.HandleType) (cuda.MemHandle, error) {
	if err := f.checkDev("cuMemCreate", dev); err != nil {
		return 0, err
	}
	if size <= 0 || size%Granularity != 0 {
		return 0, fail("cuMemCreate", cuda.ErrorInvalidValue)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.used[int(dev)]+size > f.cfg.MemBytes {
		return 0, fail("cuMemCreate", cuda.ErrorOutOfMemory)
	}
	p, err := newPhys(size, int(dev))
	if err != nil {
		return 0, err
	}
	f.used[int(dev)] += size // physical memory counts in MemGetInfo, as on the driver
	p.counted = true
	return f.addHandleLocked(p, handles&cuda.HandlePosixFD != 0), nil
}

func (f *Fake) addHandle(p *phys, posix bool) cuda.MemHandle {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addHandleLocked(p, posix)
}

// addHandleLocked is addHandle for callers that hold f.mu.
func (f *Fake) addHandleLocked(p *phys, posix bool) cuda.MemHandle {
	p.handle, p.posix, p.refs = cuda.MemHandle(f.handle()), posix, 1
	f.phys[p.handle] = p
	return p.handle
}

func (f *Fake) physOf(fn string, h cuda.MemHandle) (*phys, error) {
	if p, ok := f.phys[h]; ok {
		return p, nil
	}
	return nil, fail(fn, cuda.ErrorInvalidHandle)
}

// MemRelease drops the handle's reference; mappings keep the memory alive.
func (f *Fake) MemRelease(h cuda.MemHandle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.physOf("cuMemRelease", h)
	if err != nil {
		return err
	}
	delete(f.phys, h)
	f.unref(p)
	return nil
}

func (f *Fake) MemAddressReserve(size, align int) (uintptr, error) {
	if size <= 0 || size%Granularity != 0 {
		return 0, fail("cuMemAddressReserve", cuda.ErrorInvalidValue)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	va := f.newVA(size)
	f.reserved[va] = size
	return va, nil
}

func (f *Fake) MemAddressFree(p uintptr, size int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reserved[p] != size {
		return fail("cuMemAddressFree", cuda.ErrorInvalidValue)
	}
	for _, r := range f.regions {
		if r.start >= p && r.start < p+uintptr(size) {
			return fail("cuMemAddressFree", cuda.ErrorInvalidValue) // still mapped
		}
	}
	delete(f.reserved, p)
	return nil
}

func (f *Fake) inReservation(p uintptr, size int) bool {
	for base, n := range f.reserved {
		if p >= base && p+uintptr(size) <= base+uintptr(n) {
			return true
		}
	}
	return false
}

func (f *Fake) MemMap(p uintptr, size, offset int, h cuda.MemHandle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ph, err := f.physOf("cuMemMap", h)
	if err != nil {
		return err
	}
	if size <= 0 || offset < 0 || offset+size > len(ph.data) || !f.inReservation(p, size) {
		return fail("cuMemMap", cuda.ErrorInvalidValue)
	}
	for _, r := range f.regions {
		if r.start < p+uintptr(size) && p < r.start+uintptr(r.size) {
			return fail("cuMemMap", cuda.ErrorAlreadyMapped)
		}
	}
	f.addRegion(&region{start: p, size: size, p: ph, off: offset, kind: kindVMM})
	return nil
}

func (f *Fake) MemUnmap(p uintptr, size int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.find(p)
	if r == nil || r.kind != kindVMM || r.start != p || r.size != size {
		return fail("cuMemUnmap", cuda.ErrorInvalidValue)
	}
	f.removeRegion(r)
	return nil
}

func (f *Fake) MemSetAccess(p uintptr, size int, dev cuda.Device, access cuda.Access) error {
	if err := f.checkDev("cuMemSetAccess", dev); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	covered := 0
	for _, r := range f.regions {
		if r.kind == kindVMM && r.start >= p && r.start+uintptr(r.size) <= p+uintptr(size) {
			r.access = access != cuda.AccessNone
			covered += r.size
		}
	}
	if covered != size {
		return fail("cuMemSetAccess", cuda.ErrorInvalidValue)
	}
	return nil
}

func (f *Fake) MemGetAllocationGranularity(dev cuda.Device, handles cuda.HandleType, recommended bool) (int, error) {
	if err := f.checkDev("cuMemGetAllocationGranularity", dev); err != nil {
		return 0, err
	}
	return Granularity, nil
}

func (f *Fake) MemExportToShareableHandle(h cuda.MemHandle) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.physOf("cuMemExportToShareableHandle", h)
	if err != nil {
		return -1, err
	}
	if !p.posix {
		return -1, fail("cuMemExportToShareableHandle", cuda.ErrorInvalidValue)
	}
	fd, err := syscall.Dup(int(p.file.Fd()))
	if err != nil {
		return -1, gccl.Wrap(gccl.SystemError, "dup", err)
	}
	return fd, nil
}

func (f *Fake) MemImportFromShareableHandle(fd int) (cuda.MemHandle, error) {
	var st syscall.Stat_t
	if fd < 0 || syscall.Fstat(fd, &st) != nil || st.Size <= 0 {
		return 0, fail("cuMemImportFromShareableHandle", cuda.ErrorInvalidValue)
	}
	nfd, err := syscall.Dup(fd)
	if err != nil {
		return 0, gccl.Wrap(gccl.SystemError, "dup", err)
	}
	p, err := mapFile(os.NewFile(uintptr(nfd), "gccl-cudafake-import"), int(st.Size), 0)
	if err != nil {
		return 0, err
	}
	return f.addHandle(p, true), nil
}

func (f *Fake) MemRetainAllocationHandle(p uintptr) (cuda.MemHandle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.find(p)
	if r == nil || r.kind != kindVMM {
		return 0, fail("cuMemRetainAllocationHandle", cuda.ErrorInvalidValue)
	}
	r.p.refs++
	f.phys[r.p.handle] = r.p
	return r.p.handle, nil
}

func (f *Fake) PointerGetAttribute(attr cuda.PointerAttr, p uintptr) (uint64, error) {
	v, err := f.PointerGetAttributes([]cuda.PointerAttr{attr}, p)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

func (f *Fake) PointerGetAttributes(attrs []cuda.PointerAttr, p uintptr) ([]uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.find(p)
	var host bool
	if r == nil {
		if _, err := f.bytes("cuPointerGetAttributes", p, 1); err != nil {
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
