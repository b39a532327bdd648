package peermem

import (
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
)

// Mapping is every rank's offered allocation, usable from the context that
// was current when Open ran.
type Mapping struct {
	// Ptrs[r] is rank r's allocation as seen by this GPU.
	Ptrs []uintptr

	drv      cuda.Driver
	opened   []ipcKey      // IPC mappings to release
	retained []cuda.Device // peer primary contexts to release
}

// Open maps every offer into the current context (see the package doc for
// how). offers[me] is this rank's own. On failure everything mapped so far is
// unmapped again and the error names the peer.
func Open(drv cuda.Driver, me int, offers []Offer) (*Mapping, error) {
	if me < 0 || me >= len(offers) {
		return nil, gccl.Errorf(gccl.InvalidArgument, "me", "rank %d out of range [0,%d)", me, len(offers))
	}
	if !SameHost(me, offers) {
		return nil, gccl.Errorf(gccl.InvalidUsage, "peermem", "peers on other hosts cannot be mapped; use the host transports")
	}
	m := &Mapping{Ptrs: make([]uintptr, len(offers)), drv: drv}
	for r, o := range offers {
		p, err := m.open(me, offers[me], o)
		if err != nil {
			_ = m.Close()
			return nil, gccl.Errorf(gccl.Code(err), "peer", "mapping rank %d's buffer (GPU %d, pid %d): %w", r, o.Ordinal, o.PID, err)
		}
		m.Ptrs[r] = p
	}
	return m, nil
}

func (m *Mapping) open(me int, mine, o Offer) (uintptr, error) {
	if !o.sameProcess() {
		k := ipcKey{m.drv, mine.Ordinal, o.Handle}
		p, err := openIPC(k)
		if err != nil {
			return 0, err
		}
		m.opened = append(m.opened, k)
		return p, nil
	}
	if o.Ordinal == mine.Ordinal {
		return o.Ptr, nil
	}
	return o.Ptr, m.enablePeer(o.Ordinal)
}

// enablePeer lets the current context access GPU ordinal's primary context.
func (m *Mapping) enablePeer(ordinal int32) error {
	dev, err := m.drv.DeviceGet(int(ordinal))
	if err != nil {
		return err
	}
	ctx, err := m.drv.PrimaryCtxRetain(dev)
	if err != nil {
		return err
	}
	m.retained = append(m.retained, dev)
	return m.drv.CtxEnablePeerAccess(ctx)
}

// Close unmaps the IPC mappings and releases the retained contexts, with the
// same context current as for Open. Safe on nil and twice.
func (m *Mapping) Close() error {
	if m == nil {
		return nil
	}
	var first error
	for _, k := range m.opened {
		if err := closeIPC(k); err != nil && first == nil {
			first = err
		}
	}
	for _, d := range m.retained {
		if err := m.drv.PrimaryCtxRelease(d); err != nil && first == nil {
			first = err
		}
	}
	m.opened, m.retained, m.Ptrs = nil, nil, nil
	return first
}

// ipcKey names one IPC handle opened on one GPU of this process. The driver
// maps a handle once per process and device (a second cuIpcOpenMemHandle
// fails with CUDA_ERROR_ALREADY_MAPPED), so ranks of this process that map
// the same peer (several ranks per process, one GPU) share the mapping,
// counted here like the driver's own process-wide state.
type ipcKey struct {
	drv     cuda.Driver
	ordinal int32
	handle  cuda.IpcMemHandle
}

type ipcMapping struct {
	ptr  uintptr
	refs int
}

var ipcOpen = struct {
	sync.Mutex
	m map[ipcKey]*ipcMapping
}{m: map[ipcKey]*ipcMapping{}}

// openIPC maps k's handle (the GPU's context current), or counts one more
// user of its mapping.
func openIPC(k ipcKey) (uintptr, error) {
	ipcOpen.Lock()
	defer ipcOpen.Unlock()
	if e := ipcOpen.m[k]; e != nil {
		e.refs++
		return e.ptr, nil
	}
	p, err := k.drv.IpcOpenMemHandle(k.handle, cuda.IpcLazyEnablePeerAccess)
	if err != nil {
		return 0, err
	}
	ipcOpen.m[k] = &ipcMapping{ptr: p, refs: 1}
	return p, nil
}

// closeIPC drops one user of k's mapping and unmaps it after the last.
func closeIPC(k ipcKey) error {
	ipcOpen.Lock()
	defer ipcOpen.Unlock()
	e := ipcOpen.m[k]
	if e == nil {
		return nil
	}
	if e.refs--; e.refs > 0 {
		return nil
	}
	delete(ipcOpen.m, k)
	return k.drv.IpcCloseMemHandle(e.ptr)
}
