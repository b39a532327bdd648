package cuda

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/gccl/gccl"
)

// MaxKernelArgs is the most arguments one launch may carry.
const MaxKernelArgs = 64

// Args packs kernel arguments for LaunchKernel, in the kernel's parameter
// order. Each value is stored little-endian at its natural alignment in one
// byte buffer; the launch builds the kernelParams array from it, and the
// driver copies the values at launch, so Args may be reused afterwards.
//
//	var a cuda.Args
//	a.Ptr(dst).Ptr(src).U64(uint64(n)).Struct(peers, 8)
type Args struct {
	buf  []byte
	offs []uint32
	err  error
}

func (a *Args) put(size, align int) []byte {
	if len(a.offs) >= MaxKernelArgs {
		if a.err == nil {
			a.err = gccl.Errorf(gccl.InvalidArgument, "args", "more than %d kernel arguments", MaxKernelArgs)
		}
		return make([]byte, size)
	}
	start := len(a.buf)
	off := (start + align - 1) &^ (align - 1)
	end := off + size
	if end > cap(a.buf) {
		a.buf = slices.Grow(a.buf, max(end, 2*cap(a.buf), 64)-start)
	}
	a.buf = a.buf[:end]
	clear(a.buf[start:end]) // the padding and the new value (a reused buffer holds old bytes)
	if a.offs == nil {
		a.offs = make([]uint32, 0, 8)
	}
	a.offs = append(a.offs, uint32(off))
	return a.buf[off:end]
}

// Ptr appends a device pointer.
func (a *Args) Ptr(p uintptr) *Args { return a.U64(uint64(p)) }

// U32 appends a 32-bit unsigned integer.
func (a *Args) U32(v uint32) *Args {
	binary.LittleEndian.PutUint32(a.put(4, 4), v)
	return a
}

// I32 appends a 32-bit signed integer.
func (a *Args) I32(v int32) *Args { return a.U32(uint32(v)) }

// U64 appends a 64-bit unsigned integer.
func (a *Args) U64(v uint64) *Args {
	binary.LittleEndian.PutUint64(a.put(8, 8), v)
	return a
}

// I64 appends a 64-bit signed integer.
func (a *Args) I64(v int64) *Args { return a.U64(uint64(v)) }

// F32 appends a float.
func (a *Args) F32(v float32) *Args { return a.U32(math.Float32bits(v)) }

// F64 appends a double.
func (a *Args) F64(v float64) *Args { return a.U64(math.Float64bits(v)) }

// Struct appends a struct passed by value, given as its bytes laid out as
// the kernel's C++ struct, with the struct's alignment (1, 2, 4, 8 or 16).
func (a *Args) Struct(b []byte, align int) *Args {
	copy(a.Slot(len(b), align), b) // a bad alignment is recorded and appends nothing
	return a
}

// Slot appends a struct argument of size bytes with the given alignment
// and returns its bytes, zeroed, for the caller to fill in place (Struct
// without an intermediate copy). The slice is valid until the next append
// or Reset.
func (a *Args) Slot(size, align int) []byte {
	if align <= 0 || align > 16 || align&(align-1) != 0 {
		if a.err == nil {
			a.err = gccl.Errorf(gccl.InvalidArgument, "align", "struct alignment %d is not a power of two up to 16", align)
		}
		return make([]byte, size)
	}
	return a.put(size, align)
}

// Len is the number of arguments.
func (a *Args) Len() int { return len(a.offs) }

// Arg returns the bytes of argument i (for fakes that decode arguments).
func (a *Args) Arg(i int) []byte {
	end := len(a.buf)
	if i+1 < len(a.offs) {
		end = int(a.offs[i+1])
	}
	return a.buf[a.offs[i]:end]
}

// Uint64 decodes argument i as a 64-bit value (a pointer or a 64-bit integer).
func (a *Args) Uint64(i int) uint64 { return binary.LittleEndian.Uint64(a.Arg(i)) }

// Uint32 decodes argument i as a 32-bit value.
func (a *Args) Uint32(i int) uint32 { return binary.LittleEndian.Uint32(a.Arg(i)) }

// Err is the first packing error (too many arguments, bad alignment).
func (a *Args) Err() error { return a.err }

// Reset empties a for reuse.
func (a *Args) Reset() {
	a.buf, a.offs, a.err = a.buf[:0], a.offs[:0], nil
}

// noArgs stand in for an empty buffer and offset list in packed: C gets a
// valid address, and the launch passes no parameters.
var (
	noArgBuf  = []byte{0}
	noArgOffs = []uint32{0}
)

// packed returns the buffer (never empty, so its address can be taken) and offsets.
func (a *Args) packed() ([]byte, []uint32) {
	if a == nil || len(a.buf) == 0 {
		return noArgBuf, noArgOffs
	}
	return a.buf, a.offs
}

// Clone returns a copy of a that later changes to a do not affect (fakes
// keep it until the launch runs).
func (a *Args) Clone() *Args {
	if a == nil {
		return &Args{}
	}
	return &Args{buf: append([]byte(nil), a.buf...), offs: append([]uint32(nil), a.offs...), err: a.err}
}

func errCount(n int) error {
	return gccl.Errorf(gccl.InvalidArgument, "count", "reference count %d; pass a count > 0", n)
}

// checkLaunch validates a launch shape before the driver sees it.
func checkLaunch(f Function, grid, block Dim3, sharedMem int, args *Args) error {
	if f == 0 {
		return gccl.Errorf(gccl.InvalidArgument, "f", "nil kernel function; get it with ModuleGetFunction")
	}
	for _, v := range []uint32{grid.X, grid.Y, grid.Z, block.X, block.Y, block.Z} {
		if v == 0 {
			return gccl.Errorf(gccl.InvalidArgument, "grid", "launch shape %v x %v has a zero dimension", grid, block)
		}
	}
	if sharedMem < 0 {
		return gccl.Errorf(gccl.InvalidArgument, "sharedMem", "negative dynamic shared memory %d", sharedMem)
	}
	if args != nil && args.Err() != nil {
		return args.Err()
	}
	return nil
}
