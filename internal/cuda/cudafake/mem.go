package cudafake

import (
	"os"
	"sort"
	"syscall"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
)

// Granularity is the fake's VMM allocation granularity.
const Granularity = 2 << 20

// phys is a physical allocation: a shared-memory file mapped into this process.
type phys struct {
	file   *os.File
	data   []byte
	dev    int
	refs   int            // handle references + mappings
	handle cuda.MemHandle // 0 for cuMemAlloc memory
	posix  bool           // exportable as a POSIX FD
	// counted: made on this fake (cuMemAlloc, cuMemCreate), so it counts
	// in its device's usage (MemGetInfo) until the last reference goes;
	// IPC-opened and imported memory is another allocation's and does not.
	counted bool
}

type regionKind int

const (
	kindAlloc regionKind = iota
	kindIPC
	kindVMM
)

// region is a range of fake device addresses backed by part of a phys.
type region struct {
	start  uintptr
	size   int
	p      *phys
	off    int
	kind   regionKind
	access bool // VMM: MemSetAccess was called
}

type hostRange struct {
	data       []byte
	registered bool
}

func newPhys(size, dev int) (*phys, error) {
	dir := "/dev/shm"
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = os.TempDir()
	}
	file, err := os.CreateTemp(dir, "gccl-cudafake-*")
	if err != nil {
		return nil, gccl.Wrap(gccl.SystemError, "cudafake", err)
	}
	os.Remove(file.Name())
	if err := file.Truncate(int64(size)); err != nil {
		file.Close()
		return nil, gccl.Wrap(gccl.SystemError, "cudafake", err)
	}
	return mapFile(file, size, dev)
}

func mapFile(file *os.File, size, dev int) (*phys, error) {
	data, err := syscall.Mmap(int(file.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		file.Close()
		return nil, gccl.Wrap(gccl.SystemError, "cudafake mmap", err)
	}
	live.Add(1)
	return &phys{file: file, data: data, dev: dev}, nil
}

// unref drops one reference; the last one unmaps and closes. Callers hold f.mu.
func (f *Fake) unref(p *phys) {
	p.refs--
	if p.refs > 0 {
		return
	}
	if p.counted {
		f.used[p.dev] -= len(p.data)
	}
	syscall.Munmap(p.data)
	p.file.Close()
	live.Add(-1)
}

// addRegion maps [start, start+size) to p at off. Callers hold f.mu.
func (f *Fake) addRegion(r *region) {
	r.p.refs++
	i := sort.Search(len(f.regions), func(i int) bool { return f.regions[i].start > r.start })
	f.regions = append(f.regions, nil)
	copy(f.regions[i+1:], f.regions[i:])
	f.regions[i] = r
}

func (f *Fake) removeRegion(r *region) {
	for i, x := range f.regions {
		if x == r {
			f.regions = append(f.regions[:i], f.regions[i+1:]...)
			f.unref(r.p)
			return
		}
	}
}

// find returns the region holding p. Callers hold f.mu.
func (f *Fake) find(p uintptr) *region {
	i := sort.Search(len(f.regions), func(i int) bool { return f.regions[i].start > p }) - 1
	if i >= 0 && p < f.regions[i].start+uintptr(f.regions[i].size) {
		return f.regions[i]
	}
	return nil
}

func (f *Fake) newVA(size int) uintptr {
	va := f.nextVA
	f.nextVA += uintptr((size+Granularity-1)/Granularity*Granularity) + Granularity
	return va
}

// Bytes returns the n bytes of fake device (or pinned/registered host)
// memory at p, for Kernels and tests.
func (f *Fake) Bytes(p uintptr, n int) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bytes("memory", p, n)
}

func (f *Fake) bytes(fn string, p uintptr, n int) ([]byte, error) {
	if n < 0 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "n", "negative size %d", n)
	}
	if r := f.find(p); r != nil {
		if r.kind == kindVMM && !r.access {
			return nil, fail(fn, cuda.ErrorIllegalAddress)
		}
		off := r.off + int(p-r.start)
		if int(p-r.start)+n > r.size {
			return nil, fail(fn, cuda.ErrorInvalidValue)
		}
		return r.p.data[off : off+n], nil
	}
	for base, h := range f.hosts {
		if p >= base && p+uintptr(n) <= base+uintptr(len(h.data)) {
			return h.data[p-base : int(p-base)+n], nil
		}
	}
	return nil, fail(fn, cuda.ErrorInvalidValue)
}

func (f *Fake) MemGetInfo() (int, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.currentDev("cuMemGetInfo")
	if err != nil {
		return 0, 0, err
	}
	return f.cfg.MemBytes - f.used[d], f.cfg.MemBytes, nil
}

func (f *Fake) MemAlloc(size int) (uintptr, error) {
	if size <= 0 {
		return 0, gccl.Errorf(gccl.InvalidArgument, "size", "cannot allocate %d bytes; pass a size > 0", size)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.currentDev("cuMemAlloc")
	if err != nil {
		return 0, err
	}
	if f.used[d]+size > f.cfg.MemBytes {
		return 0, fail("cuMemAlloc", cuda.ErrorOutOfMemory)
	}
	p, err := newPhys(size, d)
	if err != nil {
		return 0, err
	}
	f.used[d] += size
	p.counted = true
	va := f.newVA(size)
	f.addRegion(&region{start: va, size: size, p: p, kind: kindAlloc})
	return va, nil
}

func (f *Fake) MemFree(p uintptr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.find(p)
	if r == nil || r.start != p || r.kind != kindAlloc {
		return fail("cuMemFree", cuda.ErrorInvalidValue)
	}
	f.removeRegion(r)
	return nil
}

func (f *Fake) MemGetAddressRange(p uintptr) (uintptr, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.find(p)
	if r == nil {
		return 0, 0, fail("cuMemGetAddressRange", cuda.ErrorNotFound)
	}
	return r.start, r.size, nil
}

func (f *Fake) MemHostAlloc(size int, flags uint32) (uintptr, error) {
	if size <= 0 {
		return 0, gccl.Errorf(gccl.InvalidArgument, "size", "cannot allocate %d bytes; pass a size > 0", size)
	}
	data, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_SHARED)
	if err != nil {
		return 0, fail("cuMemHostAlloc", cuda.ErrorOutOfMemory)
	}
	p := uintptr(unsafe.Pointer(&data[0]))
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hosts[p] = hostRange{data: data}
	live.Add(1)
	return p, nil
}

func (f *Fake) MemFreeHost(p uintptr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, ok := f.hosts[p]
	if !ok || h.registered {
		return fail("cuMemFreeHost", cuda.ErrorInvalidValue)
	}
	delete(f.hosts, p)
	live.Add(-1)
	return syscall.Munmap(h.data)
}

// hostSlice views caller-owned host memory; the caller guarantees p is
// valid for size bytes while registered (as with cuMemHostRegister).
func hostSlice(p uintptr, size int) []byte {
	ptr := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	return unsafe.Slice((*byte)(ptr), size)
}

func (f *Fake) MemHostRegister(p uintptr, size int, flags uint32) error {
	if size <= 0 || p == 0 {
		return gccl.Errorf(gccl.InvalidArgument, "size", "cannot register %d bytes at %#x", size, p)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for base, h := range f.hosts {
		if p < base+uintptr(len(h.data)) && base < p+uintptr(size) {
			return fail("cuMemHostRegister", cuda.ErrorHostMemoryAlreadyRegistered)
		}
	}
	f.hosts[p] = hostRange{data: hostSlice(p, size), registered: true}
	return nil
}

func (f *Fake) MemHostUnregister(p uintptr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h, ok := f.hosts[p]; !ok || !h.registered {
		return fail("cuMemHostUnregister", cuda.ErrorHostMemoryNotRegistered)
	}
	delete(f.hosts, p)
	return nil
}

// MemHostGetDevicePointer: with unified addressing the device sees pinned
// memory at its host address.
func (f *Fake) MemHostGetDevicePointer(p uintptr) (uintptr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.bytes("cuMemHostGetDevicePointer", p, 1); err != nil {
		return 0, err
	}
	return p, nil
}
