package kernels

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReductionNameTable: the table lookup gives exactly what building the
// name gives, errors included, for every kernel (and non-kernels), type
// (and invalid ones) and operator (negative, built-in, premulsum ids); and
// a valid lookup does not allocate.
func TestReductionNameTable(t *testing.T) {
	kinds := append(reductionKernels[:], "allgather", "", "gccl_reduce")
	types := append(gccl.DataTypes(), -1, gccl.DataType(len(gccl.DataTypes())), 99)
	valid := 0
	for _, k := range kinds {
		for _, dt := range types {
			for op := gccl.RedOp(-2); op < gccl.NumBuiltinOps+5; op++ {
				got, gotErr := ReductionName(k, dt, op)
				want, wantErr := reductionName(k, dt, op)
				require.Equal(t, want, got, "%q %v %v", k, dt, op)
				if wantErr != nil {
					require.Error(t, gotErr)
					assert.Equal(t, wantErr.Error(), gotErr.Error())
					continue
				}
				require.NoError(t, gotErr)
				require.Contains(t, got, "gccl_"+k+"_")
				valid++
			}
		}
	}
	assert.Equal(t, len(reductionKernels)*len(gccl.DataTypes())*(int(gccl.NumBuiltinOps)+5), valid)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ReductionName(AllReducePipelined, gccl.BFloat16, gccl.NumBuiltinOps+3); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocs)
}
