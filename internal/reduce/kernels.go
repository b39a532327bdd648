package reduce

import (
	"unsafe"

	"github.com/gccl/gccl"
)

// native is every Go type a gccl.DataType is stored as without conversion.
type native interface {
	~int8 | ~uint8 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

type integer interface {
	~int8 | ~uint8 | ~int32 | ~uint32 | ~int64 | ~uint64
}

// The loops below take d, a and b of equal length; d may alias a or b.
// They are unrolled by four, which lets the compiler drop bounds checks and
// keep several independent operations in flight.

func sum3[T native](d, a, b []T) {
	n := len(d)
	a, b = a[:n], b[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		d0, d1, d2, d3 := a[i]+b[i], a[i+1]+b[i+1], a[i+2]+b[i+2], a[i+3]+b[i+3]
		d[i], d[i+1], d[i+2], d[i+3] = d0, d1, d2, d3
	}
	for ; i < n; i++ {
		d[i] = a[i] + b[i]
	}
}

func prod3[T native](d, a, b []T) {
	n := len(d)
	a, b = a[:n], b[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		d0, d1, d2, d3 := a[i]*b[i], a[i+1]*b[i+1], a[i+2]*b[i+2], a[i+3]*b[i+3]
		d[i], d[i+1], d[i+2], d[i+3] = d0, d1, d2, d3
	}
	for ; i < n; i++ {
		d[i] = a[i] * b[i]
	}
}

// maxOf is fmax: a NaN x gives y. For integers x != x is false.
func maxOf[T native](x, y T) T {
	if y > x || x != x {
		return y
	}
	return x
}

func minOf[T native](x, y T) T {
	if y < x || x != x {
		return y
	}
	return x
}

func max3[T native](d, a, b []T) {
	n := len(d)
	a, b = a[:n], b[:n]
	for i := range d {
		d[i] = maxOf(a[i], b[i])
	}
}

func min3[T native](d, a, b []T) {
	n := len(d)
	a, b = a[:n], b[:n]
	for i := range d {
		d[i] = minOf(a[i], b[i])
	}
}

// apply3 runs op over typed slices; Avg and PreMulSum reduce as Sum.
func apply3[T native](d, a, b []T, op gccl.RedOp) {
	switch op {
	case gccl.Prod:
		prod3(d, a, b)
	case gccl.Max:
		max3(d, a, b)
	case gccl.Min:
		min3(d, a, b)
	default:
		sum3(d, a, b)
	}
}

// view reinterprets b (aligned for T) as a []T.
func view[T native](b []byte) []T {
	if len(b) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(z)))
}

// aligned reports whether every buffer starts on a multiple of size.
func aligned(size int, bufs ...[]byte) bool {
	for _, b := range bufs {
		if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(size) != 0 {
			return false
		}
	}
	return true
}

// nativeInto3 reduces aligned buffers of a native type.
func nativeInto3(d, a, b []byte, t gccl.DataType, op gccl.RedOp) {
	switch t {
	case gccl.Int8:
		apply3(view[int8](d), view[int8](a), view[int8](b), op)
	case gccl.Uint8:
		apply3(view[uint8](d), view[uint8](a), view[uint8](b), op)
	case gccl.Int32:
		apply3(view[int32](d), view[int32](a), view[int32](b), op)
	case gccl.Uint32:
		apply3(view[uint32](d), view[uint32](a), view[uint32](b), op)
	case gccl.Int64:
		apply3(view[int64](d), view[int64](a), view[int64](b), op)
	case gccl.Uint64:
		apply3(view[uint64](d), view[uint64](a), view[uint64](b), op)
	case gccl.Float32:
		apply3(view[float32](d), view[float32](a), view[float32](b), op)
	case gccl.Float64:
		apply3(view[float64](d), view[float64](a), view[float64](b), op)
	}
}
