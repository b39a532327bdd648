package regcache

import (
	"sync"
	"syscall"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/memalloc"
)

// shareDesc is what a peer needs to map a registration: the shared object
// (allocation) that holds it and where the buffer lies in it.
type shareDesc struct {
	Kind   Kind
	Size   int               // bytes of the shared object the peer maps
	Offset int               // the registered buffer's offset in it
	Len    int               // the registered length
	IPC    cuda.IpcMemHandle // Legacy: the allocation's CUDA IPC handle
	Region string            // Host: the shared file's name (device.MapHostRegion)
	// FD is, for VMM, a new POSIX file descriptor of the allocation that
	// the caller owns: pass it to the peer over a unix socket
	// (SCM_RIGHTS) and Close the shareDesc. -1 for the other kinds.
	FD int
}

// Close closes the exported file descriptor, if any; it is safe twice.
func (e *shareDesc) Close() error {
	if e == nil || e.FD < 0 {
		return nil
	}
	err := syscall.Close(e.FD)
	e.FD = -1
	return err
}

// share describes r for a peer. A VMM registration of memory allocated
// without the POSIX file descriptor handle type cannot be exported
// (gccl.ErrInvalidUsage): allocate it with MemAlloc.
func (r *Registration) share() (shareDesc, error) {
	if r == nil {
		return shareDesc{}, gccl.Errorf(gccl.InvalidArgument, "registration", "nil registration")
	}
	e := shareDesc{Kind: r.Kind, Size: r.AllocSize, Offset: r.Offset(), Len: r.Size, FD: -1}
	switch r.Kind {
	case Host:
		e.Region = r.region
	case Legacy:
		e.IPC = r.ipc
	case VMM:
		if !r.shareable {
			return shareDesc{}, gccl.Errorf(gccl.InvalidUsage, "registration",
				"buffer %#x is cuMem memory without the POSIX file descriptor handle type; allocate it with bufreg.MemAlloc", r.Base)
		}
		release, err := r.Acquire()
		if err != nil {
			return shareDesc{}, err
		}
		defer release()
		g, _ := memalloc.AsGPU(r.owner.dev)
		err = g.Do(func() (err error) { e.FD, err = g.Driver().MemExportToShareableHandle(r.mem); return err })
		if err != nil {
			return shareDesc{}, err
		}
	}
	return e, nil
}

// mappedPeer is a peer's registered buffer mapped in this process.
type mappedPeer struct {
	Ptr   uintptr // the peer's registered buffer, addressable by d
	Len   int
	once  sync.Once
	unmap func() error
	err   error
}

// Close unmaps the peer's memory; it is safe on nil and twice.
func (m *mappedPeer) Close() error {
	if m == nil {
		return nil
	}
	m.once.Do(func() { m.err = m.unmap() })
	return m.err
}

// mapShared maps a peer's shareDesc on device d (the communicator's device on
// this rank). It does not take ownership of e.FD.
func mapShared(d device.Device, e shareDesc) (*mappedPeer, error) {
	if d == nil {
		return nil, gccl.Errorf(gccl.InvalidArgument, "device", "nil device")
	}
	if e.Size <= 0 || e.Offset < 0 || e.Len <= 0 || e.Offset+e.Len > e.Size {
		return nil, gccl.Errorf(gccl.InvalidArgument, "export", "buffer of %d bytes at offset %d of a %d-byte allocation", e.Len, e.Offset, e.Size)
	}
	m := &mappedPeer{Len: e.Len}
	var base uintptr
	var err error
	g, isGPU := memalloc.AsGPU(d)
	switch {
	case e.Kind == Host && !isGPU:
		base, m.unmap, err = device.MapHostRegion(e.Region, e.Size)
	case e.Kind == VMM && isGPU:
		err = g.Do(func() (err error) { base, m.unmap, err = memalloc.Import(g, e.FD, e.Size); return err })
	case e.Kind == Legacy && isGPU:
		err = g.Do(func() (err error) {
			base, err = g.Driver().IpcOpenMemHandle(e.IPC, cuda.IpcLazyEnablePeerAccess)
			return err
		})
		m.unmap = func() error { return g.Do(func() error { return g.Driver().IpcCloseMemHandle(base) }) }
	default:
		return nil, gccl.Errorf(gccl.InvalidUsage, "export", "a %v registration cannot be mapped on a %v device; the ranks use different backends", e.Kind, d.Kind())
	}
	if err != nil {
		return nil, err
	}
	m.Ptr = base + uintptr(e.Offset)
	return m, nil
}
