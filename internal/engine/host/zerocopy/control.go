package zerocopy

import (
	"encoding/binary"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/engine/host/opdesc"
	"github.com/gccl/gccl/internal/futex"
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
	offOps     = 1280 // 2 parities × opBytes: the operation's descriptor (package opdesc)
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
func (c ctlBlock) putOp(parity uint32, d opdesc.Desc) {
	off := offOps + int(parity&1)*opBytes
	w := d.Wire()
	copy(c.mem[off:off+len(w)], w[:])
}

// op reads a peer's operation descriptor for the barrier parity.
func (c ctlBlock) op(parity uint32) opdesc.Desc {
	off := offOps + int(parity&1)*opBytes
	return opdesc.Of(transport.Desc(c.mem[off : off+transport.DescSize]))
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
