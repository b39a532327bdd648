package regcache

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/memalloc"
	"github.com/gccl/gccl/internal/progress"
)

// Owner is the communicator a Cache belongs to.
type Owner struct {
	Device       device.Device
	Rank, NRanks int
	// Net is the communicator's all-gather among its ranks (its bootstrap
	// network); registration through it is collective. nil: registrations
	// are local to this rank and no peer maps them.
	Net Net
}

// Cache is one communicator's registrations. Package comm makes one per
// communicator (New), hands it to its engine (the GPU backend finds,
// agrees on and holds registrations through it) and closes it with the
// communicator; package bufreg registers through it. Its mutex guards the
// bookkeeping of every Registration in it.
type Cache struct {
	mu    sync.Mutex
	dev   device.Device
	rank  int
	count int
	net   Net             // nil: local registrations only
	regs  []*Registration // live registrations, sorted by base address
	seq   uint64          // collective registrations made (Register and RegisterGraph)
	// plain counts those by Register alone; read without mu, since the GPU
	// backend asks for it on every collective.
	plain atomic.Uint64
}

// New returns the empty registration cache of the communicator o.
func New(o Owner) *Cache {
	return &Cache{dev: o.Device, rank: o.Rank, count: o.NRanks, net: o.Net}
}

// Device, Rank and Count are the owner's device, rank and size.
func (g *Cache) Device() device.Device { return g.dev }
func (g *Cache) Rank() int             { return g.rank }
func (g *Cache) Count() int            { return g.count }

// Close releases every registration, in use or not, and makes their
// handles deregistered; package comm calls it when the communicator is
// destroyed or aborted, after its operations have stopped. Close is safe
// on nil and twice.
func (g *Cache) Close() error {
	if g == nil {
		return nil
	}
	return g.releaseAll()
}

// Handle is what Register returns: one reference to a registration.
type Handle struct {
	owner *Cache
	reg   *Registration // nil when local registration is disabled
	gone  bool          // deregistered; guarded by owner.mu
}

// Registration returns the registration behind h, or nil when
// GCCL_LOCAL_REGISTER=0 made Register a no-op.
func (h *Handle) Registration() *Registration {
	if h == nil {
		return nil
	}
	return h.reg
}

// Register registers [ptr, ptr+size) of the owner's device memory, as
// ncclCommRegister does (bufreg.Register), so operations on any sub-buffer
// of it can let peers read and write it directly instead of copying
// through staging buffers. ptr may be memory from memalloc (preferred),
// from Device.Alloc, or, on a GPU, any cuMemAlloc/cudaMalloc or cuMem VMM
// allocation of the device. Registering the same range again returns a
// new Handle to the same registration.
//
// With a Net, Register is collective, as in NCCL: every rank calls it
// with its own buffer, in the same order, and the ranks map each other's
// buffers (registerOn). Without one it is local.
//
// With GCCL_LOCAL_REGISTER=0 (NCCL_LOCAL_REGISTER=0) Register checks its
// arguments and returns a Handle that registers nothing.
func (g *Cache) Register(ptr uintptr, size int) (*Handle, error) {
	defer progress.Enter(true)()
	if g == nil || g.dev == nil {
		return nil, gccl.Errorf(gccl.InvalidArgument, "comm", "nil communicator, or one that is not ready or is closed (it has no device)")
	}
	if g.net != nil {
		return g.register(ptr, size, false) // collective: every rank takes part, even with bad arguments
	}
	if ptr == 0 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "ptr", "nil buffer; pass memory from MemAlloc or Device.Alloc")
	}
	if size <= 0 || ptr+uintptr(size) < ptr {
		return nil, gccl.Errorf(gccl.InvalidArgument, "size", "cannot register %d bytes at %#x", size, ptr)
	}
	if !env.Get().LocalRegister {
		return &Handle{owner: g}, nil
	}
	if r := g.reuse(ptr, size); r != nil {
		return &Handle{owner: g, reg: r}, nil
	}
	r, err := resolve(g, ptr, size)
	if err != nil {
		return nil, err
	}
	r.handles = 1
	g.insert(r)
	return &Handle{owner: g, reg: r}, nil
}

// reuse returns g's live local registration of exactly [ptr, ptr+size)
// with one more handle, or nil.
func (g *Cache) reuse(ptr uintptr, size int) *Registration {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.regs {
		if r.Base == ptr && r.Size == size && r.handles > 0 && !r.closed {
			r.handles++
			return r
		}
	}
	return nil
}

func (g *Cache) insert(r *Registration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := sort.Search(len(g.regs), func(i int) bool { return g.regs[i].Base > r.Base })
	g.regs = append(g.regs, nil)
	copy(g.regs[i+1:], g.regs[i:])
	g.regs[i] = r
	memalloc.CountRegistered(r.Base, r.Size, 1)
}

// remove drops r from its registry; the caller holds r.owner.mu.
func (r *Registration) remove() {
	g := r.owner
	for i, x := range g.regs {
		if x == r {
			g.regs = append(g.regs[:i], g.regs[i+1:]...)
			memalloc.CountRegistered(r.Base, r.Size, -1)
			return
		}
	}
}

// Deregister drops h's reference to its registration, as
// ncclCommDeregister does; the last reference releases it. Deregistering
// a handle twice is gccl.ErrInvalidUsage, and so is dropping the last
// reference while operations that use the registration are in flight or
// captured in graphs that still exist (synchronize the streams, destroy
// the graphs, then deregister): the handle stays valid in that case.
func Deregister(h *Handle) error {
	if h == nil || h.owner == nil {
		return gccl.Errorf(gccl.InvalidArgument, "handle", "nil registration handle")
	}
	if h.reg != nil {
		h.reg.prune() // operations whose streams passed them hold it no more
	}
	g := h.owner
	g.mu.Lock()
	if h.gone {
		g.mu.Unlock()
		return gccl.Errorf(gccl.InvalidUsage, "handle", "registration handle was already deregistered")
	}
	r := h.reg
	if r == nil {
		h.gone = true
		g.mu.Unlock()
		return nil
	}
	if r.closed {
		h.gone = true
		g.mu.Unlock()
		return gccl.Errorf(gccl.InvalidUsage, "handle", "buffer %#x was deregistered when its communicator was destroyed", r.Base)
	}
	if r.handles == 1 && r.uses > 0 {
		uses := r.uses
		g.mu.Unlock()
		return gccl.Errorf(gccl.InvalidUsage, "handle",
			"buffer %#x is in use by %d in-flight or graph-captured operations; synchronize their streams and destroy their graphs before deregistering", r.Base, uses)
	}
	h.gone = true
	r.handles--
	last := r.handles == 0 && r.uses == 0
	if last {
		r.closed = true
		r.remove()
	}
	g.mu.Unlock()
	if last {
		return r.release()
	}
	return nil
}

// Lookup finds a live registration that holds all of [ptr, ptr+n) and
// returns it with ptr's offset from the registration's base. When several
// do, the innermost (latest base) wins. A nil Cache has none.
func (g *Cache) Lookup(ptr uintptr, n int) (*Registration, int, bool) {
	if g == nil || ptr == 0 || n < 0 || ptr+uintptr(n) < ptr {
		return nil, 0, false
	}
	return g.lookup(ptr, n)
}

func (g *Cache) lookup(ptr uintptr, n int) (*Registration, int, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := sort.Search(len(g.regs), func(i int) bool { return g.regs[i].Base > ptr }) - 1; i >= 0; i-- {
		r := g.regs[i]
		if !r.closed && ptr+uintptr(n) <= r.Base+uintptr(r.Size) {
			return r, int(ptr - r.Base), true
		}
	}
	return nil, 0, false
}
