package reduce

import (
	"math"

	"github.com/gccl/gccl"
)

// Scale computes buf[i] = buf[i] * mul / div in place; Avg passes mul = 1,
// div = the number of ranks (MulScalar applies a PreMulSum factor, exactly
// in the type). Integer types multiply with wrap-around by mul, which must
// then be a whole number, and divide with truncation toward zero, as NCCL
// does. Floating-point types compute in float64 and round once.
func Scale(buf []byte, t gccl.DataType, mul float64, div int) error {
	if err := checkArgs(buf, t, gccl.Sum); err != nil {
		return err
	}
	if div < 1 {
		return gccl.Errorf(gccl.InvalidArgument, "div", "divisor %d must be at least 1", div)
	}
	if math.IsNaN(mul) || !t.IsFloat() && (mul != math.Trunc(mul) || math.Abs(mul) >= 1<<63) {
		return gccl.Errorf(gccl.InvalidArgument, "mul", "multiplier %v is not a whole number for %v", mul, t)
	}
	return scale(buf, t, factor{f: mul, i: uint64(int64(mul))}, div)
}

// MulScalar multiplies every element of buf by scalar, one element of type
// t (its raw bytes): a rank's PreMulSum factor. Integers multiply in their
// type, wrapping modulo 2^bits (every 64-bit value, uint64 from 2^63
// included, never rounded through float64); floating-point types as Scale.
func MulScalar(buf []byte, t gccl.DataType, scalar []byte) error {
	if err := checkArgs(buf, t, gccl.Sum); err != nil {
		return err
	}
	if len(scalar) < t.Size() {
		return gccl.Errorf(gccl.InvalidArgument, "scalar", "scalar has %d bytes; want one %v", len(scalar), t)
	}
	f := factor{i: loadBits(scalar, 0, t.Size())}
	if t.IsFloat() {
		f.f = loadFloat(t, scalar, 0)
	}
	return scale(buf, t, f, 1)
}

// factor is a multiplier: f for floating-point types, the low bits of i
// for integer types.
type factor struct {
	f float64
	i uint64
}

// one reports whether multiplying a t by f changes nothing.
func (f factor) one(t gccl.DataType) bool {
	if t.IsFloat() {
		return f.f == 1
	}
	return f.i<<(64-8*t.Size()) == 1<<(64-8*t.Size())
}

// scale is Scale and MulScalar once the arguments are checked.
func scale(buf []byte, t gccl.DataType, mul factor, div int) error {
	if len(buf) == 0 || mul.one(t) && div == 1 {
		return nil
	}
	if isLow(t) {
		scaleLow(buf, t, mul.f, div)
		return nil
	}
	if !aligned(t.Size(), buf) {
		s := scratchPool.Get().(*scratch)
		defer scratchPool.Put(s)
		stage := asBytes(s.u[0][:])
		for lo := 0; lo < len(buf); lo += len(stage) {
			b := stage[:copy(stage, buf[lo:])]
			scaleNative(b, t, mul, div)
			copy(buf[lo:], b)
		}
		return nil
	}
	scaleNative(buf, t, mul, div)
	return nil
}

func scaleNative(b []byte, t gccl.DataType, mul factor, div int) {
	m := mul.i
	switch t {
	case gccl.Int8:
		scaleInt(view[int8](b), int8(m), div)
	case gccl.Uint8:
		scaleInt(view[uint8](b), uint8(m), div)
	case gccl.Int32:
		scaleInt(view[int32](b), int32(m), div)
	case gccl.Uint32:
		scaleInt(view[uint32](b), uint32(m), div)
	case gccl.Int64:
		scaleInt(view[int64](b), int64(m), div)
	case gccl.Uint64:
		scaleInt(view[uint64](b), m, div)
	case gccl.Float32:
		scaleFloat(view[float32](b), mul.f, div)
	case gccl.Float64:
		scaleFloat(view[float64](b), mul.f, div)
	}
}

// scaleInt multiplies (wrapping) then divides (truncating). A divisor that
// does not fit T (more ranks than an int8 holds) divides in int64, which
// holds every value of the types narrower than 64 bits, the only ones such
// a divisor can exceed.
func scaleInt[T integer](x []T, m T, div int) {
	if m != 1 {
		for i := range x {
			x[i] *= m
		}
	}
	if d := T(div); int(d) == div && d > 0 {
		if d != 1 {
			for i := range x {
				x[i] /= d
			}
		}
		return
	}
	for i := range x {
		x[i] = T(int64(x[i]) / int64(div))
	}
}

func scaleFloat[T float32 | float64](x []T, mul float64, div int) {
	d := float64(div)
	for i := range x {
		x[i] = T(float64(x[i]) * mul / d)
	}
}

func scaleLow(buf []byte, t gccl.DataType, mul float64, div int) {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	size, n := t.Size(), len(buf)/t.Size()
	for i := 0; i < n; i += blockElems {
		m := min(blockElems, n-i)
		f := s.f[0][:m]
		b := buf[i*size : (i+m)*size]
		decode(t, f, b)
		for j := range f {
			f[j] = float32(float64(f[j]) * mul / float64(div))
		}
		encode(t, b, f)
	}
}
