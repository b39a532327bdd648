package reduce

import (
	"encoding/binary"
	"math"

	"github.com/gccl/gccl"
)

// Encode returns v as one element of type t (integers truncated, floats
// rounded to nearest even): a PreMulSum scalar.
func Encode(t gccl.DataType, v float64) []byte {
	b := make([]byte, t.Size())
	switch t {
	case gccl.Int8, gccl.Uint8:
		b[0] = byte(int64(v))
	case gccl.Int32, gccl.Uint32:
		binary.LittleEndian.PutUint32(b, uint32(int64(v)))
	case gccl.Int64, gccl.Uint64:
		binary.LittleEndian.PutUint64(b, uint64(int64(v)))
	case gccl.Float16:
		binary.LittleEndian.PutUint16(b, Float16FromFloat32(float32(v)))
	case gccl.BFloat16:
		binary.LittleEndian.PutUint16(b, BFloat16FromFloat32(float32(v)))
	case gccl.Float32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	case gccl.Float64:
		binary.LittleEndian.PutUint64(b, math.Float64bits(v))
	case gccl.Float8E4M3:
		b[0] = Float8E4M3FromFloat32(float32(v))
	case gccl.Float8E5M2:
		b[0] = Float8E5M2FromFloat32(float32(v))
	}
	return b
}
