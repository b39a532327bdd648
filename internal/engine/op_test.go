package engine_test

import (
	"math"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/stretchr/testify/assert"
)

// TestValidateCountBound: the largest count whose buffers' byte size
// (× nranks for the gathered side) fits an int passes the count check,
// one more fails it, for every element size and kind.
func TestValidateCountBound(t *testing.T) {
	const nranks = 3
	for _, dt := range []gccl.DataType{gccl.Int8, gccl.Float16, gccl.Float32, gccl.Int64} {
		for _, k := range []algo.Kind{algo.AllReduce, algo.Broadcast, algo.AllGather, algo.ReduceScatter} {
			per := 1
			if k == algo.AllGather || k == algo.ReduceScatter {
				per = nranks
			}
			limit := math.MaxInt / dt.Size() / per
			for _, count := range []int{limit, limit + 1} {
				if count < 0 { // int8 alone: any non-negative count fits
					continue
				}
				o := engine.Op{Kind: k, Send: 1 << 12, Recv: 1 << 12, Count: count, Type: dt, Op: gccl.Sum}
				if k == algo.AllGather { // in place: Send == Recv + rank*count*size (rank 0)
					o.Send = o.Recv
				}
				err := o.Validate(0, nranks, nil, nil)
				if count == limit {
					assert.NoError(t, err, "%v of %d %v", k, count, dt)
					continue
				}
				var ge *gccl.Error
				if assert.ErrorAs(t, err, &ge, "%v of %d %v", k, count, dt) {
					assert.Equal(t, "count", ge.Arg)
					assert.Contains(t, ge.Msg, "overflows the addressable size")
				}
			}
		}
	}
}
