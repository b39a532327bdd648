package bufreg

import (
	"sort"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/progress"
	"github.com/gccl/gccl/internal/reglink"
)

// Comm is what registration needs from a communicator; *comm.Comm
// satisfies it.
type Comm interface {
	Device() device.Device
	Rank() int
	Count() int
}

// registry is one communicator's registrations. Package comm makes one per
// communicator (through internal/reglink), hands it to its engine, and
// closes it with the communicator; its mutex guards the bookkeeping of
// every Registration in it.
type registry struct {
	mu     sync.Mutex
	dev    device.Device
	rank   int
	count  int
	net    Net             // the communicator's bootstrap network; nil: none yet
	regs   []*Registration // live registrations, sorted by base address
	seq    uint64          // collective registrations made (Register and RegisterGraph)
	graphs uint64          // of which RegisterGraph
	owned  bool            // made by package comm (else found in index.byComm)
}

// A registry is the Comm its registrations belong to.
func (g *registry) Device() device.Device { return g.dev }
func (g *registry) Rank() int             { return g.rank }
func (g *registry) Count() int            { return g.count }

func init() {
	reglink.InstallNew(func(o reglink.Owner) reglink.Cache {
		g := &registry{dev: o.Device, rank: o.Rank, count: o.NRanks, owned: true}
		if o.Net != nil {
			g.net = o.Net
			index.Lock()
			index.byNet[o.Net] = g
			index.Unlock()
		}
		return g
	})
}

// Close releases every registration of the communicator (DeregisterAll)
// and forgets its network; package comm calls it when the communicator is
// destroyed or aborted, after its operations have stopped.
func (g *registry) Close() error {
	index.Lock()
	if g.net != nil && index.byNet[g.net] == g {
		delete(index.byNet, g.net)
	}
	index.Unlock()
	return g.releaseAll()
}

// index finds the registries that package comm did not make, and every
// registry by its network. The engine still names its communicator by its
// bootstrap network (LookupNet, Collective, DeregisterNet) and its tests,
// like this package's, register with communicators that are not a
// *comm.Comm (whose registries stay here, empty once deregistered); both
// uses go when the engine is handed its registry.
var index = struct {
	sync.Mutex
	byComm map[Comm]*registry
	byNet  map[Net]*registry
}{byComm: map[Comm]*registry{}, byNet: map[Net]*registry{}}

// registryOf returns c's registry: c itself when the engine passes it
// back, a *comm.Comm's own, else one kept in index.byComm (made when make
// is set; nil otherwise when there is none).
func registryOf(c Comm, make bool) *registry {
	if g, ok := c.(*registry); ok {
		return g
	}
	if cache, ok := reglink.CacheOf(c); ok {
		g, _ := cache.(*registry) // nil: not ready, or closed
		return g
	}
	index.Lock()
	defer index.Unlock()
	g := index.byComm[c]
	if g == nil && make {
		g = &registry{dev: c.Device(), rank: c.Rank(), count: c.Count()}
		index.byComm[c] = g
	}
	return g
}

// onNet returns c's registry, on network net from now on.
func onNet(c Comm, net Net) *registry {
	g := registryOf(c, true)
	index.Lock()
	defer index.Unlock()
	if g.net == nil {
		g.net = net
		index.byNet[net] = g
	}
	return g
}

// Handle is what Register returns: one reference to a registration.
type Handle struct {
	owner *registry
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

// Register registers [ptr, ptr+size) of c's device memory with c, as
// ncclCommRegister does, so operations on any sub-buffer of it can let
// peers read and write it directly instead of copying through staging
// buffers. ptr may be memory from MemAlloc (preferred), from
// Device.Alloc, or, on a GPU, any cuMemAlloc/cudaMalloc or cuMem VMM
// allocation of the communicator's device. Registering the same range
// again returns a new Handle to the same registration.
//
// On a communicator with a bootstrap network (a *comm.Comm) Register is
// collective, as in NCCL: every rank calls it with its own buffer, in
// the same order, and the ranks map each other's buffers (RegisterOn).
// The registrations belong to the communicator: Close and Abort release
// them, and their handles are deregistered then.
//
// With GCCL_LOCAL_REGISTER=0 (NCCL_LOCAL_REGISTER=0) Register checks its
// arguments and returns a Handle that registers nothing.
func Register(c Comm, ptr uintptr, size int) (*Handle, error) {
	defer progress.Enter(true)()
	if err := checkComm(c); err != nil {
		return nil, err
	}
	g := registryOf(c, true)
	if g == nil {
		return nil, gccl.Errorf(gccl.InvalidUsage, "comm", "communicator is not ready or closed")
	}
	if g.net != nil {
		return register(g, g.net, ptr, size, false) // collective: every rank takes part, even with bad arguments
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

func checkComm(c Comm) error {
	if c == nil || c.Device() == nil {
		return gccl.Errorf(gccl.InvalidArgument, "comm", "nil communicator, or one that is not ready or is closed (it has no device)")
	}
	return nil
}

// reuse returns g's live local registration of exactly [ptr, ptr+size)
// with one more handle, or nil.
func (g *registry) reuse(ptr uintptr, size int) *Registration {
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

func (g *registry) insert(r *Registration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := sort.Search(len(g.regs), func(i int) bool { return g.regs[i].Base > r.Base })
	g.regs = append(g.regs, nil)
	copy(g.regs[i+1:], g.regs[i:])
	g.regs[i] = r
	countRegistration(r, 1)
}

// remove drops r from its registry; the caller holds r.owner.mu.
func (r *Registration) remove() {
	g := r.owner
	for i, x := range g.regs {
		if x == r {
			g.regs = append(g.regs[:i], g.regs[i+1:]...)
			countRegistration(r, -1)
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

// Lookup finds a live registration of c that holds all of [ptr, ptr+n)
// and returns it with ptr's offset from the registration's base. When
// several do, the innermost (latest base) wins.
func Lookup(c Comm, ptr uintptr, n int) (*Registration, int, bool) {
	if c == nil || ptr == 0 || n < 0 || ptr+uintptr(n) < ptr {
		return nil, 0, false
	}
	g := registryOf(c, false)
	if g == nil {
		return nil, 0, false
	}
	return g.lookup(ptr, n)
}

func (g *registry) lookup(ptr uintptr, n int) (*Registration, int, bool) {
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
