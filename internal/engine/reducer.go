package engine

import (
	"encoding/binary"
	"math"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/reduce"
)

// DefaultReducer is the host arithmetic used when Config.Reducer is nil:
// package internal/reduce, for every data type and operator.
var DefaultReducer Reducer = hostReducer{}

// hostReducer adapts internal/reduce to the Reducer interface.
type hostReducer struct{}

// Combine sets dst = a op b with reduce.Into3.
func (hostReducer) Combine(dst, a, b []byte, t gccl.DataType, op gccl.RedOp) error {
	return reduce.Into3(dst, a, b, t, op)
}

// Scale multiplies buf by the scalar, one element of type t (PreMulSum).
func (hostReducer) Scale(buf []byte, t gccl.DataType, scalar []byte) error {
	v, err := elemValue(scalar, t)
	if err != nil {
		return err
	}
	return reduce.Scale(buf, t, v, 1)
}

// DivN divides buf by n (Avg; truncating for integer types).
func (hostReducer) DivN(buf []byte, t gccl.DataType, n int) error {
	return reduce.Scale(buf, t, 1, n)
}

// elemValue reads one element of type t from b as a float64: exact for
// every float type and for integers up to 2^53 in magnitude (reduce.Scale
// rejects integer multipliers it cannot apply exactly).
func elemValue(b []byte, t gccl.DataType) (float64, error) {
	if len(b) < t.Size() || !t.Valid() {
		return 0, gccl.Errorf(gccl.InvalidArgument, "scalar", "scalar has %d bytes; want one %v", len(b), t)
	}
	switch t {
	case gccl.Int8:
		return float64(int8(b[0])), nil
	case gccl.Uint8:
		return float64(b[0]), nil
	case gccl.Int32:
		return float64(int32(binary.LittleEndian.Uint32(b))), nil
	case gccl.Uint32:
		return float64(binary.LittleEndian.Uint32(b)), nil
	case gccl.Int64:
		return float64(int64(binary.LittleEndian.Uint64(b))), nil
	case gccl.Uint64:
		return float64(binary.LittleEndian.Uint64(b)), nil
	case gccl.Float16:
		return float64(reduce.Float16ToFloat32(binary.LittleEndian.Uint16(b))), nil
	case gccl.BFloat16:
		return float64(reduce.BFloat16ToFloat32(binary.LittleEndian.Uint16(b))), nil
	case gccl.Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), nil
	case gccl.Float8E4M3:
		return float64(reduce.Float8E4M3ToFloat32(b[0])), nil
	case gccl.Float8E5M2:
		return float64(reduce.Float8E5M2ToFloat32(b[0])), nil
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
}
