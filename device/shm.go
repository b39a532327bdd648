package device

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/gccl/gccl"
)

// Region describes the shared-memory file a host pointer lies in.
type Region struct {
	Name   string  // what a peer passes to MapHostRegion
	Base   uintptr // start of the mapping in this process
	Size   int     // size of the mapping (the requested size rounded up to a page)
	Offset int     // the pointer's offset from Base
}

// allocation is one Alloc: a mapped shared file.
type allocation struct {
	name string
	size int      // the size Alloc was asked for (operations may use this much)
	mem  []byte   // the mapping (not Go shm memory), size rounded up to a page
	file *os.File // kept open: a memfd lives as long as its descriptor
	path string   // a /dev/shm file to unlink on Free, or ""
}

func (a *allocation) base() uintptr { return uintptr(unsafe.Pointer(&a.mem[0])) }

// freedMemory is how many freed allocations are remembered to tell a
// double Free, or an operation on freed memory, from a foreign pointer;
// freedReserve bounds the address space they keep reserved (no memory:
// inaccessible, unbacked mappings).
const (
	freedMemory  = 4096
	freedReserve = 1 << 38 // 256 GiB
)

var shm = struct {
	sync.RWMutex
	allocs []*allocation // sorted by base
	freed  spans         // freed allocations (mapped sizes), none overlapping a live one
	ring   []uintptr     // the bases of freed in the order they were freed, for eviction

	reservedBytes int // address space the reserved spans of freed hold
}{}

// memfdSyscall is memfd_create's number, 0 where it is not known.
var memfdSyscall = map[string]uintptr{"amd64": 319, "arm64": 279, "riscv64": 279, "ppc64le": 360}[runtime.GOARCH]

// openShared creates an unlinked-on-exit shared file of size bytes: a memfd
// when the kernel has it, else a /dev/shm file. useMemfd=false forces the
// latter (for tests).
func openShared(size int, useMemfd bool) (f *os.File, name, path string, err error) {
	if useMemfd && memfdSyscall != 0 {
		tag, _ := syscall.BytePtrFromString("gccl")
		fd, _, errno := syscall.Syscall(memfdSyscall, uintptr(unsafe.Pointer(tag)), 0, 0)
		if errno == 0 {
			f = os.NewFile(fd, "gccl-memfd")
			name = fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), fd)
		}
	}
	if f == nil {
		var rnd [8]byte
		_, _ = rand.Read(rnd[:])
		path = fmt.Sprintf("/dev/shm/gccl-%d-%s", os.Getpid(), hex.EncodeToString(rnd[:]))
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, "", "", err
		}
		name = path
	}
	// Reserve the pages now, as NCCL does, so that running out of shared
	// memory is an error here and not a SIGBUS later.
	if err = syscall.Fallocate(int(f.Fd()), 0, 0, int64(size)); err != nil {
		err = fmt.Errorf("reserving %d bytes of shared memory: %w", size, err)
		if path != "" {
			_ = os.Remove(path)
		}
		_ = f.Close()
		return nil, "", "", err
	}
	return f, name, path, nil
}

func roundToPage(n int) int {
	pg := os.Getpagesize()
	if n <= 0 {
		return pg
	}
	return (n + pg - 1) / pg * pg
}

// allocShared maps a new shared region of at least size bytes.
func allocShared(size int, useMemfd bool) (uintptr, error) {
	if size < 0 {
		return 0, gccl.Errorf(gccl.InvalidArgument, "size", "negative allocation size %d", size)
	}
	n := roundToPage(size)
	if n < size {
		return 0, gccl.Errorf(gccl.InvalidArgument, "size", "allocation size %d overflows", size)
	}
	f, name, path, err := openShared(n, useMemfd)
	if err != nil {
		return 0, gccl.Errorf(gccl.SystemError, "size", "allocating %d bytes of host shared memory: %w", size, err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		if path != "" {
			_ = os.Remove(path)
		}
		_ = f.Close()
		return 0, gccl.Errorf(gccl.SystemError, "size", "mapping %d bytes of host shared memory: %w", size, err)
	}
	a := &allocation{name: name, size: size, mem: mem, file: f, path: path}
	shm.Lock()
	defer shm.Unlock()
	i := sort.Search(len(shm.allocs), func(i int) bool { return shm.allocs[i].base() > a.base() })
	shm.allocs = append(shm.allocs, nil)
	copy(shm.allocs[i+1:], shm.allocs[i:])
	shm.allocs[i] = a
	shm.freed.remove(a.base(), len(a.mem))
	return a.base(), nil
}

// find returns the index of the allocation holding p, or -1. shm must be locked.
func find(p uintptr) int {
	i := sort.Search(len(shm.allocs), func(i int) bool { return shm.allocs[i].base() > p }) - 1
	if i >= 0 && p < shm.allocs[i].base()+uintptr(len(shm.allocs[i].mem)) {
		return i
	}
	return -1
}

// freeShared releases an allocation made by allocShared.
func freeShared(p uintptr) error {
	if p == 0 {
		return nil
	}
	shm.Lock()
	i := find(p)
	if i < 0 || shm.allocs[i].base() != p {
		f, wasFreed := shm.freed.at(p)
		doubled := wasFreed && f.base == p && i < 0
		shm.Unlock()
		if doubled {
			return gccl.Errorf(gccl.InvalidUsage, "p", "pointer %#x was already freed", p)
		}
		if i >= 0 {
			return gccl.Errorf(gccl.InvalidArgument, "p", "pointer %#x is inside an allocation, not its start; free the pointer Alloc returned", p)
		}
		return gccl.Errorf(gccl.InvalidArgument, "p", "pointer %#x was not returned by Alloc", p)
	}
	a := shm.allocs[i]
	shm.allocs = append(shm.allocs[:i], shm.allocs[i+1:]...)
	base, n := a.base(), len(a.mem)
	err := syscall.Munmap(a.mem)
	rememberFreed(span{base: base, size: n, asked: a.size, reserved: err == nil && reserve(base, n)})
	shm.Unlock()
	return a.close(err)
}

// rememberFreed notes a freed allocation, forgetting (and, if reserved,
// unmapping) the oldest beyond freedMemory of them or freedReserve bytes of
// reserved address space. shm must be locked.
func rememberFreed(f span) {
	shm.freed.add(f)
	shm.ring = append(shm.ring, f.base)
	if f.reserved {
		shm.reservedBytes += f.size
	}
	for len(shm.ring) > freedMemory || shm.reservedBytes > freedReserve {
		if old, ok := shm.freed.at(shm.ring[0]); ok && old.base == shm.ring[0] {
			shm.freed.remove(old.base, old.size)
			if old.reserved {
				unreserve(old.base, old.size)
				shm.reservedBytes -= old.size
			}
		}
		shm.ring = shm.ring[1:]
	}
}

// mapFixedNoreplace is Linux's MAP_FIXED_NOREPLACE (4.17): map at the
// address given or fail, never over another mapping.
const mapFixedNoreplace = 0x100000

// reserve maps [p, p+n), just unmapped, as address space that cannot be
// accessed, so that nothing else is mapped there while it is remembered as
// freed: an operation on freed memory is then refused every time rather
// than writing into whatever the process mapped there next. It reports
// whether it could (another thread may have mapped part of the range
// meanwhile, and kernels before 4.17 take the address as a hint only).
func reserve(p uintptr, n int) bool {
	got, _, errno := syscall.Syscall6(syscall.SYS_MMAP, p, uintptr(n), syscall.PROT_NONE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE|mapFixedNoreplace, ^uintptr(0), 0)
	if errno != 0 {
		return false
	}
	if got != p {
		unreserve(got, n)
		return false
	}
	return true
}

// unreserve gives back address space that reserve took.
func unreserve(p uintptr, n int) { _, _, _ = syscall.Syscall(syscall.SYS_MUNMAP, p, uintptr(n), 0) }

// close removes the allocation's file; err is the unmapping's.
func (a *allocation) close(err error) error {
	if a.path != "" {
		if rerr := os.Remove(a.path); err == nil {
			err = rerr
		}
	}
	if cerr := a.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return gccl.Errorf(gccl.SystemError, "p", "releasing host shared memory: %w", err)
	}
	return nil
}

// HostRegionOf returns the shared region that p lies in, if p is inside
// memory from the host device's Alloc.
func HostRegionOf(p uintptr) (Region, bool) {
	shm.RLock()
	defer shm.RUnlock()
	i := find(p)
	if i < 0 {
		return Region{}, false
	}
	a := shm.allocs[i]
	return Region{Name: a.name, Base: a.base(), Size: len(a.mem), Offset: int(p - a.base())}, true
}

// MapHostRegion maps, in this process, a region that another process on the
// same node allocated (its Region.Name and Region.Size). It returns the
// base address and a function that unmaps it.
func MapHostRegion(name string, size int) (uintptr, func() error, error) {
	if !strings.HasPrefix(name, "/dev/shm/gccl-") &&
		!(strings.HasPrefix(name, "/proc/") && strings.Contains(name, "/fd/")) {
		return 0, nil, gccl.Errorf(gccl.InvalidArgument, "name", "%q is not a gccl host region name; pass Region.Name", name)
	}
	if size <= 0 {
		return 0, nil, gccl.Errorf(gccl.InvalidArgument, "size", "region size %d must be positive", size)
	}
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return 0, nil, gccl.Errorf(gccl.SystemError, "name", "opening host region %s (is its owner still running on this node?): %w", name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, nil, gccl.Errorf(gccl.SystemError, "name", "inspecting host region %s: %w", name, err)
	}
	if st.Size() < int64(size) {
		return 0, nil, gccl.Errorf(gccl.InvalidArgument, "size", "host region %s has %d bytes, not %d", name, st.Size(), size)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return 0, nil, gccl.Errorf(gccl.SystemError, "name", "mapping host region %s: %w", name, err)
	}
	var once sync.Once
	unmap := func() error {
		var uerr error
		once.Do(func() { uerr = syscall.Munmap(mem) })
		return uerr
	}
	return uintptr(unsafe.Pointer(&mem[0])), unmap, nil
}

// HostBytes returns the n bytes of host memory at p as a slice, without
// copying. Host backend only: a GPU device pointer is not a host address.
// The slice is valid as long as the memory is (until Free, or for as long
// as the caller keeps a Go buffer alive).
func HostBytes(p uintptr, n int) []byte {
	if p == 0 || n <= 0 {
		return nil
	}
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)
}
