package host

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/reduce"
)

// Reducer is the element-wise arithmetic the host backend needs
// (internal/reduce provides it; tests may pass their own).
type Reducer interface {
	// Combine sets dst = a op b element-wise for the built-in op Sum, Prod, Max or Min.
	Combine(dst, a, b []byte, t gccl.DataType, op gccl.RedOp) error
	// Scale multiplies every element of buf by scalar, one element of type t.
	Scale(buf []byte, t gccl.DataType, scalar []byte) error
	// DivN divides every element of buf by n (Avg: integer division for integer types).
	DivN(buf []byte, t gccl.DataType, n int) error
}

// DefaultReducer is the arithmetic used when Config.Reducer is nil:
// package internal/reduce, for every data type and operator.
var DefaultReducer Reducer = hostReducer{}

// hostReducer adapts internal/reduce to the Reducer interface.
type hostReducer struct{}

// Combine sets dst = a op b with reduce.Into3.
func (hostReducer) Combine(dst, a, b []byte, t gccl.DataType, op gccl.RedOp) error {
	return reduce.Into3(dst, a, b, t, op)
}

// Scale multiplies buf by the scalar, one element of type t (a rank's
// PreMulSum factor), with reduce.MulScalar: integers in their type.
func (hostReducer) Scale(buf []byte, t gccl.DataType, scalar []byte) error {
	return reduce.MulScalar(buf, t, scalar)
}

// DivN divides buf by n (Avg; truncating for integer types).
func (hostReducer) DivN(buf []byte, t gccl.DataType, n int) error {
	return reduce.Scale(buf, t, 1, n)
}
