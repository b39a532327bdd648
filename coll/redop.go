package coll

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/engine"
)

// ScalarResidence says where a PreMulSum scalar lives, as NCCL's
// ncclScalarResidence_t.
type ScalarResidence = engine.Residence

// The residences.
const (
	// ScalarDevice: scalar points to device memory, read when each operation runs.
	ScalarDevice = engine.ScalarDevice
	// ScalarHostImmediate: scalar points to host memory, copied at creation.
	ScalarHostImmediate = engine.ScalarHostImmed
)

// CreatePreMulSum makes a reduction operator of c that multiplies every
// input by the scalar (one element of type t) before summing, as NCCL's
// ncclRedOpCreatePreMulSum. The operator is valid for operations of type t
// on c until DestroyRedOp.
func CreatePreMulSum(c Comm, scalar uintptr, t gccl.DataType, res ScalarResidence) (gccl.RedOp, error) {
	e, err := EngineOf(c)
	if err != nil {
		return 0, err
	}
	return e.CreatePreMulSum(scalar, t, res)
}

// DestroyRedOp forgets an operator made by CreatePreMulSum on c.
func DestroyRedOp(c Comm, op gccl.RedOp) error {
	e, err := EngineOf(c)
	if err != nil {
		return err
	}
	return e.DestroyRedOp(op)
}
