package bufreg

import (
	"sort"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/progress"
)

// Comm is what registration needs from a communicator; *comm.Comm
// satisfies it. Registrations are kept per Comm value.
type Comm interface {
	Device() device.Device
	Rank() int
	Count() int
}

// cache is one communicator's registrations, sorted by base address.
type cache struct {
	regs []*Registration
}

// registry maps each communicator to its cache. A cache is dropped when
// its last registration goes, so a communicator that deregisters
// everything leaves nothing behind.
var registry = struct {
	sync.Mutex
	comms map[Comm]*cache
	nets  map[Net]*netState // collective registration per bootstrap network
}{comms: map[Comm]*cache{}, nets: map[Net]*netState{}}

// Handle is what Register returns: one reference to a registration.
type Handle struct {
	comm Comm
	reg  *Registration // nil when local registration is disabled
	gone bool          // deregistered; guarded by registry
}

// Registration returns the registration behind h, or nil when
// GCCL_LOCAL_REGISTER=0 made Register a no-op.
func (h *Handle) Registration() *Registration {
	if h == nil {
		return nil
	}
	return h.reg
}

// Register registers [ptr, ptr+size) of c's device memory with c, as
// ncclCommRegister does, so operations on any sub-buffer of it can let
// peers read and write it directly instead of copying through staging
// buffers. ptr may be memory from MemAlloc (preferred), from
// Device.Alloc, or, on a GPU, any cuMemAlloc/cudaMalloc or cuMem VMM
// allocation of the communicator's device. Registering the same range
// again returns a new Handle to the same registration.
//
// On a communicator with a bootstrap network (*comm.Comm) Register is
// collective, as in NCCL: every rank calls it with its own buffer, in
// the same order, and the ranks map each other's buffers (RegisterOn).
//
// With GCCL_LOCAL_REGISTER=0 (NCCL_LOCAL_REGISTER=0) Register checks its
// arguments and returns a Handle that registers nothing.
func Register(c Comm, ptr uintptr, size int) (*Handle, error) {
	defer progress.Enter(true)()
	if err := checkComm(c); err != nil {
		return nil, err
	}
	if net := netOf(c); net != nil {
		return RegisterOn(c, net, ptr, size) // collective: every rank takes part, even with bad arguments
	}
	if ptr == 0 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "ptr", "nil buffer; pass memory from MemAlloc or Device.Alloc")
	}
	if size <= 0 || ptr+uintptr(size) < ptr {
		return nil, gccl.Errorf(gccl.InvalidArgument, "size", "cannot register %d bytes at %#x", size, ptr)
	}
	if !env.Get().LocalRegister {
		return &Handle{comm: c}, nil
	}
	if r := reuse(c, ptr, size); r != nil {
		return &Handle{comm: c, reg: r}, nil
	}
	r, err := resolve(c, ptr, size)
	if err != nil {
		return nil, err
	}
	r.handles = 1
	insert(r)
	return &Handle{comm: c, reg: r}, nil
}

func checkComm(c Comm) error {
	if c == nil || c.Device() == nil {
		return gccl.Errorf(gccl.InvalidArgument, "comm", "nil communicator or communicator without a device")
	}
	return nil
}

// reuse returns c's live local registration of exactly [ptr, ptr+size)
// with one more handle, or nil.
func reuse(c Comm, ptr uintptr, size int) *Registration {
	registry.Lock()
	defer registry.Unlock()
	ch := registry.comms[c]
	if ch == nil {
		return nil
	}
	for _, r := range ch.regs {
		if r.Base == ptr && r.Size == size && r.handles > 0 && !r.closed {
			r.handles++
			return r
		}
	}
	return nil
}

func insert(r *Registration) {
	registry.Lock()
	defer registry.Unlock()
	ch := registry.comms[r.comm]
	if ch == nil {
		ch = &cache{}
		registry.comms[r.comm] = ch
	}
	i := sort.Search(len(ch.regs), func(i int) bool { return ch.regs[i].Base > r.Base })
	ch.regs = append(ch.regs, nil)
	copy(ch.regs[i+1:], ch.regs[i:])
	ch.regs[i] = r
}

// remove drops r from its cache; the caller holds registry.
func remove(r *Registration) {
	ch := registry.comms[r.comm]
	if ch == nil {
		return
	}
	for i, x := range ch.regs {
		if x == r {
			ch.regs = append(ch.regs[:i], ch.regs[i+1:]...)
			break
		}
	}
	if len(ch.regs) == 0 {
		delete(registry.comms, r.comm)
	}
}

// Deregister drops h's reference to its registration, as
// ncclCommDeregister does; the last reference releases it. Deregistering
// a handle twice is gccl.ErrInvalidUsage, and so is dropping the last
// reference while operations that use the registration are in flight or
// captured in graphs that still exist (synchronize the streams, destroy
// the graphs, then deregister): the handle stays valid in that case.
func Deregister(h *Handle) error {
	if h == nil {
		return gccl.Errorf(gccl.InvalidArgument, "handle", "nil registration handle")
	}
	if h.reg != nil {
		h.reg.prune() // operations whose streams passed them hold it no more
	}
	registry.Lock()
	if h.gone {
		registry.Unlock()
		return gccl.Errorf(gccl.InvalidUsage, "handle", "registration handle was already deregistered")
	}
	r := h.reg
	if r == nil {
		h.gone = true
		registry.Unlock()
		return nil
	}
	if r.closed {
		h.gone = true
		registry.Unlock()
		return gccl.Errorf(gccl.InvalidUsage, "handle", "buffer %#x was deregistered when its communicator was destroyed", r.Base)
	}
	if r.handles == 1 && r.uses > 0 {
		uses := r.uses
		registry.Unlock()
		return gccl.Errorf(gccl.InvalidUsage, "handle",
			"buffer %#x is in use by %d in-flight or graph-captured operations; synchronize their streams and destroy their graphs before deregistering", r.Base, uses)
	}
	h.gone = true
	r.handles--
	last := r.handles == 0 && r.uses == 0
	if last {
		r.closed = true
		remove(r)
	}
	registry.Unlock()
	if last {
		return r.release()
	}
	return nil
}

// Lookup finds a live registration of c that holds all of [ptr, ptr+n)
// and returns it with ptr's offset from the registration's base. When
// several do, the innermost (latest base) wins.
func Lookup(c Comm, ptr uintptr, n int) (*Registration, int, bool) {
	if c == nil || ptr == 0 || n < 0 || ptr+uintptr(n) < ptr {
		return nil, 0, false
	}
	registry.Lock()
	defer registry.Unlock()
	ch := registry.comms[c]
	if ch == nil {
		return nil, 0, false
	}
	for i := sort.Search(len(ch.regs), func(i int) bool { return ch.regs[i].Base > ptr }) - 1; i >= 0; i-- {
		r := ch.regs[i]
		if !r.closed && ptr+uintptr(n) <= r.Base+uintptr(r.Size) {
			return r, int(ptr - r.Base), true
		}
	}
	return nil, 0, false
}

// liveRegistrations counts registrations of any communicator that overlap
// [p, p+size).
func liveRegistrations(p uintptr, size int) int {
	registry.Lock()
	defer registry.Unlock()
	n := 0
	for _, ch := range registry.comms {
		for _, r := range ch.regs {
			if r.Base < p+uintptr(size) && p < r.Base+uintptr(r.Size) {
				n++
			}
		}
	}
	return n
}
