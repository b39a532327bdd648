package peermem

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
)

// Mapping is every rank's offered allocation, usable from the context that
// was current when Open ran.
type Mapping struct {
	// Ptrs[r] is rank r's allocation as seen by this GPU.
	Ptrs []uintptr

	drv      cuda.Driver
	opened   []uintptr     // IPC mappings to close
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
		p, err := m.drv.IpcOpenMemHandle(o.Handle, cuda.IpcLazyEnablePeerAccess)
		if err != nil {
			return 0, err
		}
		m.opened = append(m.opened, p)
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
	for _, p := range m.opened {
		if err := m.drv.IpcCloseMemHandle(p); err != nil && first == nil {
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
