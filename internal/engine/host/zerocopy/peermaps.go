package zerocopy

import (
	"os"
	"syscall"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/engine/internal/errs"
)

// maxMapsPerPeer bounds the regions of one peer kept mapped. A region the
// peer has freed stays allocated while it is mapped here, so the cache is
// small; a name that comes back with a new inode replaces its old mapping.
const maxMapsPerPeer = 16

// peerMaps caches one peer's mapped regions, least recently used first out.
type peerMaps struct {
	entries []mapEntry
	tick    uint64
	// mapSelf makes a same-process peer's regions mapped like a separate
	// process's (tests use it to exercise the mapping path).
	mapSelf bool
}

type mapEntry struct {
	name  string
	ino   uint64
	size  int
	base  uintptr
	used  uint64
	unmap func() error
}

// resolve returns the address, in this process, of the peer buffer d
// describes, mapping its region on first use.
func (m *peerMaps) resolve(d bufDesc) (uintptr, error) {
	if d.pid == uint32(os.Getpid()) && !m.mapSelf {
		return d.base + uintptr(d.off), nil
	}
	m.tick++
	for i := range m.entries {
		en := &m.entries[i]
		if en.name != d.name {
			continue
		}
		if en.ino == d.ino && en.size >= d.size {
			en.used = m.tick
			return en.base + uintptr(d.off), nil
		}
		if err := m.drop(i); err != nil {
			return 0, err
		}
		break
	}
	if len(m.entries) >= maxMapsPerPeer {
		if err := m.drop(m.oldest()); err != nil {
			return 0, err
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(d.name, &st); err != nil || st.Ino != d.ino {
		return 0, gccl.Errorf(gccl.RemoteError, "peer buffer", "the peer's region %s is gone or was replaced (was it freed during the operation?)", d.name)
	}
	base, unmap, err := device.MapHostRegion(d.name, d.size)
	if err != nil {
		return 0, err
	}
	m.entries = append(m.entries, mapEntry{name: d.name, ino: d.ino, size: d.size, base: base, used: m.tick, unmap: unmap})
	return base + uintptr(d.off), nil
}

func (m *peerMaps) oldest() int {
	o := 0
	for i, en := range m.entries {
		if en.used < m.entries[o].used {
			o = i
		}
	}
	return o
}

func (m *peerMaps) drop(i int) error {
	err := m.entries[i].unmap()
	m.entries = append(m.entries[:i], m.entries[i+1:]...)
	if err != nil {
		return gccl.Errorf(gccl.SystemError, "peer buffer", "unmapping a peer's region: %w", err)
	}
	return nil
}

// clear unmaps every cached region.
func (m *peerMaps) clear() error {
	var err error
	for len(m.entries) > 0 {
		err = errs.First(err, m.drop(len(m.entries)-1))
	}
	return err
}
