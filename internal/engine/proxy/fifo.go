package proxy

import (
	"sync/atomic"
	"unsafe"

	"github.com/gccl/gccl"
)

// The FIFO layout of docs/gpunet.md: one direction of one connection.
// Every rank must use the same SlotBytes; the words are little-endian
// (gccl runs on amd64 and arm64 only, where atomic stores are).
const (
	// NSlots is the slots of a FIFO: how many sequence numbers the sender
	// may be ahead of the receiver.
	NSlots = 8
	// HeaderBytes is the header before the slots: the counters and sizes.
	HeaderBytes = 4096
	// TailOffset is the uint64 of slots posted: written by the GPU in a
	// sending FIFO, by the proxy in a receiving one.
	TailOffset = 0
	// HeadOffset is the uint64 of slots freed: written by the proxy in a
	// sending FIFO, by the GPU in a receiving one.
	HeadOffset = 64
	// SizesOffset is sizes[NSlots], uint32 each: the bytes of the slot of
	// sequence number s are at SizesOffset + 4*(s%NSlots).
	SizesOffset = 128
	// SlotAlign is what SlotBytes must be a multiple of.
	SlotAlign = 4096
	// MaxSlotBytes bounds SlotBytes (sizes are uint32).
	MaxSlotBytes = 1 << 30
	// DefaultSlotBytes is the slot size gccl uses unless configured.
	DefaultSlotBytes = 512 << 10
	// MemAlign is the alignment NewFIFO requires of the memory's first
	// byte (4096, a page, is what cuMemHostAlloc gives).
	MemAlign = 64
)

// FIFOBytes is the size of a FIFO whose slots have slotBytes each:
// HeaderBytes + NSlots*slotBytes. slotBytes must pass CheckSlotBytes.
func FIFOBytes(slotBytes int) int { return HeaderBytes + NSlots*slotBytes }

// CheckSlotBytes returns a gccl.InvalidArgument error unless slotBytes is
// a positive multiple of SlotAlign of at most MaxSlotBytes.
func CheckSlotBytes(slotBytes int) error {
	if slotBytes <= 0 || slotBytes%SlotAlign != 0 || slotBytes > MaxSlotBytes {
		return gccl.Errorf(gccl.InvalidArgument, "slotBytes", "%d bytes per FIFO slot: use a positive multiple of %d of at most %d (default %d), the same on every rank", slotBytes, SlotAlign, MaxSlotBytes, DefaultSlotBytes)
	}
	return nil
}

// FIFO is a view of one FIFO's host memory (docs/gpunet.md). The caller
// owns the memory: pinned host memory mapped by the GPU in production,
// Go memory that it keeps alive (and pinned: runtime.Pinner) in tests.
// The zero FIFO is no FIFO (IsZero). The counter and size accessors are
// atomic, so goroutines that play the GPU can share a FIFO with the proxy.
type FIFO struct {
	mem       []byte
	slotBytes int
}

// NewFIFO is the FIFO in mem, whose slots have slotBytes each. mem must
// hold exactly FIFOBytes(slotBytes) bytes and start MemAlign-aligned; a
// gccl.InvalidArgument error says what is wrong.
func NewFIFO(mem []byte, slotBytes int) (FIFO, error) {
	if err := CheckSlotBytes(slotBytes); err != nil {
		return FIFO{}, err
	}
	if want := FIFOBytes(slotBytes); len(mem) != want {
		return FIFO{}, gccl.Errorf(gccl.InvalidArgument, "mem", "a FIFO of %d-byte slots takes %d bytes (proxy.FIFOBytes), not %d", slotBytes, want, len(mem))
	}
	if p := uintptr(unsafe.Pointer(&mem[0])); p%MemAlign != 0 {
		return FIFO{}, gccl.Errorf(gccl.InvalidArgument, "mem", "FIFO memory at %#x is not %d-byte aligned: its counters need aligned words; allocate it page-aligned (cuMemHostAlloc)", p, MemAlign)
	}
	return FIFO{mem: mem, slotBytes: slotBytes}, nil
}

// IsZero reports whether f is the zero FIFO.
func (f FIFO) IsZero() bool { return f.mem == nil }

// SlotBytes is the size of each slot.
func (f FIFO) SlotBytes() int { return f.slotBytes }

// Bytes is the FIFO's whole memory, header and slots.
func (f FIFO) Bytes() []byte { return f.mem }

func (f FIFO) word(off int) *uint64 { return (*uint64)(unsafe.Pointer(&f.mem[off])) }

func (f FIFO) size(s uint64) *uint32 {
	return (*uint32)(unsafe.Pointer(&f.mem[SizesOffset+4*int(s%NSlots)]))
}

// Tail loads the tail counter (slots posted).
func (f FIFO) Tail() uint64 { return atomic.LoadUint64(f.word(TailOffset)) }

// StoreTail stores the tail counter.
func (f FIFO) StoreTail(v uint64) { atomic.StoreUint64(f.word(TailOffset), v) }

// Head loads the head counter (slots freed).
func (f FIFO) Head() uint64 { return atomic.LoadUint64(f.word(HeadOffset)) }

// StoreHead stores the head counter.
func (f FIFO) StoreHead(v uint64) { atomic.StoreUint64(f.word(HeadOffset), v) }

// Size loads the byte count of the slot of sequence number s.
func (f FIFO) Size(s uint64) uint32 { return atomic.LoadUint32(f.size(s)) }

// SetSize stores the byte count of the slot of sequence number s.
func (f FIFO) SetSize(s uint64, n uint32) { atomic.StoreUint32(f.size(s), n) }

// SlotOffset is where the slot of sequence number s starts in the FIFO.
func (f FIFO) SlotOffset(s uint64) int { return HeaderBytes + int(s%NSlots)*f.slotBytes }

// Slot is the slot of sequence number s: SlotBytes bytes of the FIFO.
func (f FIFO) Slot(s uint64) []byte {
	off := f.SlotOffset(s)
	return f.mem[off : off+f.slotBytes : off+f.slotBytes]
}
