package memory

import (
	"os"
	"sort"
	"sync"
	"syscall"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
)

// Granularity is the fake's VMM allocation granularity.
const Granularity = 2 << 20

// Config is what a Space needs of the fake machine it belongs to.
type Config struct {
	Devices  int     // number of GPUs
	MemBytes int     // memory per GPU
	VABase   uintptr // where device addresses start
	// Current is the device of the current context (cuMemAlloc and
	// cuMemGetInfo allocate or report on it), or the error of fn called
	// with no current context.
	Current func(fn string) (int, error)
	// Handle numbers a new handle (a cuMemCreate's), from the machine's
	// one sequence.
	Handle func() uint64
}

// Space is a fake machine's memory: device allocations (cuMemAlloc),
// physical allocations and reservations mapped through the VMM calls,
// memory opened from IPC handles or imported from POSIX FDs, and pinned or
// registered host memory. Its methods are the memory part of cuda.Driver;
// a primary context is its device's ordinal + 1, as the fake numbers them.
type Space struct {
	cfg      Config
	mu       sync.Mutex
	used     []int     // per device: bytes allocated on it (MemGetInfo)
	nextVA   uintptr   // the next device address handed out
	regions  []*region // device address ranges, sorted by start
	hosts    map[uintptr]hostRange
	phys     map[cuda.MemHandle]*phys
	reserved map[uintptr]int // VMM reservations: size by base
}

// New returns the empty memory of a machine.
func New(cfg Config) *Space {
	return &Space{cfg: cfg, used: make([]int, cfg.Devices), nextVA: cfg.VABase, hosts: map[uintptr]hostRange{},
		phys: map[cuda.MemHandle]*phys{}, reserved: map[uintptr]int{}}
}

// Fail is the error of the fake driver's call fn with result r.
func Fail(fn string, r cuda.Result) error { return cuda.NewError(fn, r, "(cudafake)") }

// CheckDevice returns the error of fn called with d, a device ordinal
// outside [0, devices).
func CheckDevice(fn string, d cuda.Device, devices int) error {
	if int(d) < 0 || int(d) >= devices {
		return Fail(fn, cuda.ErrorInvalidDevice)
	}
	return nil
}

func (m *Space) checkDev(fn string, d cuda.Device) error { return CheckDevice(fn, d, m.cfg.Devices) }

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

// unref drops one reference; the last one unmaps and closes. Callers hold m.mu.
func (m *Space) unref(p *phys) {
	p.refs--
	if p.refs > 0 {
		return
	}
	if p.counted {
		m.used[p.dev] -= len(p.data)
	}
	syscall.Munmap(p.data)
	p.file.Close()
	live.Add(-1)
}

// addRegion maps [start, start+size) to p at off. Callers hold m.mu.
func (m *Space) addRegion(r *region) {
	r.p.refs++
	i := sort.Search(len(m.regions), func(i int) bool { return m.regions[i].start > r.start })
	m.regions = append(m.regions, nil)
	copy(m.regions[i+1:], m.regions[i:])
	m.regions[i] = r
}

func (m *Space) removeRegion(r *region) {
	for i, x := range m.regions {
		if x == r {
			m.regions = append(m.regions[:i], m.regions[i+1:]...)
			m.unref(r.p)
			return
		}
	}
}

// find returns the region holding p. Callers hold m.mu.
func (m *Space) find(p uintptr) *region {
	i := sort.Search(len(m.regions), func(i int) bool { return m.regions[i].start > p }) - 1
	if i >= 0 && p < m.regions[i].start+uintptr(m.regions[i].size) {
		return m.regions[i]
	}
	return nil
}

func (m *Space) newVA(size int) uintptr {
	va := m.nextVA
	m.nextVA += uintptr((size+Granularity-1)/Granularity*Granularity) + Granularity
	return va
}

// Bytes returns the n bytes of fake device (or pinned/registered host)
// memory at p, for Kernels and tests.
func (m *Space) Bytes(p uintptr, n int) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes("memory", p, n)
}

func (m *Space) bytes(fn string, p uintptr, n int) ([]byte, error) {
	if n < 0 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "n", "negative size %d", n)
	}
	if r := m.find(p); r != nil {
		if r.kind == kindVMM && !r.access {
			return nil, Fail(fn, cuda.ErrorIllegalAddress)
		}
		off := r.off + int(p-r.start)
		if int(p-r.start)+n > r.size {
			return nil, Fail(fn, cuda.ErrorInvalidValue)
		}
		return r.p.data[off : off+n], nil
	}
	for base, h := range m.hosts {
		if p >= base && p+uintptr(n) <= base+uintptr(len(h.data)) {
			return h.data[p-base : int(p-base)+n], nil
		}
	}
	return nil, Fail(fn, cuda.ErrorInvalidValue)
}

func (m *Space) MemGetInfo() (int, int, error) {
	d, err := m.cfg.Current("cuMemGetInfo")
	if err != nil {
		return 0, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cfg.MemBytes - m.used[d], m.cfg.MemBytes, nil
}

func (m *Space) MemAlloc(size int) (uintptr, error) {
	if size <= 0 {
		return 0, gccl.Errorf(gccl.InvalidArgument, "size", "cannot allocate %d bytes; pass a size > 0", size)
	}
	d, err := m.cfg.Current("cuMemAlloc")
	if err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.used[d]+size > m.cfg.MemBytes {
		return 0, Fail("cuMemAlloc", cuda.ErrorOutOfMemory)
	}
	p, err := newPhys(size, d)
	if err != nil {
		return 0, err
	}
	m.used[d] += size
	p.counted = true
	va := m.newVA(size)
	m.addRegion(&region{start: va, size: size, p: p, kind: kindAlloc})
	return va, nil
}

func (m *Space) MemFree(p uintptr) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.find(p)
	if r == nil || r.start != p || r.kind != kindAlloc {
		return Fail("cuMemFree", cuda.ErrorInvalidValue)
	}
	m.removeRegion(r)
	return nil
}

func (m *Space) MemGetAddressRange(p uintptr) (uintptr, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.find(p)
	if r == nil {
		return 0, 0, Fail("cuMemGetAddressRange", cuda.ErrorNotFound)
	}
	return r.start, r.size, nil
}
