package device

import (
	"os"
	"sort"
	"syscall"
	"unsafe"

	"github.com/gccl/gccl"
)

// CheckRange returns nil when the n bytes at p lie inside one live
// allocation of d, and otherwise a *gccl.Error with code InvalidArgument
// and Arg arg that names the range, the allocation and what to do, e.g.
// "recvbuff [0x7f..,+8192) runs 4096 bytes past its allocation of 4096
// bytes at 0x7f..". n == 0 is always accepted (an empty operation touches
// no memory).
//
// On the host device, memory from Alloc (and so bufreg.MemAlloc) is
// checked against the size that was asked for; other memory (a pinned Go
// buffer) is accepted when the kernel has its first and last page mapped.
// Free keeps the address space of what it released reserved (mapped
// inaccessible, for the last 4096 allocations freed, at most 256 GiB of
// addresses and no memory), so an operation on freed memory is refused
// rather than let loose on whatever the process would map there next. On a GPU the driver tells which allocation
// holds p (cuMemGetAddressRange), remembered per allocation so that later
// checks cost a lookup. Devices of other packages are not checked.
//
// The engine calls it for every buffer of every operation on the host,
// and on GPUs when GCCL_CHECK_POINTERS=1.
func CheckRange(d Device, arg string, p uintptr, n int) error {
	if c, ok := d.(interface {
		checkLive(arg string, p uintptr, n int) error
	}); ok {
		return c.checkLive(arg, p, n)
	}
	return nil
}

// rangeError is CheckRange's error: "arg [p,+n) what".
func rangeError(arg string, p uintptr, n int, format string, a ...any) error {
	return gccl.Errorf(gccl.InvalidArgument, arg, "%s [%#x,+%d) "+format, append([]any{arg, p, n}, a...)...)
}

// outside checks what every device checks before looking p up: nothing to
// do for n == 0, and no nil pointer, negative length or wrap-around.
func outside(arg string, p uintptr, n int) (done bool, err error) {
	switch {
	case n == 0:
		return true, nil
	case n < 0:
		return true, gccl.Errorf(gccl.InvalidArgument, arg, "negative length %d", n)
	case p == 0:
		return true, gccl.Errorf(gccl.InvalidArgument, arg, "nil pointer with %d bytes to access; pass a buffer", n)
	case p+uintptr(n) < p:
		return true, rangeError(arg, p, n, "wraps around the end of the address space; pass a valid buffer")
	}
	return false, nil
}

// overrun is the error of a range that starts in the allocation [base,
// base+size) and ends past it.
func overrun(arg string, p uintptr, n int, base uintptr, size int) error {
	return rangeError(arg, p, n, "runs %d bytes past its allocation of %d bytes at %#x; "+
		"pass a larger allocation or fewer bytes (a smaller count)", int(p-base)+n-size, size, base)
}

// checkLive is CheckRange on the host device: shared memory from Alloc
// (the size asked for), freed allocations, else any mapped memory.
func (d *hostDevice) checkLive(arg string, p uintptr, n int) error { return checkHost(arg, p, n) }

func checkHost(arg string, p uintptr, n int) error {
	if done, err := outside(arg, p, n); done {
		return err
	}
	end := p + uintptr(n)
	shm.RLock()
	if i := find(p); i >= 0 {
		a := shm.allocs[i]
		shm.RUnlock()
		if int(p-a.base())+n > a.size {
			return overrun(arg, p, n, a.base(), a.size)
		}
		return nil
	}
	f, freed := shm.freed.at(p)
	var next *allocation
	if j := sort.Search(len(shm.allocs), func(j int) bool { return shm.allocs[j].base() > p }); j < len(shm.allocs) && shm.allocs[j].base() < end {
		next = shm.allocs[j]
	}
	shm.RUnlock()
	wasFreed := func() error {
		return rangeError(arg, p, n, "lies in an allocation of %d bytes at %#x that was freed; pass live memory", f.asked, f.base)
	}
	switch {
	case next != nil:
		return rangeError(arg, p, n, "starts outside any allocation and runs into the allocation at %#x; pass memory of one allocation", next.base())
	case freed && f.reserved:
		return wasFreed() // nothing else can be mapped there
	case mapped(p, n):
		// Memory of the program's own (a pinned Go buffer), or freed
		// memory that something else mapped since: not ours to refuse.
		return nil
	case freed:
		return wasFreed()
	}
	return rangeError(arg, p, n, "is not inside any allocation (no memory is mapped there); "+
		"pass memory from Device.Alloc or bufreg.MemAlloc")
}

// mapped reports whether the first and the last page of [p, p+n) are
// mapped in this process (mincore fails with ENOMEM on unmapped pages).
func mapped(p uintptr, n int) bool {
	pg := uintptr(os.Getpagesize())
	var vec [1]byte
	for _, a := range [2]uintptr{p &^ (pg - 1), (p + uintptr(n) - 1) &^ (pg - 1)} {
		_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, a, pg, uintptr(unsafe.Pointer(&vec[0])))
		if errno == syscall.ENOMEM {
			return false
		}
	}
	return true
}

// span is one allocation: its base, its size (mapped, or as the driver
// reports it) and the size it was asked for (the host's Alloc).
type span struct {
	base        uintptr
	size, asked int
	reserved    bool // a freed host allocation whose address space gccl holds (reserve)
}

func (s span) end() uintptr { return s.base + uintptr(s.size) }

// spans is a set of non-overlapping spans sorted by base.
type spans []span

// at returns the span holding p.
func (ss spans) at(p uintptr) (span, bool) {
	i := sort.Search(len(ss), func(i int) bool { return ss[i].base > p }) - 1
	if i >= 0 && p < ss[i].end() {
		return ss[i], true
	}
	return span{}, false
}

// add inserts s, dropping the spans it overlaps.
func (ss *spans) add(s span) {
	ss.remove(s.base, s.size)
	i := sort.Search(len(*ss), func(i int) bool { return (*ss)[i].base > s.base })
	*ss = append(*ss, span{})
	copy((*ss)[i+1:], (*ss)[i:])
	(*ss)[i] = s
}

// remove drops the spans that overlap [base, base+size).
func (ss *spans) remove(base uintptr, size int) {
	end := base + uintptr(size)
	out := (*ss)[:0]
	for _, s := range *ss {
		if s.base >= end || s.end() <= base {
			out = append(out, s)
		}
	}
	*ss = out
}
