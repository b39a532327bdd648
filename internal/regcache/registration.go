package regcache

import (
	"fmt"
	"slices"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/memalloc"
)

// Kind is the kind of memory a registration covers, which decides how a
// peer maps it.
type Kind int

// The kinds of registered memory.
const (
	Host   Kind = iota + 1 // host shared memory (device.Alloc on the host device); peers map it by name
	VMM                    // a cuMem allocation (MemAlloc); peers import its POSIX file descriptor
	Legacy                 // cuMemAlloc/cudaMalloc memory; peers open its CUDA IPC handle
)

func (k Kind) String() string {
	switch k {
	case Host:
		return "host"
	case VMM:
		return "vmm"
	case Legacy:
		return "legacy"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Registration is one registered buffer of a communicator. The engine
// finds it with Lookup, holds it with Acquire while an operation uses it,
// and shares it with peers through shareDesc.
type Registration struct {
	owner *Cache
	Kind  Kind
	Base  uintptr // the registered address
	Size  int     // the registered length
	Graph bool    // registered for a captured graph's lifetime (RegisterGraph), not by Register

	// Collective registrations (a Cache with a Net): Seq numbers them in call
	// order, the same on every rank; Peers[r] is rank r's registered buffer
	// as this rank's device addresses it, nil when the peers cannot be
	// mapped (the engine then stages).
	Seq    uint64
	Peers  []Peer
	net    Net
	mapped []*mappedPeer // peers' buffers this registration mapped

	// The allocation that holds the buffer: its start and size, as a peer
	// maps it.
	AllocBase uintptr
	AllocSize int

	region    string            // Host: the shared file's name
	ipc       cuda.IpcMemHandle // Legacy
	mem       cuda.MemHandle    // VMM: the allocation handle
	ownsMem   bool              // VMM: mem was retained for this registration and is released with it
	shareable bool              // VMM: created with the POSIX FD handle type

	// guarded by owner.mu
	handles int            // live Handles
	uses    int            // Acquire holds and pending holds
	pending []*pendingHold // AcquireUntil holds, at most maxPending
	closed  bool           // released, or being released

	once sync.Once
	err  error
}

// Offset is the registered buffer's offset inside its allocation.
func (r *Registration) Offset() int { return int(r.Base - r.AllocBase) }

// Acquire marks r as used by an operation until release is called (once;
// later calls do nothing). A registration in use cannot be deregistered.
// Acquiring a registration that was deregistered meanwhile is
// gccl.ErrInvalidUsage.
func (r *Registration) Acquire() (release func(), err error) {
	if r == nil {
		return nil, gccl.Errorf(gccl.InvalidArgument, "registration", "nil registration")
	}
	r.owner.mu.Lock()
	defer r.owner.mu.Unlock()
	if r.closed {
		return nil, gccl.Errorf(gccl.InvalidUsage, "registration", "buffer %#x was deregistered", r.Base)
	}
	r.uses++
	return r.holder(), nil
}

// holder returns the release function of one use of r.
func (r *Registration) holder() func() {
	var once sync.Once
	return func() { once.Do(r.unuse) }
}

// unuse drops one use; a registration with no handles left (a graph
// registration) is released with its last use.
func (r *Registration) unuse() {
	r.owner.mu.Lock()
	last := r.endUses(1)
	r.owner.mu.Unlock()
	if last {
		_ = r.release()
	}
}

// endUses drops k uses (the caller holds r.owner.mu); it reports whether
// that was the last use of a registration with no handles left, which it
// then closes and drops from its cache: the caller releases it.
func (r *Registration) endUses(k int) (last bool) {
	r.uses -= k
	last = k > 0 && r.uses == 0 && r.handles == 0 && !r.closed
	if last {
		r.closed = true
		r.remove()
	}
	return last
}

// Uses reports how many operations hold r, after ending the pending
// holds whose work is done.
func (r *Registration) Uses() int {
	r.prune()
	r.owner.mu.Lock()
	defer r.owner.mu.Unlock()
	return r.uses
}

// Completion is the end of the work a pending hold waits for; the GPU
// engine records a CUDA event after an operation and polls it.
type Completion interface {
	// Done reports, without blocking, whether the work finished. A
	// failure to tell counts as finished, so a broken stream cannot pin a
	// registration forever. It is called without bufreg's locks held and
	// may be called again after it reported true.
	Done() bool
	// Drop tells the owner that one hold stopped waiting on the
	// completion: it was seen done, replaced by a later hold of the same
	// order key, or dropped when the registration was released. It is
	// called exactly once per hold that AcquireUntil took.
	Drop()
}

// maxPending bounds the pending holds of one registration.
const maxPending = 64

// pendingHold is one AcquireUntil hold.
type pendingHold struct {
	order uint64
	c     Completion
}

// AcquireUntil marks r as used by an operation until c reports done, with
// no release call: Deregister, Uses and later AcquireUntil calls poll the
// pending holds and end those whose work finished. Holds with the same
// nonzero order key finish in the order they were taken (operations on
// one CUDA stream), so a new one replaces the older one, whose work is
// done when the new one's is. It reports false, holding nothing, when r
// already has maxPending holds whose work is not done under other keys;
// the caller then holds r some other way. Acquiring a registration that
// was deregistered meanwhile is gccl.ErrInvalidUsage.
func (r *Registration) AcquireUntil(order uint64, c Completion) (bool, error) {
	if r == nil || c == nil {
		return false, gccl.Errorf(gccl.InvalidArgument, "registration", "nil registration or completion")
	}
	for pruned := false; ; pruned = true {
		held, full, err := r.addPending(&pendingHold{order: order, c: c})
		if err != nil || !full || pruned {
			return held, err
		}
		r.prune()
	}
}

// addPending adds p to r's pending holds; full reports that there was no
// room for it.
func (r *Registration) addPending(p *pendingHold) (held, full bool, err error) {
	r.owner.mu.Lock()
	if r.closed {
		r.owner.mu.Unlock()
		return false, false, gccl.Errorf(gccl.InvalidUsage, "registration", "buffer %#x was deregistered", r.Base)
	}
	if p.order != 0 {
		for i, old := range r.pending {
			if old.order == p.order {
				r.pending[i] = p
				r.owner.mu.Unlock()
				old.c.Drop()
				return true, false, nil
			}
		}
	}
	if len(r.pending) >= maxPending {
		r.owner.mu.Unlock()
		return false, true, nil
	}
	r.pending = append(r.pending, p)
	r.uses++
	r.owner.mu.Unlock()
	return true, false, nil
}

// prune ends the pending holds of r whose work is done. It polls them
// without holding the registry's lock (polling calls the driver), then
// ends those that are still r's.
func (r *Registration) prune() {
	r.owner.mu.Lock()
	snap := slices.Clone(r.pending)
	r.owner.mu.Unlock()
	var done []*pendingHold
	for _, p := range snap {
		if p.c.Done() {
			done = append(done, p)
		}
	}
	if len(done) == 0 {
		return
	}
	r.owner.mu.Lock()
	var ended []*pendingHold
	for _, p := range done {
		if i := slices.Index(r.pending, p); i >= 0 {
			r.pending = slices.Delete(r.pending, i, i+1)
			ended = append(ended, p)
		}
	}
	last := r.endUses(len(ended))
	r.owner.mu.Unlock()
	for _, p := range ended {
		p.c.Drop()
	}
	if last {
		_ = r.release()
	}
}

// release frees the driver resources of r, once.
func (r *Registration) release() error {
	r.once.Do(func() {
		r.err = r.unmapPeers()
		if !r.ownsMem {
			return
		}
		g, _ := memalloc.AsGPU(r.owner.dev)
		r.err = firstErr(r.err, g.Do(func() error { return g.Driver().MemRelease(r.mem) }))
	})
	return r.err
}

// releaseAll is Close.
func (g *Cache) releaseAll() error {
	g.mu.Lock()
	regs := g.regs
	g.regs = nil
	var dropped []*pendingHold
	for _, r := range regs {
		r.closed = true
		r.handles = 0
		r.uses -= len(r.pending)
		dropped = append(dropped, r.pending...)
		r.pending = nil
		memalloc.CountRegistered(r.Base, r.Size, -1)
	}
	g.mu.Unlock()
	for _, p := range dropped {
		p.c.Drop()
	}
	var first error
	for _, r := range regs {
		if err := r.release(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// resolve finds what memory [ptr, ptr+size) is and how a peer maps it.
func resolve(g *Cache, ptr uintptr, size int) (*Registration, error) {
	r := &Registration{owner: g, Base: ptr, Size: size}
	d := g.dev
	if g, ok := memalloc.AsGPU(d); ok {
		return r, g.Do(func() error { return resolveGPU(g, r) })
	}
	if d.Kind() != device.Host {
		return nil, gccl.Errorf(gccl.InvalidArgument, "comm", "cannot register memory of a %v device", d.Kind())
	}
	reg, ok := device.HostRegionOf(ptr)
	if !ok {
		return nil, gccl.Errorf(gccl.InvalidArgument, "ptr",
			"%#x is not host memory from MemAlloc or Device.Alloc, so peers cannot map it; allocate the buffer with bufreg.MemAlloc", ptr)
	}
	if reg.Offset+size > reg.Size {
		return nil, gccl.Errorf(gccl.InvalidArgument, "size",
			"%d bytes at offset %d run past the end of a %d-byte allocation", size, reg.Offset, reg.Size)
	}
	r.Kind, r.AllocBase, r.AllocSize, r.region = Host, reg.Base, reg.Size, reg.Name
	return r, nil
}

// resolveGPU fills r from the driver's view of ptr; it runs with the
// device's context current.
func resolveGPU(g memalloc.GPU, r *Registration) error {
	drv := g.Driver()
	attrs, err := drv.PointerGetAttributes([]cuda.PointerAttr{cuda.PointerMemoryType, cuda.PointerDeviceOrdinal}, r.Base)
	if err != nil || attrs[0] != cuda.MemoryTypeDevice {
		return gccl.Errorf(gccl.InvalidArgument, "ptr", "%#x is not GPU memory (%v); register memory from MemAlloc or cudaMalloc", r.Base, err)
	}
	if int(attrs[1]) != g.Ordinal() {
		return gccl.Errorf(gccl.InvalidArgument, "ptr", "%#x is memory of GPU %d but the communicator uses GPU %d", r.Base, attrs[1], g.Ordinal())
	}
	base, n, err := drv.MemGetAddressRange(r.Base)
	if err != nil {
		return gccl.Errorf(gccl.InvalidArgument, "ptr", "finding the allocation of %#x: %w", r.Base, err)
	}
	if r.Base+uintptr(r.Size) > base+uintptr(n) {
		return gccl.Errorf(gccl.InvalidArgument, "size",
			"%d bytes at offset %d run past the end of a %d-byte allocation", r.Size, r.Base-base, n)
	}
	r.AllocBase, r.AllocSize = base, n
	if h, ok := memalloc.Owned(base); ok {
		r.Kind, r.mem, r.shareable = VMM, h, true
		return nil
	}
	if h, err := drv.MemRetainAllocationHandle(r.Base); err == nil {
		// Another cuMem allocator's memory: hold the physical allocation
		// for as long as the registration lives.
		allowed, _ := drv.PointerGetAttribute(cuda.PointerAllowedHandle, r.Base)
		r.Kind, r.mem, r.ownsMem, r.shareable = VMM, h, true, allowed&uint64(cuda.HandlePosixFD) != 0
		return nil
	}
	ipc, err := drv.IpcGetMemHandle(base)
	if err != nil {
		return gccl.Errorf(gccl.InvalidArgument, "ptr", "memory at %#x cannot be shared with peers: %w", r.Base, err)
	}
	r.Kind, r.ipc = Legacy, ipc
	return nil
}
