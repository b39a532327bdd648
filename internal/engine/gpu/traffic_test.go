package gpu

import (
	"fmt"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/kernels"
	"github.com/stretchr/testify/assert"
)

// TestGPUTraffic checks the traffic model at 4 ranks and 1 MiB (float32,
// so count = 256 Ki) against the loads and stores of the kernels, counted
// by hand from kernels/*.cu; L is an LL slot (16 bytes per 8 of data).
func TestTrafficOf(t *testing.T) {
	const n, b, L = 4, 1 << 20, 2 << 20
	cases := []struct {
		path        string
		kind        algo.Kind
		rank        int // the root is rank 0
		inPlace     bool
		read, write int64
	}{
		{kernels.AllReduceOneShot, algo.AllReduce, 1, false, b + 3*L, 3*L + b},
		{kernels.AllReducePush, algo.AllReduce, 1, false, 5 * b, 4 * b},
		{kernels.AllReducePipelined, algo.AllReduce, 1, false, 3 * b, 3 * b},
		{kernels.AllReduceTwoShot, algo.AllReduce, 1, false, b, b},
		{kernels.ReduceScatterOneShot, algo.ReduceScatter, 1, false, 4*b + 3*L, 3*L + b},
		{kernels.ReduceScatterStaged, algo.ReduceScatter, 1, false, 7 * b, 4 * b},
		{kernels.ReduceScatter, algo.ReduceScatter, 1, true, 4 * b, b},
		{kernels.ReduceOneShot, algo.Reduce, 0, false, b + 3*L, b},
		{kernels.ReduceOneShot, algo.Reduce, 1, false, b, L},
		{kernels.ReduceStaged, algo.Reduce, 0, false, 3 * b, 2*b + b/4},
		{kernels.ReduceStaged, algo.Reduce, 1, false, 2 * b, b + b/4},
		{kernels.AllGatherOneShot, algo.AllGather, 1, false, b + 3*L, 3*L + 4*b},
		{kernels.AllGatherStaged, algo.AllGather, 1, false, 5 * b, 5 * b},
		{kernels.AllGatherStaged, algo.AllGather, 1, true, 4 * b, 4 * b},
		{kernels.AllGather, algo.AllGather, 1, false, b, 4 * b},
		{kernels.BroadcastOneShot, algo.Broadcast, 0, false, b, 3*L + b},
		{kernels.BroadcastOneShot, algo.Broadcast, 0, true, b, 3 * L},
		{kernels.BroadcastOneShot, algo.Broadcast, 1, false, L, b},
		{kernels.BroadcastStaged, algo.Broadcast, 0, false, 2*b + b/4, 2*b + 3*b/4},
		{kernels.BroadcastStaged, algo.Broadcast, 1, false, b + b/4, b + 3*b/4},
		{kernels.Broadcast, algo.Broadcast, 0, false, b + b/4, 2 * b},
		{kernels.Broadcast, algo.Broadcast, 1, false, b / 4, b},
		{kernels.P2P, algo.P2PSend, 1, false, b, b},
		{kernels.P2P, algo.P2PRecv, 1, false, b, b},
		{PathCopy, algo.P2PSend, 1, false, b, b},
		{PathCopy, algo.P2PRecv, 1, false, 0, 0},
		{PathCopy, algo.AllGather, 0, false, b, b},
		{PathNone, algo.AllReduce, 0, true, 0, 0},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%v/rank%d/inplace=%v", c.path, c.kind, c.rank, c.inPlace), func(t *testing.T) {
			tr, ok := TrafficOf(c.path, c.kind, b/4, gccl.Float32, n, c.rank, 0, c.inPlace)
			assert.True(t, ok)
			assert.Equal(t, Traffic{c.read, c.write}, tr)
		})
	}
	for _, bad := range []struct {
		path string
		kind algo.Kind
	}{{kernels.AllReducePipelined, algo.Broadcast}, {kernels.P2P, algo.AllReduce}, {"gccl_fill_u32", algo.AllReduce}, {"", algo.P2PSend}} {
		tr, ok := TrafficOf(bad.path, bad.kind, 100, gccl.Float32, n, 0, 0, false)
		assert.False(t, ok, "%s for %v", bad.path, bad.kind)
		assert.Zero(t, tr)
	}
}

// A single rank's one-shot all-reduce reads and writes the data once; the
// LL slot rounds up to 8-byte units.
func TestGPUTrafficSmall(t *testing.T) {
	tr, ok := TrafficOf(kernels.AllReduceOneShot, algo.AllReduce, 3, gccl.Int8, 1, 0, 0, false)
	assert.True(t, ok)
	assert.Equal(t, Traffic{3, 3}, tr)
	tr, _ = TrafficOf(kernels.AllReduceOneShot, algo.AllReduce, 3, gccl.Int8, 2, 0, 0, false)
	assert.Equal(t, Traffic{3 + 16, 16 + 3}, tr)
	assert.Equal(t, Traffic{3 + 16, 16 + 3}.Add(Traffic{1, 2}), Traffic{20, 21})
}

func TestKernelFamily(t *testing.T) {
	for _, k := range []string{kernels.AllReduceOneShot, kernels.AllReducePipelined, kernels.Reduce, kernels.ReduceOneShot,
		kernels.ReduceScatter, kernels.ReduceScatterStaged, kernels.AllReducePush} {
		for _, op := range []gccl.RedOp{gccl.Sum, gccl.Avg, gccl.NumBuiltinOps} {
			name, err := kernels.ReductionName(k, gccl.BFloat16, op)
			assert.NoError(t, err)
			assert.Equal(t, k, kernelFamily(name), name)
		}
	}
	for _, k := range []string{kernels.AllGather, kernels.BroadcastStaged, kernels.P2P, kernels.AllGatherOneShot, "x", "gccl_a_b_c"} {
		assert.Equal(t, k, kernelFamily(k))
	}
}
