package shm

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/futex"
)

// Layout of the header page. Counters and flags written by different sides
// live on different cache lines.
const (
	ringMagic   = 0x31686d7331636367 // "gcc1smh1" little-endian
	ringVersion = 3

	offMagic        = 0   // uint64, stored last by the creator
	offVersion      = 8   // uint32
	offSlotSize     = 12  // uint32
	offSlots        = 16  // uint32
	offSenderPid    = 20  // uint32
	offReceiverPid  = 64  // uint32, set by the consumer when it maps the ring
	offHead         = 128 // uint64, then uint32 headSeq: its low half, the producer's futex counter
	offHeadSeq      = 136
	offTail         = 192 // uint64, then uint32 tailSeq: the consumer's futex counter
	offTailSeq      = 200
	offSenderClosed = 256  // uint32
	offRecvClosed   = 320  // uint32
	offSenderFailed = 384  // failure record of the producer (failRecord)
	offRecvFailed   = 1536 // failure record of the consumer
	failBytes       = 1024 // a failure record: uint32 code (0: none), uint32 length, message
	offHeadWaiters  = 2560 // uint32: consumers sleeping on headSeq
	offTailWaiters  = 2624 // uint32: producers sleeping on tailSeq

	headerSize = 4096
	slotHeader = 64 // per slot: the slot's header (slotHdr), padded to a cache line
	lineSize   = 64

	// Bounds on the geometry a peer's header may claim.
	MaxSlotSize = 64 << 20
	MaxSlots    = 1024
)

// Defaults for Options.
const (
	DefaultSlotSize = 256 << 10
	DefaultSlots    = 8
)

// ring is one mapped ring file.
type ring struct {
	mem      []byte
	slotSize int
	nslots   int
}

func ringBytes(slotSize, nslots int) int { return headerSize + nslots*(slotHeader+slotSize) }

func (r *ring) u64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[off])) }
func (r *ring) u32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&r.mem[off])) }

// headSeq and tailSeq mirror the low 32 bits of head and tail, stored after
// them, as counters a waiting side sleeps on (package futex): the consumer
// until head passes its tail, the producer until tail frees a slot.
func (r *ring) headSeq() futex.Counter {
	return futex.Counter{Seq: r.u32(offHeadSeq), Waiters: r.u32(offHeadWaiters)}
}

func (r *ring) tailSeq() futex.Counter {
	return futex.Counter{Seq: r.u32(offTailSeq), Waiters: r.u32(offTailWaiters)}
}

// Layout of a slot's header: the bytes the slot holds, then, in the first
// slot of a message, the message's length and descriptor.
const (
	slotLen   = 0  // uint32: bytes in this slot
	slotFlags = 4  // uint32: slotFirst on the first slot of a message
	slotMsg   = 8  // uint64: the message's length (first slot)
	slotDesc  = 16 // [DescSize]byte: the message's descriptor (first slot)
	slotFirst = 1
)

// slot returns the header and the data area of slot i.
func (r *ring) slot(i int) (hdr, data []byte) {
	off := headerSize + i*(slotHeader+r.slotSize)
	return r.mem[off : off+slotHeader], r.mem[off+slotHeader : off+slotHeader+r.slotSize]
}

// slotLenWord is the byte-count word of a slot header, published last.
func slotLenWord(hdr []byte) *uint32 { return (*uint32)(unsafe.Pointer(&hdr[slotLen])) }

// setFailure publishes a failure record at off: the message first, then
// the code (never 0), atomically, so a reader that sees the code sees the
// message. The first record wins.
func (r *ring) setFailure(off int, code gccl.Result, msg string) {
	if atomic.LoadUint32(r.u32(off)) != 0 {
		return
	}
	n := copy(r.mem[off+8:off+failBytes], msg)
	atomic.StoreUint32(r.u32(off+4), uint32(n))
	if code == 0 {
		code = gccl.RemoteError
	}
	atomic.StoreUint32(r.u32(off), uint32(code))
}

// failure returns the failure record at off as an error, nil if none.
func (r *ring) failure(off int, what string) error {
	code := atomic.LoadUint32(r.u32(off))
	if code == 0 {
		return nil
	}
	n := min(int(atomic.LoadUint32(r.u32(off+4))), failBytes-8)
	return gccl.Errorf(gccl.Result(code), what, "%s", r.mem[off+8:off+8+n])
}

func (r *ring) unmap() {
	if r.mem != nil {
		_ = syscall.Munmap(r.mem)
		r.mem = nil
	}
}

// mapFile maps size bytes of f shared, read-write.
func mapFile(f *os.File, size int) ([]byte, error) {
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, gccl.Errorf(gccl.SystemError, f.Name(), "mapping the shared-memory ring: %w", err)
	}
	return mem, nil
}

// createRing makes the ring file at path: built under a temporary name,
// initialised, then linked into place so an opener never sees it half-made.
func createRing(path string, slotSize, nslots int) (*ring, error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, gccl.Errorf(gccl.InvalidUsage, path, "shared-memory ring already exists; connect each peer and channel once")
		}
		return nil, gccl.Errorf(gccl.SystemError, path, "creating the shared-memory ring (is /dev/shm writable and large enough?): %w", err)
	}
	defer f.Close()
	size := ringBytes(slotSize, nslots)
	if err := f.Truncate(int64(size)); err != nil {
		_ = os.Remove(tmp)
		return nil, gccl.Errorf(gccl.SystemError, path, "sizing the shared-memory ring to %d bytes (is /dev/shm full?): %w", size, err)
	}
	mem, err := mapFile(f, size)
	if err != nil {
		_ = os.Remove(tmp)
		return nil, err
	}
	r := &ring{mem: mem, slotSize: slotSize, nslots: nslots}
	*r.u32(offVersion) = ringVersion
	*r.u32(offSlotSize) = uint32(slotSize)
	*r.u32(offSlots) = uint32(nslots)
	*r.u32(offSenderPid) = uint32(os.Getpid())
	atomic.StoreUint64(r.u64(offMagic), ringMagic)
	// link (unlike rename) fails rather than replace a ring already there.
	err = os.Link(tmp, path)
	_ = os.Remove(tmp)
	if err != nil {
		r.unmap()
		if errors.Is(err, os.ErrExist) {
			return nil, gccl.Errorf(gccl.InvalidUsage, path, "shared-memory ring already exists; connect each peer and channel once")
		}
		return nil, gccl.Errorf(gccl.SystemError, path, "publishing the shared-memory ring: %w", err)
	}
	return r, nil
}

// openRing maps an existing ring file and validates its header. It returns
// os.ErrNotExist (unwrapped) when the file is not there yet.
func openRing(path string) (*ring, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, os.ErrNotExist
		}
		return nil, gccl.Errorf(gccl.SystemError, path, "opening the peer's shared-memory ring: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, gccl.Errorf(gccl.SystemError, path, "stat of the peer's shared-memory ring: %w", err)
	}
	if st.Size() < headerSize || st.Size() > int64(ringBytes(MaxSlotSize, MaxSlots)) {
		return nil, gccl.Errorf(gccl.RemoteError, path, "peer's shared-memory ring has a bad size %d", st.Size())
	}
	mem, err := mapFile(f, int(st.Size()))
	if err != nil {
		return nil, err
	}
	r := &ring{mem: mem}
	if err := r.validate(); err != nil {
		r.unmap()
		return nil, gccl.Errorf(gccl.RemoteError, path, "peer's shared-memory ring is not valid: %w", err)
	}
	return r, nil
}

// validate checks the header against the mapping's size and fills the geometry.
func (r *ring) validate() error {
	if m := atomic.LoadUint64(r.u64(offMagic)); m != ringMagic {
		return fmt.Errorf("bad magic %#x", m)
	}
	if v := *r.u32(offVersion); v != ringVersion {
		return fmt.Errorf("version %d, want %d", v, ringVersion)
	}
	ss, ns := int(*r.u32(offSlotSize)), int(*r.u32(offSlots))
	if ss <= 0 || ss > MaxSlotSize || ss%lineSize != 0 || ns <= 0 || ns > MaxSlots {
		return fmt.Errorf("bad geometry: %d slots of %d bytes", ns, ss)
	}
	if want := ringBytes(ss, ns); want != len(r.mem) {
		return fmt.Errorf("file is %d bytes, geometry needs %d", len(r.mem), want)
	}
	r.slotSize, r.nslots = ss, ns
	return nil
}

// pidAlive reports whether the process pid (0 = unknown) may still run.
func pidAlive(pid uint32) bool {
	if pid == 0 || int(pid) == os.Getpid() {
		return true
	}
	err := syscall.Kill(int(pid), 0)
	return !errors.Is(err, syscall.ESRCH)
}
