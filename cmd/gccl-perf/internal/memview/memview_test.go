package memview

import (
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/clock"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/exchange"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/perftest"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/engine/gpu"
	"github.com/gccl/gccl/internal/perf"
	"github.com/gccl/gccl/kernels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Without a GPU or a path source there is no view.
func TestViewOff(t *testing.T) {
	set := clock.Settings{Iters: 2, Timeout: 10 * time.Second}
	d, s := perftest.GPU(t)
	m, err := New(set, nil, d, s, 0)
	require.NoError(t, err)
	require.Nil(t, m)
	require.NoError(t, m.Close())
	host, err := device.Open(device.Host, 0)
	require.NoError(t, err)
	m, err = New(set, perftest.Path(gpu.PathCopy), host, 0, 0)
	require.NoError(t, err)
	require.Nil(t, m)
}

// The reference copy's buffers grow to the largest rotation asked, and
// are kept for smaller ones; the rotation's footprint reaches twice the
// L2 (the fake GPU's 50 MiB) up to maxPairs pairs.
func TestCopyBuffersGrow(t *testing.T) {
	d, s := perftest.GPU(t)
	m, err := New(clock.Settings{Iters: 1, Timeout: 10 * time.Second}, perftest.Path(gpu.PathCopy), d, s, 0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, m.Close()) }()
	require.Equal(t, int64(50<<20), m.l2)
	for _, size := range []int64{1 << 10, 16 << 20, 4 << 10} {
		took, err := m.copyTime(size)
		require.NoError(t, err)
		assert.Positive(t, took, "size %d", size)
	}
	assert.Equal(t, int64(4*16<<20), m.span, "16 MiB copies rotate over 4 pairs: 128 MiB read and written, 2.5x the L2")
}

// The rotation: enough pairs for twice the L2, one for sizes past it, at
// most maxPairs.
func TestPairs(t *testing.T) {
	const l2 = 50 << 20
	for _, c := range []struct{ size, want int64 }{
		{1, maxPairs}, {1 << 20, 50}, {16 << 20, 4}, {25 << 20, 2}, {50 << 20, 1}, {1 << 30, 1}, {0, 1},
	} {
		assert.Equal(t, c.want, pairs(c.size, l2), "size %d", c.size)
	}
}

// traffic adds a Send/Recv pair's sides and knows no all-to-all.
func TestTrafficOfCalls(t *testing.T) {
	c := lib.Call{Op: perf.SendRecv, Count: 1 << 20, Type: gccl.Float32, Rank: 1, NRanks: 4}
	tr, ok := traffic(kernels.P2P, c, false)
	require.True(t, ok)
	require.Equal(t, gpu.Traffic{Read: 8 << 20, Write: 8 << 20}, tr)
	c.Op = perf.AllToAll
	_, ok = traffic(kernels.P2P, c, false)
	require.False(t, ok)
	c.Op = perf.AllReduce
	tr, ok = traffic(kernels.AllReducePipelined, c, false)
	require.True(t, ok)
	require.Equal(t, gpu.Traffic{Read: 12 << 20, Write: 12 << 20}, tr)
}

// Ranks on one GPU add up; across GPUs the busiest counts; rank 0's copy
// time is everyone's; a rank without a figure leaves the row without a view.
func TestRowAgrees(t *testing.T) {
	d, s := perftest.GPU(t)
	run := func(gpus []uint64, paths []string) (*perf.Memory, error) {
		n := len(gpus)
		x := exchange.NewLocal(n, 10*time.Second)
		views := make([]*View, n)
		for r := range n {
			var err error
			views[r], err = New(clock.Settings{Warmup: 5, Iters: 2, Timeout: 10 * time.Second}, perftest.Path(paths[r]), d, s, r)
			require.NoError(t, err)
			views[r].gpu = gpus[r]
			t.Cleanup(func() { assert.NoError(t, views[r].Close()) })
		}
		mems, errs := make([]*perf.Memory, n), make([]error, n)
		var wg sync.WaitGroup
		for r := range n {
			wg.Go(func() {
				c := lib.Call{Op: perf.Broadcast, Count: 1 << 18, Type: gccl.Float32, Root: 0, Rank: r, NRanks: n}
				mems[r], errs[r] = views[r].Row(x.Rank(r), c, 1<<20, time.Millisecond, false)
			})
		}
		wg.Wait()
		require.NoError(t, errs[1])
		return mems[0], errs[0]
	}
	const mib = 1 << 20
	staged := kernels.BroadcastStaged // root: 2.25+2.75 MiB, others 1.25+1.75 MiB at 4 ranks
	m, err := run([]uint64{7, 7, 7, 7}, []string{staged, staged, staged, staged})
	require.NoError(t, err)
	require.Equal(t, int64(5*mib+3*3*mib), m.Bytes)
	require.Positive(t, m.CopyTime)
	require.Equal(t, staged, m.Path)
	m, err = run([]uint64{1, 2, 3, 4}, []string{staged, staged, staged, staged})
	require.NoError(t, err)
	require.Equal(t, int64(5*mib), m.Bytes)
	m, err = run([]uint64{1, 1}, []string{staged, "gccl_fill_u32"})
	require.NoError(t, err)
	require.Nil(t, m)
}
