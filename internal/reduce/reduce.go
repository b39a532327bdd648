package reduce

import (
	"encoding/binary"
	"math"
	"sync"
	"unsafe"

	"github.com/gccl/gccl"
)

// blockElems is how many elements the staged paths (conversions, unaligned
// buffers) handle at a time: large enough to amortise the per-block
// dispatch, small enough to stay in the L1/L2 cache.
const blockElems = 2048

type scratch struct {
	f [2][blockElems]float32
	u [2][blockElems]uint64 // 8-byte aligned staging for native types
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// Into reduces src into dst element by element: dst[i] = op(dst[i], src[i]).
// Avg and PreMulSum operators reduce as Sum; see Scale.
func Into(dst, src []byte, t gccl.DataType, op gccl.RedOp) error {
	return Into3(dst, dst, src, t, op)
}

// Into3 sets dst[i] = op(a[i], b[i]). dst may be a itself (or b), but must
// not partially overlap either.
func Into3(dst, a, b []byte, t gccl.DataType, op gccl.RedOp) error {
	if err := checkArgs(dst, t, op, a, b); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	switch {
	case isLow(t):
		lowInto3(dst, a, b, t, op)
	case aligned(t.Size(), dst, a, b):
		nativeInto3(dst, a, b, t, op)
	default:
		stagedInto3(dst, a, b, t, op)
	}
	return nil
}

func checkArgs(dst []byte, t gccl.DataType, op gccl.RedOp, srcs ...[]byte) error {
	if !t.Valid() {
		return gccl.Errorf(gccl.InvalidArgument, "datatype", "unknown data type %v", t)
	}
	if op < 0 {
		return gccl.Errorf(gccl.InvalidArgument, "op", "unknown reduction operator %v", op)
	}
	if len(dst)%t.Size() != 0 {
		return gccl.Errorf(gccl.InvalidArgument, "dst", "%d bytes is not a whole number of %v elements", len(dst), t)
	}
	for _, s := range srcs {
		if len(s) != len(dst) {
			return gccl.Errorf(gccl.InvalidArgument, "src", "source has %d bytes, destination %d; they must match", len(s), len(dst))
		}
	}
	return nil
}

// isLow reports whether t is reduced by widening to float32.
func isLow(t gccl.DataType) bool {
	switch t {
	case gccl.Float16, gccl.BFloat16, gccl.Float8E4M3, gccl.Float8E5M2:
		return true
	}
	return false
}

// lowInto3 widens blocks of a and b to float32, reduces and rounds back.
func lowInto3(d, a, b []byte, t gccl.DataType, op gccl.RedOp) {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	size, n := t.Size(), len(d)/t.Size()
	for i := 0; i < n; i += blockElems {
		m := min(blockElems, n-i)
		lo, hi := i*size, (i+m)*size
		fa, fb := s.f[0][:m], s.f[1][:m]
		decode(t, fa, a[lo:hi])
		decode(t, fb, b[lo:hi])
		apply3(fa, fa, fb, op)
		encode(t, d[lo:hi], fa)
	}
}

// stagedInto3 copies blocks of unaligned native buffers through aligned
// scratch memory.
func stagedInto3(d, a, b []byte, t gccl.DataType, op gccl.RedOp) {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	sa, sb := asBytes(s.u[0][:]), asBytes(s.u[1][:])
	size, n := t.Size(), len(d)/t.Size()
	for i := 0; i < n; i += blockElems {
		m := min(blockElems, n-i)
		lo, hi := i*size, (i+m)*size
		ba, bb := sa[:hi-lo], sb[:hi-lo]
		copy(ba, a[lo:hi])
		copy(bb, b[lo:hi])
		nativeInto3(ba, ba, bb, t, op)
		copy(d[lo:hi], ba)
	}
}

func asBytes(u []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(u))), 8*len(u))
}

// decode widens len(dst) elements of a 16- or 8-bit float type.
func decode(t gccl.DataType, dst []float32, src []byte) {
	switch t {
	case gccl.Float16:
		tbl := f16Table()
		for i := range dst {
			dst[i] = tbl[binary.NativeEndian.Uint16(src[2*i:])]
		}
	case gccl.BFloat16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.NativeEndian.Uint16(src[2*i:])) << 16)
		}
	case gccl.Float8E4M3, gccl.Float8E5M2:
		tbl := e4m3Table()
		if t == gccl.Float8E5M2 {
			tbl = e5m2Table()
		}
		src = src[:len(dst)]
		for i := range dst {
			dst[i] = tbl[src[i]]
		}
	}
}

// encode rounds len(src) float32 values to a 16- or 8-bit float type.
func encode(t gccl.DataType, dst []byte, src []float32) {
	switch t {
	case gccl.Float16, gccl.BFloat16:
		f := f16Format
		if t == gccl.BFloat16 {
			f = bf16Format
		}
		for i, v := range src {
			binary.NativeEndian.PutUint16(dst[2*i:], uint16(f.fromFloat32(v)))
		}
	case gccl.Float8E4M3, gccl.Float8E5M2:
		f := e4m3Format
		if t == gccl.Float8E5M2 {
			f = e5m2Format
		}
		dst = dst[:len(src)]
		for i, v := range src {
			dst[i] = uint8(f.fromFloat32(v))
		}
	}
}
