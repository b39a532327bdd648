package host

import (
	"context"
	"encoding/binary"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/host/futex"
	"github.com/gccl/gccl/internal/engine/internal/errs"
	"github.com/gccl/gccl/transport"
)

// Layout of a rank's control block, host shared memory that the rank
// writes and its peers map and read: a header page, then two copy-in areas
// for small operations. Words written at different times sit on different
// cache lines. Descriptor sets and copy-in areas alternate by barrier
// parity, so a rank that runs ahead never overwrites what a slower peer has
// still to read: it writes parity p again only after the next barrier,
// which every peer reaches after its reads.
const (
	ctlHeader  = 4096
	areaBytes  = 64 << 10 // per copy-in area: the largest input copied in
	ctlBytes   = ctlHeader + 2*areaBytes
	offSeq     = 0   // uint32: barriers this rank has arrived at
	offWaiters = 64  // uint32: peers sleeping on offSeq
	offFailed  = 128 // uint32: set once this rank failed an operation
	offPid     = 192 // uint32: this rank's process id
	offDescs   = 256 // 2 parities × 2 buffers × descBytes
	descBytes  = 256
	descName   = 48   // the name's bytes start here within a descriptor
	offOps     = 1280 // 2 parities × opBytes: the operation's descriptor (desc.go)
	opBytes    = 64
)

// bufDesc describes one buffer of one rank: where it lies in the rank's
// shared host memory, so that a peer can map it.
type bufDesc struct {
	ok   bool    // the buffer lies wholly in memory from a host device's Alloc
	pid  uint32  // owner process
	base uintptr // region base in the owner's address space
	size int     // region size
	off  int     // buffer offset in the region
	ino  uint64  // region file's inode: tells a reused name from the same region
	name string  // what MapHostRegion takes
}

// describe returns the descriptor of the n bytes at p (ok false when a peer
// could not map them).
func describe(p uintptr, n int) bufDesc {
	reg, found := device.HostRegionOf(p)
	if !found || reg.Offset+n > reg.Size || len(reg.Name) > descBytes-descName {
		return bufDesc{}
	}
	var st syscall.Stat_t
	if syscall.Stat(reg.Name, &st) != nil {
		return bufDesc{}
	}
	return bufDesc{ok: true, pid: uint32(os.Getpid()), base: reg.Base, size: reg.Size, off: reg.Offset, ino: st.Ino, name: reg.Name}
}

// ctlBlock is a mapped control block.
type ctlBlock struct{ mem []byte }

func (c ctlBlock) u32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&c.mem[off])) }

func (c ctlBlock) seq() futex.Counter {
	return futex.Counter{Seq: c.u32(offSeq), Waiters: c.u32(offWaiters)}
}

func (c ctlBlock) failed() bool { return atomic.LoadUint32(c.u32(offFailed)) != 0 }

func (c ctlBlock) pid() uint32 { return atomic.LoadUint32(c.u32(offPid)) }

// area is the copy-in area of the barrier parity.
func (c ctlBlock) area(parity uint32) []byte {
	off := ctlHeader + int(parity&1)*areaBytes
	return c.mem[off : off+areaBytes]
}

func (c ctlBlock) desc(parity uint32, i int) []byte {
	off := offDescs + (int(parity&1)*2+i)*descBytes
	return c.mem[off : off+descBytes]
}

// putOp publishes the descriptor of the operation run at the barrier parity.
func (c ctlBlock) putOp(parity uint32, d opDesc) {
	off := offOps + int(parity&1)*opBytes
	w := d.wire()
	copy(c.mem[off:off+len(w)], w[:])
}

// op reads a peer's operation descriptor for the barrier parity.
func (c ctlBlock) op(parity uint32) opDesc {
	off := offOps + int(parity&1)*opBytes
	return descOf(transport.Desc(c.mem[off : off+transport.DescSize]))
}

// putDesc writes descriptor i (0 send, 1 recv) for the barrier parity.
func (c ctlBlock) putDesc(parity uint32, i int, d bufDesc) {
	b := c.desc(parity, i)
	le := binary.LittleEndian
	le.PutUint32(b[0:], 0)
	if d.ok {
		le.PutUint32(b[0:], 1)
	}
	le.PutUint32(b[4:], d.pid)
	le.PutUint64(b[8:], uint64(d.base))
	le.PutUint64(b[16:], uint64(d.size))
	le.PutUint64(b[24:], uint64(d.off))
	le.PutUint64(b[32:], d.ino)
	le.PutUint32(b[40:], uint32(copy(b[descName:], d.name)))
}

// getDesc reads a peer's descriptor, bounding every field it trusts.
func (c ctlBlock) getDesc(parity uint32, i int) bufDesc {
	b := c.desc(parity, i)
	le := binary.LittleEndian
	d := bufDesc{ok: le.Uint32(b[0:]) == 1, pid: le.Uint32(b[4:]), base: uintptr(le.Uint64(b[8:])),
		size: int(le.Uint64(b[16:])), off: int(le.Uint64(b[24:])), ino: le.Uint64(b[32:])}
	n := int(le.Uint32(b[40:]))
	if !d.ok || n > descBytes-descName || d.size <= 0 || d.off < 0 || d.off > d.size {
		return bufDesc{}
	}
	d.name = string(b[descName : descName+n])
	return d
}

// zeroCopy is a host backend's state for the zero-copy algorithm: its own
// control block, its peers' (mapped), and caches of mapped peer buffers.
type zeroCopy struct {
	mu      sync.Mutex // held by the running operation; close waits for it
	closed  bool
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
}

// setupZeroCopy allocates this rank's control block and maps every peer's.
// It is collective: two all-gathers over the bootstrap, so that every rank
// reaches the same answer. It returns nil (and no error) where zero-copy is
// not possible: ranks on several hosts, SHM disabled, or mapping failed.
func (b *Backend) setupZeroCopy(ctx context.Context, boot engine.Bootstrap) (*zeroCopy, error) {
	z := &zeroCopy{ctl: make([]ctlBlock, b.nranks), unmaps: make([]func() error, b.nranks), maps: make([]peerMaps, b.nranks)}
	mine := []byte{0} // never empty: not every bootstrap carries empty contributions; 1+name when usable
	if b.allLocal() {
		if err := z.alloc(); err == nil {
			mine = append([]byte{1}, z.ctlName()...)
		} else {
			b.log.Debug("gccl: zero-copy disabled: no control block", "err", err)
		}
	}
	names, err := boot.AllGather(ctx, mine)
	if err == nil && len(names) != b.nranks {
		err = gccl.Errorf(gccl.InternalError, "bootstrap", "all-gather returned %d entries, want %d", len(names), b.nranks)
	}
	if err != nil {
		return nil, errs.First(gccl.Errorf(gccl.Code(err), "bootstrap", "exchanging zero-copy control blocks: %w", err), z.close(false))
	}
	ok := []byte{0}
	if mine[0] == 1 && z.mapPeers(b.rank, names) == nil {
		ok[0] = 1
	}
	oks, err := boot.AllGather(ctx, ok)
	if err != nil {
		return nil, errs.First(gccl.Errorf(gccl.Code(err), "bootstrap", "agreeing on zero-copy: %w", err), z.close(false))
	}
	for _, b := range oks {
		if len(b) != 1 || b[0] != 1 {
			return nil, z.close(false)
		}
	}
	z.tmp = make([]byte, algo.ZeroCopyBlockBytes)
	return z, nil
}

// allLocal reports whether every peer is reached through shared memory.
func (b *Backend) allLocal() bool {
	for r, l := range b.link {
		if r != b.rank && l != algo.SHMLink {
			return false
		}
	}
	return true
}

func (z *zeroCopy) alloc() error {
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

func (z *zeroCopy) ctlName() string {
	reg, _ := device.HostRegionOf(z.ctlPtr)
	return reg.Name
}

// mapPeers maps every rank's control block; its own is used in place.
func (z *zeroCopy) mapPeers(rank int, names [][]byte) error {
	for r, name := range names {
		if len(name) < 2 || name[0] != 1 {
			return gccl.Errorf(gccl.RemoteError, "peer", "rank %d has no zero-copy control block", r)
		}
		name = name[1:]
		if r == rank {
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

// close waits for a running operation (Abort has cancelled its context, so
// it ends within a futex nap), then unmaps and frees everything. With abort
// it first marks this rank failed, so peers waiting at a barrier for it
// fail with gccl.ErrRemote at once. Safe on nil and twice.
func (z *zeroCopy) close(abort bool) error {
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
