package harness

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/stretchr/testify/assert"
)

// TestPeriodicReference: the one-period reference of Input's data equals
// the full reduction, across period boundaries and for a partial last one.
func TestPeriodicReference(t *testing.T) {
	for _, tc := range []struct {
		t  gccl.DataType
		op gccl.RedOp
	}{{gccl.Float16, gccl.Sum}, {gccl.Int32, gccl.Max}, {gccl.BFloat16, gccl.Avg}, {gccl.Float32, gccl.Prod}} {
		in := Inputs(7, 3, tc.t, 3*tileElems+11)
		assert.Equal(t, reduce.Reference(in, tc.t, tc.op, 0), periodicReference(in, tc.t, tc.op, 0), "%v %v", tc.t, tc.op)
	}
}
