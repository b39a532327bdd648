package reduce

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/gccl/gccl"
)

// Reference returns the expected result of reducing inputs (one buffer per
// rank, equal lengths) with op, as NCCL defines it: integer sums and
// products wrap, Avg of integers is the wrapped sum divided with
// truncation, Avg of floats is the sum divided by the number of inputs, and
// a pre-multiplied sum (op >= gccl.NumBuiltinOps) is the sum of scalar*x
// with one scalar for every rank (a whole number for integer types; see
// PreMulSumReference for per-rank scalars and 64-bit integers).
// Floating-point types are computed in float64 and rounded once. It
// returns nil for invalid arguments, which Check then reports.
func Reference(inputs [][]byte, t gccl.DataType, op gccl.RedOp, scalar float64) []byte {
	if !t.Valid() {
		return nil
	}
	one := make([]byte, t.Size())
	if t.IsFloat() {
		storeFloat(t, one, 0, scalar)
	} else {
		storeBits(one, 0, t.Size(), uint64(int64(scalar)))
	}
	scalars := make([][]byte, len(inputs))
	for r := range scalars {
		scalars[r] = one
	}
	return reference(inputs, t, op, scalars)
}

// PreMulSumReference is NCCL's pre-multiplied sum Σ_r scalars[r]·inputs[r]:
// each rank's input times that rank's own scalar (one element of type t, its
// raw bytes), then summed. Integers multiply and add in their type, modulo
// 2^bits (no float64 in between); floats as Reference.
func PreMulSumReference(inputs [][]byte, t gccl.DataType, scalars [][]byte) []byte {
	return reference(inputs, t, gccl.NumBuiltinOps, scalars)
}

// reference is Reference with one scalar (raw bytes) per rank.
func reference(inputs [][]byte, t gccl.DataType, op gccl.RedOp, scalars [][]byte) []byte {
	if len(inputs) == 0 || !t.Valid() || op < 0 || len(inputs[0])%t.Size() != 0 || len(scalars) != len(inputs) {
		return nil
	}
	for r, in := range inputs {
		if len(in) != len(inputs[0]) || len(scalars[r]) < t.Size() {
			return nil
		}
	}
	out := make([]byte, len(inputs[0]))
	switch t {
	case gccl.Int8:
		refInt[int8](out, inputs, 1, op, scalars)
	case gccl.Uint8:
		refInt[uint8](out, inputs, 1, op, scalars)
	case gccl.Int32:
		refInt[int32](out, inputs, 4, op, scalars)
	case gccl.Uint32:
		refInt[uint32](out, inputs, 4, op, scalars)
	case gccl.Int64:
		refInt[int64](out, inputs, 8, op, scalars)
	case gccl.Uint64:
		refInt[uint64](out, inputs, 8, op, scalars)
	default:
		refFloat(out, inputs, t, op, scalars)
	}
	return out
}

func refInt[T integer](out []byte, inputs [][]byte, size int, op gccl.RedOp, scalars [][]byte) {
	s := make([]T, len(inputs))
	for r := range s {
		s[r] = T(loadBits(scalars[r], 0, size))
	}
	for i := range len(out) / size {
		var acc T
		for r, in := range inputs {
			acc = fold(acc, T(loadBits(in, i, size)), r, op, s[r])
		}
		if op == gccl.Avg {
			one := []T{acc}
			scaleInt(one, 1, len(inputs))
			acc = one[0]
		}
		storeBits(out, i, size, uint64(acc))
	}
}

func refFloat(out []byte, inputs [][]byte, t gccl.DataType, op gccl.RedOp, scalars [][]byte) {
	s := make([]float64, len(inputs))
	for r := range s {
		s[r] = loadFloat(t, scalars[r], 0)
	}
	for i := range len(out) / t.Size() {
		var acc float64
		for r, in := range inputs {
			acc = fold(acc, loadFloat(t, in, i), r, op, s[r])
		}
		if op == gccl.Avg {
			acc /= float64(len(inputs))
		}
		storeFloat(t, out, i, acc)
	}
}

// fold is rank r's step of a reference reduction: acc op x, where rank 0's
// x starts a built-in op and a pre-multiplied sum adds scalar*x (rank r's
// scalar) from zero.
// Max and Min propagate NaN.
func fold[T native](acc, x T, r int, op gccl.RedOp, scalar T) T {
	switch {
	case r == 0 && op < gccl.NumBuiltinOps:
		return x
	case op == gccl.Sum || op == gccl.Avg:
		return acc + x
	case op == gccl.Prod:
		return acc * x
	case op == gccl.Max:
		return maxOf(acc, x)
	case op == gccl.Min:
		return minOf(acc, x)
	}
	return acc + scalar*x // pre-multiplied sum
}

// Check compares a result with Reference's: exactly for integer types; for
// floating-point types within a relative error of (nranks+1) machine
// epsilons, which bounds the rounding of nranks-1 reductions of values of
// one sign (Fill's) in any order, a final scaling and the reference's own
// rounding. The error names the first element that differs and both values.
func Check(got, want []byte, t gccl.DataType, nranks int) error {
	if !t.Valid() {
		return gccl.Errorf(gccl.InvalidArgument, "datatype", "unknown data type %v", t)
	}
	if len(got) != len(want) || len(got)%t.Size() != 0 {
		return gccl.Errorf(gccl.InvalidArgument, "got", "result has %d bytes, reference %d (type %v)", len(got), len(want), t)
	}
	size := t.Size()
	for i := range len(got) / size {
		if t.IsFloat() {
			g, w := loadFloat(t, got, i), loadFloat(t, want, i)
			if g == w || math.IsNaN(g) && math.IsNaN(w) {
				continue
			}
			eps, tiny := precision(t)
			if math.Abs(g-w) <= eps*float64(max(nranks, 1)+1)*max(math.Abs(w), tiny) {
				continue
			}
			return gccl.Errorf(gccl.InternalError, "result", "element %d of %v: got %v, want %v", i, t, g, w)
		}
		if g, w := loadBits(got, i, size), loadBits(want, i, size); g != w {
			return gccl.Errorf(gccl.InternalError, "result", "element %d of %v: got %s, want %s",
				i, t, formatInt(t, g), formatInt(t, w))
		}
	}
	return nil
}

// Fill writes random values that every operator reduces without overflow
// or loss for any number of ranks up to 64: floating-point values in
// [0.75, 1.5) (positive, so sums do not cancel, and products of many stay
// in range); integers odd and across the whole range (overflow wraps
// exactly, and odd products never vanish).
func Fill(buf []byte, t gccl.DataType, rng *rand.Rand) {
	if !t.Valid() {
		return
	}
	for i := range len(buf) / t.Size() {
		if t.IsFloat() {
			storeFloat(t, buf, i, 0.75+0.75*rng.Float64())
		} else {
			storeBits(buf, i, t.Size(), rng.Uint64()|1)
		}
	}
}

// precision returns the machine epsilon and the smallest normal of t.
func precision(t gccl.DataType) (eps, tiny float64) {
	switch t {
	case gccl.Float16:
		return 0x1p-10, 0x1p-14
	case gccl.BFloat16:
		return 0x1p-7, 0x1p-126
	case gccl.Float8E4M3:
		return 0x1p-3, 0x1p-6
	case gccl.Float8E5M2:
		return 0x1p-2, 0x1p-14
	case gccl.Float32:
		return 0x1p-23, 0x1p-126
	}
	return 0x1p-52, 0x1p-1022
}

func loadBits(b []byte, i, size int) uint64 {
	switch size {
	case 1:
		return uint64(b[i])
	case 2:
		return uint64(binary.NativeEndian.Uint16(b[2*i:]))
	case 4:
		return uint64(binary.NativeEndian.Uint32(b[4*i:]))
	}
	return binary.NativeEndian.Uint64(b[8*i:])
}

func storeBits(b []byte, i, size int, v uint64) {
	switch size {
	case 1:
		b[i] = byte(v)
	case 2:
		binary.NativeEndian.PutUint16(b[2*i:], uint16(v))
	case 4:
		binary.NativeEndian.PutUint32(b[4*i:], uint32(v))
	default:
		binary.NativeEndian.PutUint64(b[8*i:], v)
	}
}

func lowFormat(t gccl.DataType) *format {
	switch t {
	case gccl.Float16:
		return f16Format
	case gccl.BFloat16:
		return bf16Format
	case gccl.Float8E4M3:
		return e4m3Format
	}
	return e5m2Format
}

// loadFloat returns element i of a floating-point buffer.
func loadFloat(t gccl.DataType, b []byte, i int) float64 {
	bits := loadBits(b, i, t.Size())
	switch t {
	case gccl.Float32:
		return float64(math.Float32frombits(uint32(bits)))
	case gccl.Float64:
		return math.Float64frombits(bits)
	}
	return lowFormat(t).toFloat64(uint32(bits))
}

// storeFloat rounds v to t (once) and stores it as element i.
func storeFloat(t gccl.DataType, b []byte, i int, v float64) {
	var bits uint64
	switch t {
	case gccl.Float32:
		bits = uint64(math.Float32bits(float32(v)))
	case gccl.Float64:
		bits = math.Float64bits(v)
	default:
		bits = uint64(lowFormat(t).fromFloat64(v))
	}
	storeBits(b, i, t.Size(), bits)
}

func formatInt(t gccl.DataType, bits uint64) string {
	switch t {
	case gccl.Int8:
		return strconv.FormatInt(int64(int8(bits)), 10)
	case gccl.Int32:
		return strconv.FormatInt(int64(int32(bits)), 10)
	case gccl.Int64:
		return strconv.FormatInt(int64(bits), 10)
	}
	return strconv.FormatUint(bits, 10)
}
