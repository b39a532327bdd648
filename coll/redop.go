package coll

import (
	"fmt"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/commlink"
	"github.com/gccl/gccl/internal/engine"
)

// ScalarResidence says where a PreMulSum scalar lives, as NCCL's
// ncclScalarResidence_t.
type ScalarResidence int

// The residences.
const (
	// ScalarDevice: scalar points to device memory, read when each operation runs.
	ScalarDevice ScalarResidence = iota
	// ScalarHostImmediate: scalar points to host memory, copied at creation.
	ScalarHostImmediate
)

func (r ScalarResidence) String() string {
	switch r {
	case ScalarDevice:
		return "ScalarDevice"
	case ScalarHostImmediate:
		return "ScalarHostImmediate"
	}
	return fmt.Sprintf("ScalarResidence(%d)", int(r))
}

// residence is r as the engine names it.
func (r ScalarResidence) residence() (engine.Residence, error) {
	switch r {
	case ScalarDevice:
		return engine.ScalarDevice, nil
	case ScalarHostImmediate:
		return engine.ScalarHostImmed, nil
	}
	return 0, gccl.Errorf(gccl.InvalidArgument, "residence", "unknown scalar residence %d; use ScalarDevice or ScalarHostImmediate", int(r))
}

// CreatePreMulSum makes a reduction operator of c that multiplies every
// input by the scalar (one element of type t) before summing, as NCCL's
// ncclRedOpCreatePreMulSum. The operator is valid for operations of type t
// on c until DestroyRedOp.
func CreatePreMulSum(c *comm.Comm, scalar uintptr, t gccl.DataType, res ScalarResidence) (gccl.RedOp, error) {
	e, err := commlink.Engine(c)
	if err != nil {
		return 0, err
	}
	r, err := res.residence()
	if err != nil {
		return 0, err
	}
	return e.CreatePreMulSum(scalar, t, r)
}

// DestroyRedOp forgets an operator made by CreatePreMulSum on c.
func DestroyRedOp(c *comm.Comm, op gccl.RedOp) error {
	e, err := commlink.Engine(c)
	if err != nil {
		return err
	}
	return e.DestroyRedOp(op)
}
