package zerocopy

import (
	"context"
	"os"
	"sync"
	"sync/atomic"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/internal/errs"
)

// MaxRanks is the most ranks a communicator may have for the zero-copy
// path. Each rank maps every peer's control block and its barriers read
// every peer's counter: a process holding all n ranks maps n² blocks (at
// 256 ranks, the whole default vm.max_map_count of 65530), and a barrier
// costs n reads per rank. Larger communicators use the transports.
const MaxRanks = 64

// Path is one rank's zero-copy path to the other ranks of its host: its
// own control block, its peers' (mapped), and caches of mapped peer
// buffers. It runs one operation at a time, under the engine's issue order.
type Path struct {
	mu      sync.Mutex // held by the running operation; Close waits for it
	closed  bool
	rank    int
	host    device.Device // allocates the control block
	ctlPtr  uintptr
	ctl     []ctlBlock // per rank; ctl[rank] is this rank's own
	own     ctlBlock   // this rank's, once mapped
	unmaps  []func() error
	maps    []peerMaps // per rank
	seq     uint32     // barriers passed
	runs    uint64     // operations run zero-copy (copy-in ones included)
	copyIns uint64     // operations run through the copy-in areas
	tmp     []byte     // accumulator of one block
	op      op         // the running operation's (newOp), reused under mu
}

// Open allocates this rank's control block and maps every peer's. It is
// collective: two all-gathers over s.Boot, so that every rank reaches the
// same answer. local says whether this rank reaches every peer through
// shared memory. It returns nil (and no error) where zero-copy is not
// possible: ranks on several hosts, SHM disabled, more than MaxRanks ranks,
// or mapping failed.
func Open(ctx context.Context, s engine.Setup, local bool) (*Path, error) {
	if s.NRanks > MaxRanks {
		return nil, nil // every rank knows NRanks: no agreement needed
	}
	z := &Path{rank: s.Rank, ctl: make([]ctlBlock, s.NRanks), unmaps: make([]func() error, s.NRanks), maps: make([]peerMaps, s.NRanks)}
	mine := []byte{0} // never empty: not every bootstrap carries empty contributions; 1+name when usable
	if local {
		if err := z.alloc(); err == nil {
			mine = append([]byte{1}, z.ctlName()...)
		} else {
			s.Log.Debug("gccl: zero-copy disabled: no control block", "err", err)
		}
	}
	names, err := s.Boot.AllGather(ctx, mine)
	if err == nil && len(names) != s.NRanks {
		err = gccl.Errorf(gccl.InternalError, "bootstrap", "all-gather returned %d entries, want %d", len(names), s.NRanks)
	}
	if err != nil {
		return nil, errs.First(gccl.Errorf(gccl.Code(err), "bootstrap", "exchanging zero-copy control blocks: %w", err), z.Close(false))
	}
	ok := []byte{0}
	if mine[0] == 1 && z.mapPeers(names) == nil {
		ok[0] = 1
	}
	oks, err := s.Boot.AllGather(ctx, ok)
	if err != nil {
		return nil, errs.First(gccl.Errorf(gccl.Code(err), "bootstrap", "agreeing on zero-copy: %w", err), z.Close(false))
	}
	for _, b := range oks {
		if len(b) != 1 || b[0] != 1 {
			return nil, z.Close(false)
		}
	}
	z.tmp = make([]byte, algo.ZeroCopyBlockBytes)
	return z, nil
}

func (z *Path) alloc() error {
	host, err := device.NewHost(0, 0)
	if err != nil {
		return err
	}
	p, err := host.Alloc(ctlBytes)
	if err != nil {
		return err
	}
	z.host, z.ctlPtr = host, p
	return nil
}

func (z *Path) ctlName() string {
	reg, _ := device.HostRegionOf(z.ctlPtr)
	return reg.Name
}

// mapPeers maps every rank's control block; its own is used in place.
func (z *Path) mapPeers(names [][]byte) error {
	for r, name := range names {
		if len(name) < 2 || name[0] != 1 {
			return gccl.Errorf(gccl.RemoteError, "peer", "rank %d has no zero-copy control block", r)
		}
		name = name[1:]
		if r == z.rank {
			z.own = ctlBlock{device.HostBytes(z.ctlPtr, ctlBytes)}
			z.ctl[r] = z.own
			atomic.StoreUint32(z.own.u32(offPid), uint32(os.Getpid()))
			continue
		}
		p, unmap, err := device.MapHostRegion(string(name), ctlBytes)
		if err != nil {
			return err
		}
		z.ctl[r], z.unmaps[r] = ctlBlock{device.HostBytes(p, ctlBytes)}, unmap
	}
	return nil
}

// Runs reports how many operations this rank ran zero-copy, and how many
// of them through the copy-in areas.
func (z *Path) Runs() (ops, copyIns uint64) {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.runs, z.copyIns
}

// Close waits for a running operation (Abort has cancelled its context, so
// it ends within a futex nap), then unmaps and frees everything. With abort
// it first marks this rank failed, so peers waiting at a barrier for it
// fail with gccl.ErrRemote at once. Safe on nil and twice.
func (z *Path) Close(abort bool) error {
	if z == nil {
		return nil
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.closed {
		return nil
	}
	z.closed = true
	if abort && z.own.mem != nil {
		atomic.StoreUint32(z.own.u32(offFailed), 1)
	}
	var err error
	for i := range z.maps {
		err = errs.First(err, z.maps[i].clear())
	}
	for _, u := range z.unmaps {
		if u != nil {
			err = errs.First(err, u())
		}
	}
	if z.ctlPtr != 0 {
		err = errs.First(err, z.host.Free(z.ctlPtr))
	}
	return err
}
